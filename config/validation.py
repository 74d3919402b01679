"""Value rules of the config (Kubernetes and Slack names, URLs, cron, paths): checks that raise ValueError.

The probe builds an API path from configured names (`/apis/<gv>/namespaces/<ns>/<resource>`), so these
rules are also what keeps a configured value from ever reaching any other path: every part is a DNS label
or subdomain, which cannot contain `/`, `%`, `..` or upper case.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from apscheduler.triggers.cron import CronTrigger
from pydantic import SecretStr, ValidationInfo

from config.names import (
    describe,
)

_Sized = TypeVar("_Sized", bound=tuple[Any, ...] | dict[Any, Any])

PROMETHEUS_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
# Slack accepts a channel by ID (C…, G… for private, D… for a DM) or by name.
SLACK_CHANNEL_ID = re.compile(r"[CGD][A-Z0-9]{6,}\Z")
SLACK_CHANNEL_NAME = re.compile(r"#[a-z0-9][a-z0-9_-]{0,79}\Z")
SLACK_USER_ID = re.compile(r"[UW][A-Z0-9]{6,}\Z")
# A mention Slack turns into a notification: a user group `<!subteam^S…>` or a user `<@U…>` / `<@W…>`.
SLACK_MENTION = re.compile(r"(<!subteam\^S[A-Z0-9]{6,}>|<@[UW][A-Z0-9]{6,}>)\Z")


def prometheus_label_name(value: str) -> str:
    """An alert label name, as Prometheus allows them."""
    if not PROMETHEUS_LABEL_NAME.match(value):
        raise ValueError(f"{describe(value)} is not a valid Prometheus label name")
    return value


def slack_channel(value: str) -> str:
    """A Slack channel: an ID (`C0123ABCD`) or a `#name`."""
    if not (SLACK_CHANNEL_ID.match(value) or SLACK_CHANNEL_NAME.match(value)):
        raise ValueError(
            f"{describe(value)} is not a Slack channel: use an ID like C0123ABCDE or a name like #ops-alerts"
        )
    return value


def slack_user(value: str) -> str:
    """A Slack user ID (`U…` or, on Enterprise Grid, `W…`)."""
    if not SLACK_USER_ID.match(value):
        raise ValueError(f"{describe(value)} is not a Slack user ID (like U0123ABCDE)")
    return value


def slack_mention(value: str) -> str:
    """A Slack mention: a user group `<!subteam^S0123ABCDE>`, a user `<@U0123ABCDE>`, or "" (none)."""
    if value and not SLACK_MENTION.match(value):
        raise ValueError(
            f"{describe(value)} is not a Slack mention: use a user group like <!subteam^S0123ONCALL>, "
            'a user like <@U0123ABCDE>, or "" for none'
        )
    return value


# Cron numbers weekdays from Sunday (0 and 7); APScheduler 3 numbers them from Monday. Expressions are
# rewritten to weekday names so that "1-5" keeps meaning Monday to Friday.
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


def _weekday_number(token: str) -> int:
    lowered = token.lower()
    if lowered in _WEEKDAYS:
        return _WEEKDAYS.index(lowered)
    if not token.isdigit() or int(token) > 7:
        raise ValueError(f"{token!r} is not a weekday (0-7 or sun-sat)")
    return int(token) % 7


def _weekday_item(item: str) -> set[int]:
    span, _, step_text = item.partition("/")
    if step_text and (not step_text.isdigit() or int(step_text) == 0):
        raise ValueError(f"{item!r} has an invalid step")
    step = int(step_text) if step_text else 1
    if span == "*":
        first, last = 0, 6
    elif "-" in span:
        low, _, high = span.partition("-")
        first, last = _weekday_number(low), _weekday_number(high)
        if last == 0 and first > 0:
            last = 7  # "5-7" and "fri-sun" end on Sunday
        if last < first:
            raise ValueError(f"{item!r} is a descending range")
    else:
        first = _weekday_number(span)
        last = 6 if step_text else first
    return {day % 7 for day in range(first, last + 1, step)}


def cron_weekdays_as_names(field: str) -> str:
    """The day-of-week field of a crontab with cron's numbering, spelled with names for APScheduler."""
    if field == "*":
        return field
    days: set[int] = set()
    for item in field.split(","):
        days |= _weekday_item(item)
    return ",".join(_WEEKDAYS[day] for day in sorted(days))


def crontab_for_apscheduler(expression: str) -> str:
    """A 5-field crontab checked for cron semantics and rewritten so APScheduler 3 reads it the same."""
    fields = expression.split()
    if len(fields) != 5:
        raise ValueError(
            f"{expression!r} has {len(fields)} fields; a crontab has 5 (minute hour day month weekday)"
        )
    if fields[2] != "*" and fields[4] != "*":
        # Cron runs when EITHER day field matches; APScheduler requires both: refuse the ambiguity.
        raise ValueError(f"{expression!r} restricts both day-of-month and day-of-week; restrict only one")
    fields[4] = cron_weekdays_as_names(fields[4])
    return " ".join(fields)


_PLACEHOLDERS = frozenset(
    {"changeme", "change-me", "change_me", "replaceme", "replace-me", "todo", "secret", "xxx"}
)
# What our docs write where a secret goes: `xoxb-your-token`, `your-signing-secret` (config/deploy/README.md).
_YOUR_WORD = re.compile(r"(\A|[-_ ])your[-_ ]", re.IGNORECASE)
# ... and in a PostgreSQL URL: postgresql://proxybot:PASSWORD@HOST:5432/proxybot
_URL_PLACEHOLDERS = frozenset({"PASSWORD", "HOST"})
# Every kind of Slack token (bot, user, app-level, legacy and refresh): none of them is a signing secret.
SLACK_TOKEN_PREFIXES = ("xoxb-", "xoxp-", "xapp-", "xoxa-", "xoxe-", "xoxr-", "xoxs-")


def is_placeholder_secret(value: str) -> bool:
    """A value copied from an example rather than a real secret: empty, `changeme`, `xoxb-...`, `<token>`,
    `xoxb-your-token`, or a URL whose password or host is still `PASSWORD`, `HOST` or `<password>`."""
    text = value.strip()
    return (
        not text
        or text.lower() in _PLACEHOLDERS
        or "..." in text
        or "…" in text
        or _is_bracketed(text)
        or (_url_placeholder(text) if "://" in text else _YOUR_WORD.search(text) is not None)
    )


def _is_bracketed(text: str) -> bool:
    return text.startswith("<") and text.endswith(">")


def _url_placeholder(text: str) -> bool:
    """A URL whose password or host is still the docs' `PASSWORD`, `HOST` or `<password>`."""
    credentials, _, host_port = urlsplit(text).netloc.rpartition("@")
    password = credentials.partition(":")[2]
    host = host_port.rpartition(":")[0] if host_port.count(":") == 1 else host_port
    return any(part in _URL_PLACEHOLDERS or _is_bracketed(part) for part in (password, host))


def not_a_slack_token(value: SecretStr | None) -> SecretStr | None:
    """A signing secret that is no Slack token pasted into the wrong field (errors name only the prefix)."""
    text = "" if value is None else value.get_secret_value().strip()
    prefix = next((prefix for prefix in SLACK_TOKEN_PREFIXES if text.startswith(prefix)), None)
    if prefix is not None and not is_placeholder_secret(text):  # placeholders: `serve` refuses those
        raise ValueError(
            f"this is a Slack token ({prefix}...), not the signing secret: copy the app's Basic Information "
            "-> App Credentials -> Signing Secret"
        )
    return value


def non_empty(value: _Sized) -> _Sized:
    """A list or mapping with at least one entry."""
    if not value:
        raise ValueError("must not be empty")
    return value


def http_url(value: str) -> str:
    """An http(s) URL with a host; the value is never repeated (it may carry credentials)."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("must be an http:// or https:// URL with a host")
    return value


def with_trailing_slash(value: str) -> str:
    return value if value.endswith("/") else value + "/"


def resolve_path(value: Path, info: ValidationInfo) -> Path:
    """`~` expanded; a relative path joined to `base_dir` from the validation context when given."""
    path = value.expanduser()
    base = (info.context or {}).get("base_dir")
    return Path(base, path) if base is not None and not path.is_absolute() else path


def blank_to_none(value: Any) -> Any:
    # `${SLACK_APP_TOKEN:-}` is how a config says "optional and unset".
    return None if isinstance(value, str) and not value.strip() else value


def iana_timezone(value: str) -> str:
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{value!r} is not a known IANA time zone (like Europe/Berlin or UTC)") from None
    return value


def crontab(value: str) -> str:
    """A 5-field crontab that APScheduler accepts once its weekdays are spelled as names."""
    CronTrigger.from_crontab(crontab_for_apscheduler(value), timezone=ZoneInfo("UTC"))
    return value


def slack_token(prefix: str) -> Callable[[SecretStr | None], SecretStr | None]:
    """A check that a set, non-placeholder token has the prefix of its kind (xoxb-, xapp-)."""

    def check(value: SecretStr | None) -> SecretStr | None:
        token = None if value is None else value.get_secret_value()
        if token is not None and not is_placeholder_secret(token) and not token.startswith(prefix):
            raise ValueError(f"does not look like a Slack token of this kind (it should start with {prefix})")
        return value

    return check


def _libpq_parses(url: str) -> None:
    """libpq's own reading of the URL (what serve will do); its message may quote the password: not kept."""
    import psycopg  # here: only a PostgreSQL URL needs the driver
    from psycopg.conninfo import conninfo_to_dict

    try:
        if urlsplit(url).netloc.count("@") > 1:  # libpq and urllib would split it differently
            raise psycopg.ProgrammingError("more than one @")
        conninfo_to_dict(url)
    except psycopg.Error:
        raise ValueError(
            "the PostgreSQL URL does not parse: percent-encode special characters in the user and "
            "password (@ as %40, % as %25, : as %3A, / as %2F, space as %20)"
        ) from None


def store_url(value: SecretStr, info: ValidationInfo) -> SecretStr:
    """`sqlite:///<path>` (relative paths resolved like kubeconfigs) or `postgresql://...`."""
    url = value.get_secret_value()
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
        if path != ":memory:" and not Path(path).is_absolute():
            resolved = resolve_path(Path(path), info)
            return SecretStr(f"sqlite:///{resolved}")
        return value
    parts = urlsplit(url)
    if parts.scheme in ("postgres", "postgresql"):
        # The value may hold a password: problems name the part, never repeat the URL.
        try:
            parts.port  # noqa: B018 - parsing the port is the check
        except ValueError:
            raise ValueError("the PostgreSQL URL's port is not a number") from None
        if not parts.hostname:
            raise ValueError("the PostgreSQL URL names no host: postgresql://<user>:<password>@<host>/<db>")
        if not parts.path.strip("/") or "/" in parts.path.strip("/"):
            raise ValueError("the PostgreSQL URL names no database: postgresql://<user>@<host>/<db>")
        if not parts.username:
            raise ValueError("the PostgreSQL URL names no user: postgresql://<user>@<host>/<db>")
        _libpq_parses(url)
        return value
    # The value may hold a password: never repeat it.
    raise ValueError("must be sqlite:///<path> or postgresql://<user>@<host>/<db>")


CATCH_UP_MAX_MINUTES = 7 * 24 * 60


def catch_up(value: Any) -> bool | int:
    """`digest.catch_up`: true, false, or a whole number of minutes (1 to a week); `${VAR}` text too."""
    text = value.strip().lower() if isinstance(value, str) else value
    if text in ("true", "false"):
        return text == "true"
    if isinstance(text, str) and text.isdigit():
        text = int(text)
    if isinstance(text, bool) or (isinstance(text, int) and 1 <= text <= CATCH_UP_MAX_MINUTES):
        return text
    raise ValueError(
        f"must be true, false or a number of minutes from 1 to {CATCH_UP_MAX_MINUTES}; got {value!r}"
    )


# A duration as operators write one (`30s`, `10m`, `1h`, `7d`, `1h30m`), or a number of seconds. The same
# grammar as the durations people type in Slack (`bot.domain.durations`), which config cannot import.
_DURATION_PART = re.compile(r"([0-9]{1,6})([smhd])")
_DURATION_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration_seconds(value: object) -> float:
    """Seconds of a duration like `10m` or `7d` (or a positive number of seconds)."""
    if isinstance(value, bool):
        raise ValueError("must be a duration like 30s, 10m, 1h or 7d")
    if isinstance(value, int | float):
        seconds = float(value)
    else:
        text = str(value).strip()
        parts = _DURATION_PART.findall(text)
        if not text or "".join(n + u for n, u in parts) != text:
            raise ValueError(f"{describe(text)} is not a duration like 30s, 10m, 1h or 7d")
        seconds = float(sum(int(n) * _DURATION_UNIT[u] for n, u in parts))
    if seconds <= 0:
        raise ValueError("must be longer than 0s")
    return seconds
