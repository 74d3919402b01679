"""The one error hierarchy of proxybot.

    ProxybotError
    ├── ConfigError            the configuration file or environment is wrong (names the key)
    ├── MetricsParseError      a vcluster_proxy_* line of /metrics/syncer is malformed (names the line)
    ├── ClusterError           a tenant cluster could not be read (unreachable, 401/403, 404 = too old)
    ├── UpstreamError          Prometheus, Alertmanager or Slack failed or refused
    │   ├── PlatformError      the vCluster Platform failed or refused (names platform.url, never the key)
    │   └── SlackError         a Slack Web API call failed (bot/clients/slack.py)
    │       ├── SlackRateLimited   429: nothing may be sent for `retry_after` seconds
    │       ├── SlackTransient     5xx, timeout, connection error: the same call may succeed
    │       └── SlackRejected      Slack refused the call (`error_code`); unchanged it cannot succeed
    ├── StoreError             the state store failed (bot/store/errors.py)
    ├── InputError             an argument from a user (command, button, webhook) is refused
    └── Refused                the asker may not do this, or it cannot be done here; says why

The Slack and store errors live next to the client and the store that raise them (each module imports
this one); `ProxybotError` and `ConfigError` are config's (config/errors.py: config imports nothing of
bot) and are imported here; every other class is defined here.

Third-party exceptions are converted into these at the boundary (clients/), so the handlers only ever
see this hierarchy and can answer with a clear message instead of a stack trace.
"""

from __future__ import annotations

from config.errors import ConfigError as ConfigError
from config.errors import ProxybotError as ProxybotError


def shown(text: str, limit: int = 60) -> str:
    """A user's word as an error message may quote it: cut short, quoted by repr."""
    return repr(text if len(text) <= limit else text[:limit] + "…")


class MetricsParseError(ProxybotError):
    """A proxy line of a metrics page could not be parsed."""

    def __init__(self, line_number: int, line: str, reason: str) -> None:
        self.line_number = line_number
        self.line = line
        self.reason = reason
        shown = line if len(line) <= 200 else line[:200] + "…"
        super().__init__(f"line {line_number}: {reason}: {shown!r}")


class ClusterError(ProxybotError):
    """A tenant cluster's API could not be read; `kind` says how (for the diagnosis and the fix).

    Kinds: `unreachable`, `timeout`, `unauthorized` (401), `forbidden` (403), `not_found` (404; on
    /metrics/syncer it means a vCluster older than v0.37), `bad_config` (kubeconfig/context), `http`.
    """

    def __init__(self, cluster: str, kind: str, message: str) -> None:
        self.cluster = cluster
        self.kind = kind
        super().__init__(f"cluster {cluster}: {message}")


class UpstreamError(ProxybotError):
    """A dependency (Prometheus, Alertmanager, Slack) failed or refused."""


class PlatformError(UpstreamError):
    """The vCluster Platform could not be read: `status` is its HTTP answer (None: no answer)."""

    def __init__(self, url: str, status: int | None, message: str) -> None:
        self.url = url
        self.status = status
        self.message = message
        super().__init__(f"platform.url {url}: {message}")


class InputError(ProxybotError):
    """User input was refused; the message says which field and why."""


class Refused(ProxybotError):
    """The person who asked or pressed may not do this, or it cannot be done for this alert; says why."""
