"""Load the YAML config into `Settings`, collecting every problem as `location: message`.

Order: read the file, parse YAML (duplicate keys refused, and `channel: #name`, a comment, caught),
substitute `${VAR}` / `${VAR:-default}` in string values (`$${` is a literal `${`), apply `PROXYBOT_*` secret
overrides, validate the models, then apply the rules of the purpose (`config/serve_rules.py`): `serve`
refuses placeholder secrets, unauthenticated webhooks and missing files that `check` only warns about and
`demo` ignores. `PROXYBOT_*` variables that mean nothing are warned about (`config/environment.py`).
Substitution runs on parsed values, not on the YAML text, so a variable's value can never change the
document's structure.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import yaml
from pydantic import BaseModel, ValidationError

from config.environment import CONFIG_ENV, SECRET_OVERRIDES, overrides, unknown_variables
from config.errors import ConfigError
from config.fields import Loc, LocatedProblems, format_loc
from config.serve_rules import Purpose, purpose_problems
from config.settings import Settings

DEFAULT_PATH = Path("config/proxybot.yaml")
# Keys whose value is a Slack channel: unquoted, `channel: #ops` is a YAML comment, so no channel at all.
CHANNEL_KEYS = frozenset({"channel", "default_channel"})

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


def load_config(
    path: Path | None = None, *, env: Mapping[str, str] | None = None, purpose: Purpose = "check"
) -> LoadedConfig:
    """Load and validate the config file: its settings, the file used, warnings and which env overrides
    applied; raise ConfigError listing every problem."""
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
    data, problems = _parse_yaml(text, source)
    problems += _secrets_in_the_file(data)
    overridden = dict(overrides(env))
    data = _substitute(data, (), env, {SECRET_OVERRIDES[name] for name in overridden}, problems)
    for name, value in overridden.items():
        _set_in(data, SECRET_OVERRIDES[name], value)
    try:
        settings = Settings.model_validate(data, context={"base_dir": base_dir})
    except ValidationError as exc:
        raise ConfigError(problems + problems_from_validation_error(exc)) from None
    if problems:
        raise ConfigError(problems)
    errors, warnings = purpose_problems(settings, purpose)
    if errors:
        raise ConfigError(errors)
    if purpose != "demo":
        warnings += unknown_variables(env)
    return LoadedConfig(settings, path, tuple(warnings), tuple(sorted(overridden)))


# Secrets that only come from the environment or a file, never the config file (it is read by many).
_NEVER_IN_THE_FILE = {("platform", "access_key"): "PROXYBOT_PLATFORM_ACCESS_KEY or platform.access_key_file"}


def _secrets_in_the_file(data: Mapping[str, Any]) -> list[str]:
    problems = []
    for (section, key), instead in _NEVER_IN_THE_FILE.items():
        part = data.get(section)
        if isinstance(part, Mapping) and key in part:
            problems.append(f"{section}.{key}: never in the config file: set {instead}")
    return problems


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
    """SafeLoader that refuses a key given twice in one mapping (PyYAML silently keeps the last), and notes
    channel keys left empty, with where they are."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.empty_channels: list[tuple[str, yaml.Mark]] = []


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Hashable] = set()
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, Hashable) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} appears twice in this mapping", key_node.start_mark
            )
        if isinstance(key, Hashable):
            seen.add(key)
        if isinstance(key, str) and key in CHANNEL_KEYS and _is_empty(value_node):
            loader.empty_channels.append((key, key_node.end_mark))
    return loader.construct_mapping(node, deep=True)


def _is_empty(node: yaml.Node) -> bool:
    """`key:` with nothing after it (a null written as nothing, not as `~` or `null`)."""
    return isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null" and node.value == ""


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _parse_yaml(text: str, source: str) -> tuple[dict[str, Any], list[str]]:
    """The top-level mapping, and the problems seen while parsing it that do not stop validation."""
    loader = _StrictLoader(text)
    try:
        data = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source} line {mark.line + 1} column {mark.column + 1}" if mark else source
        detail = " ".join(part for part in (exc.context, exc.problem) if part)
        raise ConfigError([f"{where}: YAML syntax error: {detail}"]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([f"{source}: YAML error: {exc}"]) from None
    finally:
        loader.dispose()
    if data is None:
        raise ConfigError([f"{source}: the file is empty; at least `clusters` is required"])
    if not isinstance(data, dict):
        raise ConfigError([f"{source}: the top level must be a mapping of sections (slack, clusters, ...)"])
    lines = text.splitlines()
    commented = (_commented(key, mark, lines, source) for key, mark in loader.empty_channels)
    return data, [problem for problem in commented if problem is not None]


def _commented(key: str, mark: yaml.Mark, lines: list[str], source: str) -> str | None:
    """`channel: #ops` unquoted: YAML reads `#ops` as a comment, so the key is there with no channel."""
    found = re.match(r"\s*:\s+(#\S*)", lines[mark.line][mark.column :])
    if found is None:
        return None  # `channel:` with nothing after it: unset, as if omitted
    channel = found.group(1)
    return (
        f"{source} line {mark.line + 1}: `{key}: {channel}` is a YAML comment, not a channel, so no channel "
        f'is set; quote it: {key}: "{channel}"'
    )


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
