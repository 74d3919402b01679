"""The container image: the Dockerfile, checked without a Docker engine by a small parser (stages, user,
entry point, what each stage copies and installs), and requirements-image.lock, the hashed lock it installs
from."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.fakes.dockerfile import ROOT, exec_form, final_user, logical_lines, parse_dockerfile, stages

IMAGE_LOCK = "requirements-image.lock"
# What `pip install --no-build-isolation .` builds proxybot with: pyproject.toml's [build-system] requires.
BUILD_BACKEND = {"setuptools", "wheel"}


def test_parser_understands_continuations_and_stages() -> None:
    parsed = parse_dockerfile("ARG B=x:1\n# c\nFROM ${B} AS one\nRUN a \\\n  && b\nFROM one\nUSER 7\n")
    assert [(s.base, s.name) for s in parsed] == [("x:1", "one"), ("one", None)]
    assert parsed[0].all("RUN") == ["a  && b"]
    assert parsed[1].all("USER") == ["7"]


def test_dockerfile_is_multi_stage_and_slim() -> None:
    parsed = stages()
    assert len(parsed) >= 2
    build_names = {stage.name for stage in parsed[:-1]}
    final = parsed[-1]
    assert "slim" in final.base
    assert final.base not in build_names
    copied_from = {m.group(1) for c in final.all("COPY") if (m := re.search(r"--from=(\S+)", c))}
    assert copied_from
    assert copied_from <= build_names


def test_final_stage_runs_as_a_numeric_non_root_user() -> None:
    uid, gid = final_user()
    assert uid.isdigit()
    assert int(uid) != 0
    assert not gid or (gid.isdigit() and int(gid) != 0)


BUILD_TOOLS = {"gcc", "g++", "cc", "clang", "make", "build-essential", "python3-dev", "cargo", "rustc"}


def test_final_stage_installs_no_build_tools() -> None:
    for run in stages()[-1].all("RUN"):
        words = set(shlex.split(run))
        assert not words & BUILD_TOOLS, run
        assert "pip" not in run, f"the final stage installs packages: {run}"
        assert "apt-get" not in run, f"the final stage installs packages: {run}"


def test_healthcheck_asks_healthz() -> None:
    (check,) = stages()[-1].all("HEALTHCHECK")
    command = check[check.index("CMD") + len("CMD") :].strip()
    assert "/healthz" in " ".join(exec_form(command))


def test_entrypoint_runs_proxybot_serve_from_the_package() -> None:
    final = stages()[-1]
    argv = exec_form(final.all("ENTRYPOINT")[-1]) + exec_form(final.all("CMD")[-1])
    assert posixpath.basename(argv[0]) == "proxybot"
    assert argv[1] == "serve"
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module, _, function = scripts["proxybot"].partition(":")
    assert callable(getattr(importlib.import_module(module), function))
    (installed,) = importlib.metadata.entry_points(group="console_scripts", name="proxybot")
    assert installed.value == scripts["proxybot"]


def test_build_copies_every_package_and_what_the_metadata_needs() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    sources = {src for copy in stages()[0].all("COPY") for src in shlex.split(copy)[:-1]}
    assert {*packages, project["project"]["readme"], "pyproject.toml"} <= {s.strip("./") for s in sources}
    ignored = {p for p in (ROOT / ".dockerignore").read_text().splitlines() if p and not p.startswith("#")}
    for source in sources:
        assert (ROOT / source).exists(), source
        assert source.strip("./") not in ignored, f"{source} is excluded by .dockerignore"


BASE = "python:3.11-slim-bookworm"
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}")


def global_args() -> dict[str, str]:
    """The ARGs before the first FROM, with their defaults."""
    found: dict[str, str] = {}
    for line in logical_lines((ROOT / "Dockerfile").read_text()):
        keyword, _, rest = line.partition(" ")
        if keyword.upper() == "FROM":
            return found
        if keyword.upper() == "ARG":
            name, _, default = rest.strip().partition("=")
            found[name] = default
    return found


def test_both_stages_use_one_base_image_that_a_digest_pins() -> None:
    digest = global_args()["PYTHON_DIGEST"]
    assert DIGEST.fullmatch(digest), f"PYTHON_DIGEST is not @sha256:<64 hex>: {digest!r}"
    assert {stage.base for stage in stages()} == {BASE + digest}
    pin = "@sha256:" + "ab" * 32
    pinned = parse_dockerfile((ROOT / "Dockerfile").read_text(), {"PYTHON_DIGEST": pin})
    assert {stage.base for stage in pinned} == {BASE + pin}


def test_pin_script_writes_the_digest_the_registry_answers(tmp_path: Path) -> None:
    """scripts/pin-base-image.sh against a stand-in `docker` that answers as buildx's imagetools does."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "pin-base-image.sh", tmp_path / "scripts")
    shutil.copy(ROOT / "Dockerfile", tmp_path)
    fresh = "sha256:" + "cd" * 32
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(f'#!/bin/sh\n[ "$2" = version ] && exit 0\necho \'"{fresh}"\'\n')
    docker.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    script = tmp_path / "scripts" / "pin-base-image.sh"
    done = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert f"ARG PYTHON_DIGEST=@{fresh}\n" in (tmp_path / "Dockerfile").read_text()
    docker.write_text('#!/bin/sh\n[ "$2" = version ] && exit 0\necho null\n')
    refused = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=30)
    assert refused.returncode == 1
    assert "answered no digest" in refused.stderr
    assert f"ARG PYTHON_DIGEST=@{fresh}\n" in (tmp_path / "Dockerfile").read_text()


def runtime_closure() -> set[str]:
    """Every distribution `pip install .` installs: the dependencies and theirs, with the extras asked for."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    todo = [Requirement(text) for text in project["dependencies"]]
    seen: set[str] = set()
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in seen:
            continue
        seen.add(name)
        extras = requirement.extras or {""}
        for text in importlib.metadata.distribution(requirement.name).requires or []:
            needed = Requirement(text)
            if needed.marker is None or any(needed.marker.evaluate({"extra": e}) for e in extras):
                todo.append(needed)
    return seen


def image_lock() -> dict[str, tuple[str, list[str]]]:
    """requirements-image.lock: name -> (version, its sha256 hashes). Markers (`; implementation_name !=
    'pypy'`) are pip's to judge and ignored here: CPython installs every line."""
    entries: dict[str, tuple[str, list[str]]] = {}
    for line in logical_lines((ROOT / IMAGE_LOCK).read_text()):
        text, *options = (part.strip() for part in line.split(" --"))
        requirement = Requirement(text)
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"not pinned to one version: {text}"
        assert all(o.startswith("hash=sha256:") for o in options), (
            f"only --hash=sha256 options expected: {line}"
        )
        entries[canonicalize_name(requirement.name)] = (spec.version, [o.split(":", 1)[1] for o in options])
    return entries


def installs() -> list[list[str]]:
    """Each `pip install` command of the build stage, a RUN's `&&`-joined commands taken apart."""
    commands = [cmd for run in stages()[0].all("RUN") for cmd in run.split("&&")]
    return [shlex.split(cmd) for cmd in commands if "pip install" in cmd]


def test_dependencies_come_only_from_the_hashed_lock_as_wheels() -> None:
    build = stages()[0]
    assert any(IMAGE_LOCK in shlex.split(copy) for copy in build.all("COPY"))
    deps = [words for words in installs() if IMAGE_LOCK in words]
    assert len(deps) == 1, installs()
    (words,) = deps
    assert words[words.index(IMAGE_LOCK) - 1] == "-r"
    assert {"--require-hashes", "--only-binary=:all:"} <= set(words)


def test_proxybot_itself_is_built_from_the_copied_source_with_nothing_fetched() -> None:
    others = [words for words in installs() if IMAGE_LOCK not in words]
    assert others
    for words in others:
        targets = [w for w in words[words.index("install") + 1 :] if not w.startswith("-")]
        assert targets == ["."], f"installs {targets}: extras or requirement files would add packages"
        assert {"--no-deps", "--no-build-isolation"} <= set(words), words


def test_the_lock_pins_every_file_by_hash() -> None:
    for name, (_, hashes) in image_lock().items():
        assert hashes, f"{name} has no --hash"
        assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes), name


def test_the_lock_is_the_runtime_closure_and_the_build_backend_only() -> None:
    locked = set(image_lock())
    closure = runtime_closure()
    assert closure <= locked, f"the image would lack: {sorted(closure - locked)}"
    extra = locked - closure - BUILD_BACKEND
    assert not extra, f"the image lock names what proxybot does not need: {sorted(extra)}"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    backend = {canonicalize_name(Requirement(r).name) for r in project["build-system"]["requires"]}
    assert backend == BUILD_BACKEND
    dev = {canonicalize_name(Requirement(t).name) for t in project["project"]["optional-dependencies"]["dev"]}
    assert not locked & dev, f"dev-only packages reach the image: {sorted(locked & dev)}"
    # trustme is a runtime dependency only for `demo` and `sim`; the Dockerfile says why it stays.
    assert "trustme" in closure
    assert "trustme" in (ROOT / "Dockerfile").read_text()


def test_the_image_gets_the_versions_the_tests_ran_with() -> None:
    """requirements.lock pins the test venv (scripts/venv.sh); the image lock must agree on every package
    both name, and the venv itself must run those versions."""
    tested: dict[str, str] = {}
    for line in (ROOT / "requirements.lock").read_text().split():
        name, _, version = line.partition("==")
        tested[canonicalize_name(name)] = version
    for name, (version, _) in image_lock().items():
        if name in BUILD_BACKEND:
            continue
        assert tested.get(name) == version, f"{name}: image {version}, tests {tested.get(name)}"
        assert importlib.metadata.version(name) == version, name
