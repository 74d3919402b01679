"""Load the YAML config into `Settings`, collecting every problem as `location: message`.

Order: read the file, parse YAML (duplicate keys refused), substitute `${VAR}` / `${VAR:-default}` in
string values (`$${` is a literal `${`), apply `PROXYBOT_*` secret overrides, validate the models, then
apply the rules of the purpose: `serve` refuses placeholder secrets and missing files that `check` only
warns about and `demo` ignores. Substitution runs on parsed values, not on the YAML text, so a variable's
value can never change the document's structure.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import yaml
from pydantic import BaseModel, SecretStr, ValidationError

from bot.errors import ConfigError
from config import validation
from config.fields import Loc, LocatedProblems
from config.settings import Settings

Purpose = Literal["serve", "demo", "check"]
DEFAULT_PATH = Path("config/proxybot.yaml")
CONFIG_ENV = "PROXYBOT_CONFIG"

# Every secret can come from the environment; the variable wins over the file.
SECRET_OVERRIDES: Mapping[str, tuple[str, ...]] = {
    "PROXYBOT_SLACK_BOT_TOKEN": ("slack", "bot_token"),
    "PROXYBOT_SLACK_SIGNING_SECRET": ("slack", "signing_secret"),
    "PROXYBOT_SLACK_APP_TOKEN": ("slack", "app_token"),
    "PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN": ("alertmanager", "webhook_token"),
    "PROXYBOT_ALERTMANAGER_WEBHOOK_PASSWORD": ("alertmanager", "webhook_password"),
    "PROXYBOT_STORE_URL": ("store", "url"),
}

_REFERENCE = re.compile(
    r"\$\$\{"  # escaped: a literal "${"
    r"|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<has_default>:-(?P<default>[^}]*))?\}"
    r"|\$\{"  # anything else after "${" is a mistake
)


@dataclass(frozen=True)
class LoadedConfig:
    """Validated settings plus what check-config reports about them."""

    settings: Settings
    path: Path | None
    warnings: tuple[str, ...] = ()
    env_overrides: tuple[str, ...] = ()


def config_path(path: Path | None, env: Mapping[str, str]) -> Path:
    """The file to load: the explicit path, else $PROXYBOT_CONFIG, else config/proxybot.yaml."""
    if path is not None:
        return path
    from_env = env.get(CONFIG_ENV, "").strip()
    return Path(from_env) if from_env else DEFAULT_PATH


def load_settings(
    path: Path | None = None, *, env: Mapping[str, str] | None = None, purpose: Purpose = "check"
) -> Settings:
    """Load and validate the config file; raise ConfigError listing every problem."""
    return load_config(path, env=env, purpose=purpose).settings


def load_config(
    path: Path | None = None, *, env: Mapping[str, str] | None = None, purpose: Purpose = "check"
) -> LoadedConfig:
    """Like load_settings, also returning the file used, warnings and which env overrides applied."""
    environ = os.environ if env is None else env
    chosen = config_path(path, environ)
    text = _read(chosen)
    return parse_config(text, base_dir=chosen.absolute().parent, env=environ, purpose=purpose, path=chosen)


def parse_config(
    text: str,
    *,
    base_dir: Path,
    env: Mapping[str, str],
    purpose: Purpose = "check",
    path: Path | None = None,
) -> LoadedConfig:
    """Validate config text as if it were a file in `base_dir` (used for files and embedded configs)."""
    source = str(path) if path is not None else "<config>"
    data = _parse_yaml(text, source)
    overrides = {name: env[name] for name in SECRET_OVERRIDES if env.get(name, "").strip()}
    overridden: set[Loc] = {SECRET_OVERRIDES[name] for name in overrides}
    problems: list[str] = []
    data = _substitute(data, (), env, overridden, problems)
    for name, value in overrides.items():
        _set_in(data, SECRET_OVERRIDES[name], value)
    try:
        settings = Settings.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as exc:
        raise ConfigError(problems + problems_from_validation_error(exc)) from None
    if problems:
        raise ConfigError(problems)
    errors, warnings = _purpose_problems(settings, purpose)
    if errors:
        raise ConfigError(errors)
    return LoadedConfig(settings, path, tuple(warnings), tuple(sorted(overrides)))


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError([f"{path}: no such file (pass --config or set {CONFIG_ENV})"]) from None
    except UnicodeDecodeError:
        raise ConfigError([f"{path}: not UTF-8 text"]) from None
    except OSError as exc:
        raise ConfigError([f"{path}: cannot read: {exc.strerror or exc}"]) from None


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key given twice in one mapping (PyYAML silently keeps the last)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Hashable] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, Hashable) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice in this mapping", key_node.start_mark
            )
        if isinstance(key, Hashable):
            seen.add(key)
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _parse_yaml(text: str, source: str) -> dict[str, Any]:
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - _StrictLoader is a SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source} line {mark.line + 1} column {mark.column + 1}" if mark else source
        detail = " ".join(part for part in (exc.context, exc.problem) if part)
        raise ConfigError([f"{where}: YAML syntax error: {detail}"]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([f"{source}: YAML error: {exc}"]) from None
    if data is None:
        raise ConfigError([f"{source}: the file is empty; at least `clusters` is required"])
    if not isinstance(data, dict):
        raise ConfigError([f"{source}: the top level must be a mapping of sections (slack, clusters, ...)"])
    return data


def _substitute(node: Any, loc: Loc, env: Mapping[str, str], skip: set[Loc], problems: list[str]) -> Any:
    if loc in skip:
        return node
    if isinstance(node, dict):
        return {key: _substitute(value, (*loc, key), env, skip, problems) for key, value in node.items()}
    if isinstance(node, list):
        return [_substitute(value, (*loc, index), env, skip, problems) for index, value in enumerate(node)]
    if isinstance(node, str) and "$" in node:
        return _expand(node, loc, env, problems)
    return node


def _expand(text: str, loc: Loc, env: Mapping[str, str], problems: list[str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if match.group(0) == "$${":
            return "${"
        if name is None:
            hint = "use ${NAME}, ${NAME:-default}, or $${ for a literal ${"
            problems.append(f"{format_loc(loc)}: malformed variable reference: {hint}")
        elif name in env:
            return env[name]
        elif match.group("has_default"):
            return match.group("default")
        else:
            problems.append(f"{format_loc(loc)}: environment variable {name} is not set")
        return ""

    return _REFERENCE.sub(replace, text)


def _set_in(data: dict[str, Any], path: tuple[str, ...], value: str) -> None:
    node = data
    for key in path[:-1]:
        child = node.setdefault(key, {})
        if not isinstance(child, dict):
            return  # the section itself is malformed: validation reports that
        node = child
    node[path[-1]] = value


def secret_fields(model: BaseModel, loc: Loc = ()) -> Iterator[tuple[Loc, SecretStr | None]]:
    """Every SecretStr field of a settings tree (set or not), with its location."""
    for name in type(model).model_fields:
        value = getattr(model, name)
        annotation = type(model).model_fields[name].annotation
        if isinstance(value, SecretStr) or (value is None and _mentions(annotation, SecretStr)):
            yield (*loc, name), value
        elif isinstance(value, BaseModel):
            yield from secret_fields(value, (*loc, name))
        elif isinstance(value, tuple):
            for index, item in enumerate(value):
                if isinstance(item, BaseModel):
                    yield from secret_fields(item, (*loc, name, index))


def _env_hint(loc: Loc) -> str:
    names = [name for name, path in SECRET_OVERRIDES.items() if path == loc]
    return f" here or in {names[0]}" if names else ""


def _purpose_problems(settings: Settings, purpose: Purpose) -> tuple[list[str], list[str]]:
    """(errors, warnings) for loading with this purpose."""
    if purpose == "demo":
        return [], []
    found = [*_secret_problems(settings), *_kubeconfig_problems(settings)]
    if purpose == "serve":
        return [problem for problem, _ in found], []
    errors = [problem for problem, fatal_for_check in found if fatal_for_check]
    warnings = [f"{problem} (`serve` refuses this)" for problem, fatal in found if not fatal]
    return errors, warnings


def _secret_problems(settings: Settings) -> Iterator[tuple[str, bool]]:
    slack = settings.slack
    required = {("slack", "bot_token")}
    if slack.app_token is None:
        required.add(("slack", "signing_secret"))  # HTTP mode verifies Slack's request signatures
    for loc, secret in secret_fields(settings):
        if secret is None:
            if loc in required:
                yield f"{format_loc(loc)}: required to serve; set it{_env_hint(loc)}", False
        elif validation.is_placeholder_secret(secret.get_secret_value()):
            yield f"{format_loc(loc)}: still a placeholder; put the real secret{_env_hint(loc)}", False


def _kubeconfig_problems(settings: Settings) -> Iterator[tuple[str, bool]]:
    for index, cluster in enumerate(settings.clusters):
        yield from _kubeconfig_problem(("clusters", index), cluster.kubeconfig, cluster.context)
        for t_index, target in enumerate(cluster.targets):
            if target.direct is not None:
                loc = ("clusters", index, "targets", t_index, "direct")
                yield from _kubeconfig_problem(loc, target.direct.kubeconfig, target.direct.context)


def _kubeconfig_problem(loc: Loc, path: Path, context: str | None) -> Iterator[tuple[str, bool]]:
    """A missing file only warns for check (it may be mounted at deploy time); a wrong one is an error."""
    where = format_loc((*loc, "kubeconfig"))
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        yield f"{where}: {path} does not exist", False
        return
    except (OSError, UnicodeDecodeError) as exc:
        yield f"{where}: {path} cannot be read: {exc}", True
        return
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        yield f"{where}: {path} is not valid YAML", True
        return
    contexts = document.get("contexts") if isinstance(document, dict) else None
    names = {entry.get("name") for entry in contexts or [] if isinstance(entry, dict)}
    if context is not None and context not in names:
        known = ", ".join(sorted(str(name) for name in names)) or "none"
        yield f"{format_loc((*loc, 'context'))}: {context!r} is not a context in {path} (has: {known})", True


def _mentions(annotation: Any, kind: type) -> bool:
    return annotation is kind or any(_mentions(arg, kind) for arg in get_args(annotation))


def format_loc(loc: Loc) -> str:
    """`("clusters", 1, "targets", 0, "name")` -> `clusters[1].targets[0].name`."""
    text = ""
    for part in loc:
        if part == "[key]":
            continue  # pydantic's marker for "the key itself", which the message then names
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            text += f".{part}" if text else part
        else:
            text += f"[{part!r}]"
    return text or "(top level)"


def problems_from_validation_error(error: ValidationError) -> list[str]:
    """Pydantic's errors as `location: message` lines; never includes the offending input."""
    details = error.errors(include_url=False, include_input=False)
    locs = [tuple(detail["loc"]) for detail in details]
    problems: list[str] = []
    for detail, loc in zip(details, locs, strict=True):
        if detail["type"] == "too_short" and any(other[: len(loc)] == loc != other for other in locs):
            continue  # pydantic counts only valid items: the items' own errors already say it all
        cause = (detail.get("ctx") or {}).get("error")
        if isinstance(cause, LocatedProblems):
            problems += [f"{format_loc((*loc, *sub))}: {message}" for sub, message in cause.problems]
        else:
            problems.append(f"{format_loc(loc)}: {_message(detail['type'], detail['msg'], loc)}")
    return problems


_MESSAGES = {
    "missing": "required key is missing",
    "string_type": "expected a text value (quote it in YAML)",
    "model_type": "expected a mapping of keys to values",
    "model_attributes_type": "expected a mapping of keys to values",
    "dict_type": "expected a mapping of keys to values",
    "tuple_type": "expected a list",
    "list_type": "expected a list",
}


def _message(kind: str, message: str, loc: Loc) -> str:
    if kind == "extra_forbidden":
        return _unknown_key(loc)
    if kind == "too_short":
        return "must not be empty"
    return _MESSAGES.get(kind, message.removeprefix("Value error, "))


def _unknown_key(loc: Loc) -> str:
    model = _model_at(loc[:-1])
    if model is None:
        return "unknown key"
    allowed = list(model.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
    if close:
        return f"unknown key; did you mean {close[0]!r}?"
    return f"unknown key (allowed here: {', '.join(allowed)})"


def _model_at(loc: Loc) -> type[BaseModel] | None:
    model: type[BaseModel] | None = Settings
    for part in loc:
        if model is None or isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        model = _find_model(field.annotation) if field is not None else None
    return model


def _find_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((found for arg in get_args(annotation) if (found := _find_model(arg))), None)
