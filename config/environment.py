"""The `PROXYBOT_*` environment variables: the config path, one override per secret, the directory of
secret files, and those that mean nothing.

Only secrets and the config path come from `PROXYBOT_*` variables; everything else is in the file, where
`${VAR}` reads any variable. A secret can also be a file named as its variable in `PROXYBOT_SECRETS_DIR`
(a Kubernetes Secret mounted as a volume: the value then never is in the process's environment, which
every child process and `/proc/<pid>/environ` would see); a variable that is set wins over its file. A
`PROXYBOT_*` name proxybot does not read is a typo or a guess (e.g. `PROXYBOT_SLACK_TOKEN`,
`PROXYBOT_SERVER_PORT`), so it is warned about with the name it probably meant.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from pathlib import Path

from pydantic import BaseModel

from config.errors import ConfigError
from config.fields import Loc
from config.settings import Settings

PREFIX = "PROXYBOT_"
CONFIG_ENV = "PROXYBOT_CONFIG"
SECRETS_DIR_ENV = "PROXYBOT_SECRETS_DIR"

# Every secret can come from the environment; the variable wins over the file.
SECRET_OVERRIDES: Mapping[str, tuple[str, ...]] = {
    "PROXYBOT_SLACK_BOT_TOKEN": ("slack", "bot_token"),
    "PROXYBOT_SLACK_SIGNING_SECRET": ("slack", "signing_secret"),
    "PROXYBOT_SLACK_APP_TOKEN": ("slack", "app_token"),
    "PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN": ("alertmanager", "webhook_token"),
    "PROXYBOT_ALERTMANAGER_WEBHOOK_PASSWORD": ("alertmanager", "webhook_password"),
    "PROXYBOT_STORE_URL": ("store", "url"),
    "PROXYBOT_PLATFORM_ACCESS_KEY": ("platform", "access_key"),
}
KNOWN = (CONFIG_ENV, SECRETS_DIR_ENV, *SECRET_OVERRIDES)


def env_hint(loc: Loc) -> str:
    """` here or in PROXYBOT_...` for a secret's location, empty for anything else."""
    names = [name for name, path in SECRET_OVERRIDES.items() if path == loc]
    return f" here or in {names[0]}" if names else ""


def unknown_variables(env: Mapping[str, str]) -> list[str]:
    """A warning per `PROXYBOT_*` variable that proxybot does not read, naming what was probably meant."""
    unknown = sorted(name for name in env if name.startswith(PREFIX) and name not in KNOWN)
    return [f"{name}: {_unknown(name)}" for name in unknown]


def _unknown(name: str) -> str:
    ignored = "set, but proxybot reads no such variable, so it changes nothing"
    key = _config_key(name.removeprefix(PREFIX).lower(), Settings)
    if key is not None:
        # Only secrets have variables; a setting is read from the file, which can read this variable.
        return f"{ignored}; {key} is set in the config file (`${{{name}}}` there reads this variable)"
    close = difflib.get_close_matches(name, KNOWN, n=1, cutoff=0.75)
    if close:
        return f"{ignored}; did you mean {close[0]}?"
    return f"{ignored}; the variables are {', '.join(KNOWN)}"


def _config_key(words: str, model: type[BaseModel], prefix: str = "") -> str | None:
    """`server_port` -> `server.port` when that is a key of the settings (sections nest by `_`)."""
    for field, info in model.model_fields.items():
        if words == field:
            return f"{prefix}{field}"
        nested = info.annotation
        if words.startswith(f"{field}_") and isinstance(nested, type) and issubclass(nested, BaseModel):
            found = _config_key(words.removeprefix(f"{field}_"), nested, f"{prefix}{field}.")
            if found is not None:
                return found
    return None


def overrides(env: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """(variable, value) of every secret override set: the variable, else its file in `PROXYBOT_SECRETS_DIR`
    (an empty variable or file counts as unset); ConfigError when that directory or a file in it cannot
    be read."""
    files = _secrets_dir(env)
    for name in SECRET_OVERRIDES:
        if env.get(name, "").strip():
            yield name, env[name]
        elif files is not None and (value := _secret_file(files / name)):
            yield name, value


def _secrets_dir(env: Mapping[str, str]) -> Path | None:
    given = env.get(SECRETS_DIR_ENV, "").strip()
    if not given:
        return None
    if not Path(given).is_dir():
        raise ConfigError([f"{SECRETS_DIR_ENV}: {given} is not a directory"])
    return Path(given)


def _secret_file(path: Path) -> str:
    """The file's value, stripped; "" when there is no such file (a Secret without that key)."""
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else type(err).__name__
        raise ConfigError([f"{SECRETS_DIR_ENV}: cannot read {path}: {why}"]) from None
