"""The building blocks of every settings section: the strict base model, the validated field types,
`LocatedProblems` for checks that span several fields, and `format_loc`, how every problem names its key.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    SecretStr,
    ValidationError,
    WithJsonSchema,
)

from config import names, validation

Loc = tuple[str | int, ...]
_C = TypeVar("_C", bound=tuple[Any, ...] | dict[Any, Any])


class LocatedProblems(ValueError):
    """Several problems found by one model check, each with a location relative to that model."""

    def __init__(self, problems: list[tuple[Loc, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{'.'.join(map(str, loc))}: {msg}" for loc, msg in problems))


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


_SHORT = {"missing": "required key is missing", "extra_forbidden": "unknown key"}


def located(error: ValidationError) -> list[tuple[Loc, str]]:
    """A sub-model's validation errors as located problems (its own located ones kept), for a check that
    validates part of a section itself; never includes the offending input."""
    found: list[tuple[Loc, str]] = []
    for detail in error.errors(include_url=False, include_input=False):
        loc = tuple(detail["loc"])
        cause = (detail.get("ctx") or {}).get("error")
        if isinstance(cause, LocatedProblems):
            found += [((*loc, *sub), message) for sub, message in cause.problems]
        else:
            found.append((loc, _SHORT.get(detail["type"], detail["msg"].removeprefix("Value error, "))))
    return found


def raise_if_any(problems: list[tuple[Loc, str]]) -> None:
    if problems:
        raise LocatedProblems(problems)


# A length check that runs after the items validated: pydantic's min_length counts only valid items and
# would add a misleading "empty" error next to the items' own errors.
NonEmpty = Annotated[_C, AfterValidator(validation.non_empty)]
HttpUrl = Annotated[str, AfterValidator(validation.http_url)]
ConfigPath = Annotated[Path, AfterValidator(validation.resolve_path)]
OptionalSecret = Annotated[SecretStr | None, BeforeValidator(validation.blank_to_none)]
DnsLabel = Annotated[str, AfterValidator(names.dns1123_label)]
ResourcePlural = Annotated[str, AfterValidator(names.dns1035_label)]
GroupVersion = Annotated[str, AfterValidator(names.group_version)]
TargetName = Annotated[str, AfterValidator(names.target_name)]
LabelName = Annotated[str, AfterValidator(validation.prometheus_label_name)]
SlackChannel = Annotated[str, AfterValidator(validation.slack_channel)]
SlackUser = Annotated[str, AfterValidator(validation.slack_user)]
SlackMention = Annotated[str, AfterValidator(validation.slack_mention)]
# A duration (`30s`, `10m`, `1h`, `7d`, or a number of seconds) as seconds. Its JSON schema (the Helm
# chart's values) takes both forms, as the model does.
Duration = Annotated[
    float,
    BeforeValidator(validation.duration_seconds),
    WithJsonSchema({"type": ["number", "string"], "description": "seconds, or 30s, 10m, 1h, 7d"}),
]


class StrictModel(BaseModel):
    """Base of every section: unknown keys are errors, values are immutable after loading."""

    model_config = ConfigDict(extra="forbid", frozen=True)
