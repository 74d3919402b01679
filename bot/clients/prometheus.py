"""A thin typed wrapper of Prometheus' HTTP API: instant and range queries, rules, scrape targets.

Every call has a deadline for the whole exchange (connect, send, wait, read), also sent to Prometheus as
its own query `timeout` so that it stops evaluating what nobody waits for. Whatever fails is converted
here into `UpstreamError` with a message that names the call and the reason (unreachable, timed out,
refused with Prometheus' own error text, an answer that is not Prometheus'); credentials in the URL never
appear in a message.

PromQL is built by callers from constants, with every label value passed through `promql_string`:
text from outside (alert labels) can end a string literal only through that escaping, never raw.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import httpx

from bot.clients.credentials import HttpSecurity, http_security
from bot.errors import ConfigError, InputError, UpstreamError
from config.settings import PrometheusSettings

DEFAULT_TIMEOUT = 5.0
_LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
_METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
# Characters a PromQL double-quoted string cannot hold as they are.
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def promql_string(value: str) -> str:
    """`value` as a PromQL double-quoted string literal that means exactly `value`."""
    out = []
    for char in value:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif 0xD800 <= ord(char) <= 0xDFFF:
            out.append("\ufffd")  # a lone surrogate (from JSON) is no character Prometheus can match
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def selector(metric: str, labels: Mapping[str, str], extra: str = "") -> str:
    """`metric{name="value",...}` with escaped values; `extra` is a constant matcher such as `reason!="x"`."""
    if not _METRIC_NAME.fullmatch(metric):
        raise InputError(f"not a metric name: {metric!r}")
    matchers = []
    for name, value in sorted(labels.items()):
        if not _LABEL_NAME.fullmatch(name):
            raise InputError(f"not a label name: {name!r}")
        matchers.append(f"{name}={promql_string(value)}")
    if extra:
        matchers.append(extra)
    return f"{metric}{{{','.join(matchers)}}}"


def duration(seconds: float) -> str:
    """A PromQL range duration in whole seconds (`300s`), at least one second."""
    return f"{max(1, math.ceil(seconds))}s"


@dataclass(frozen=True, slots=True)
class Sample:
    """One series of an instant vector: labels (without `__name__` when the expression drops it), value."""

    labels: Mapping[str, str]
    value: float
    at: float


@dataclass(frozen=True, slots=True)
class Series:
    """One series of a range query: labels and (unix seconds, value) points, oldest first."""

    labels: Mapping[str, str]
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True, slots=True)
class Rule:
    """One loaded rule as Prometheus reports it."""

    name: str
    kind: str  # "alerting" or "recording"
    health: str  # "ok", "err", "unknown"
    last_error: str | None
    state: str | None  # alerting rules: "inactive", "pending", "firing"


@dataclass(frozen=True, slots=True)
class RuleGroup:
    """One rule group and the file it came from."""

    name: str
    file: str
    rules: tuple[Rule, ...]


@dataclass(frozen=True, slots=True)
class ScrapeTarget:
    """One active scrape target: its labels, URL and health (`up`, `down`, `unknown`)."""

    labels: Mapping[str, str]
    scrape_pool: str
    scrape_url: str
    health: str
    last_error: str | None


class PrometheusClient:
    """Prometheus' HTTP API at `url`; pass `transport` to put a fake in (tests) instead of the network."""

    def __init__(
        self,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
        security: HttpSecurity | None = None,
    ) -> None:
        security = security or HttpSecurity()
        self._base = str(url).rstrip("/")
        self._shown = _redacted(self._base)
        self._timeout = timeout
        self._http = httpx.AsyncClient(
            transport=transport,
            headers=dict(headers or {}),
            follow_redirects=False,
            auth=security.auth,
            verify=security.verify,
        )

    @classmethod
    def from_settings(cls, settings: PrometheusSettings, *, timeout: float = DEFAULT_TIMEOUT) -> Self:
        """A client of `prometheus.url` with its TLS trust and credentials; ConfigError when unusable."""
        if settings.url is None:
            raise ConfigError(["prometheus.url: required to query Prometheus"])
        return cls(settings.url, timeout=timeout, security=http_security(settings, "prometheus"))

    @property
    def url(self) -> str:
        """The base URL with any credentials removed (for messages and logs)."""
        return self._shown

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def query(
        self, expr: str, *, at: float | None = None, timeout: float | None = None
    ) -> list[Sample]:
        """An instant query that must give a vector (or a scalar, as one unlabelled sample)."""
        form = {"query": expr, **({"time": _ts(at)} if at is not None else {})}
        data = await self._call("query", form, timeout)
        kind, result = data.get("resultType"), data.get("result")
        if kind == "scalar":
            at, value = _point(result)
            return [Sample({}, value, at)]
        if kind != "vector" or not isinstance(result, list):
            raise UpstreamError(f"Prometheus query answered a {kind}, not an instant vector: {expr[:200]}")
        return [_sample(item) for item in result]

    async def query_range(
        self, expr: str, *, start: float, end: float, step: float, timeout: float | None = None
    ) -> list[Series]:
        """A range query from `start` to `end` (unix seconds) every `step` seconds."""
        form = {"query": expr, "start": _ts(start), "end": _ts(end), "step": _ts(step)}
        data = await self._call("query_range", form, timeout)
        if data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
            raise UpstreamError(f"Prometheus range query answered no matrix: {expr[:200]}")
        return [_series(item) for item in data["result"]]

    async def rules(self, *, timeout: float | None = None) -> list[RuleGroup]:
        """Every loaded rule group (`promtool check rules` passes is not the same as loaded)."""
        data = await self._call("rules", None, timeout)
        return [_rule_group(group) for group in _list(data, "groups")]

    async def targets(self, *, timeout: float | None = None) -> list[ScrapeTarget]:
        """The active scrape targets and their health."""
        data = await self._call("targets", None, timeout, params={"state": "active"})
        return [_target(item) for item in _list(data, "activeTargets")]

    # -- the one exchange ---------------------------------------------------------------------------
    async def _call(
        self,
        endpoint: str,
        form: dict[str, str] | None,
        timeout: float | None,
        params: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        limit = self._timeout if timeout is None else timeout
        what = f"Prometheus {self._shown} /api/v1/{endpoint}"
        try:
            async with asyncio.timeout(limit):
                response = await self._send(endpoint, form, params, limit)
        except TimeoutError:
            raise UpstreamError(f"{what}: no answer within {limit:g}s") from None
        except httpx.TimeoutException:
            raise UpstreamError(f"{what}: no answer within {limit:g}s") from None
        except httpx.HTTPError as error:
            raise UpstreamError(f"{what}: unreachable ({type(error).__name__}: {error})") from None
        return _data(what, response)

    async def _send(
        self, endpoint: str, form: dict[str, str] | None, params: dict[str, str] | None, limit: float
    ) -> httpx.Response:
        url = f"{self._base}/api/v1/{endpoint}"
        timeout = httpx.Timeout(limit)
        if form is None:
            return await self._http.get(url, params=params, timeout=timeout)
        # POST: long expressions do not hit URL length limits; Prometheus stops evaluating at `timeout`.
        body = {**form, "timeout": duration(limit)}
        return await self._http.post(url, data=body, timeout=timeout)


# -- decoding Prometheus' answers ----------------------------------------------------------------------


def _data(what: str, response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        raise UpstreamError(f"{what}: answered HTTP {response.status_code} without JSON") from None
    if not isinstance(body, dict):
        raise UpstreamError(f"{what}: answered HTTP {response.status_code} with unexpected JSON")
    if body.get("status") != "success":
        kind = body.get("errorType") or f"HTTP {response.status_code}"
        raise UpstreamError(f"{what}: refused ({kind}): {str(body.get('error', 'no reason given'))[:500]}")
    data = body.get("data")
    if not isinstance(data, dict):
        raise UpstreamError(f"{what}: answered success without data")
    return data


def _list(data: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    items = data.get(key)
    if not isinstance(items, list):
        raise UpstreamError(f"Prometheus answered without `{key}`")
    return [item for item in items if isinstance(item, Mapping)]


def _labels(raw: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def _point(raw: Any) -> tuple[float, float]:
    try:
        at, value = raw
        return float(at), float(value)  # Prometheus sends values as strings: "NaN", "+Inf" included
    except (TypeError, ValueError):
        raise UpstreamError(f"Prometheus answered a malformed sample: {str(raw)[:100]}") from None


def _sample(item: Any) -> Sample:
    if not isinstance(item, Mapping):
        raise UpstreamError("Prometheus answered a malformed vector")
    at, value = _point(item.get("value"))
    return Sample(_labels(item.get("metric")), value, at)


def _series(item: Any) -> Series:
    if not isinstance(item, Mapping) or not isinstance(item.get("values"), list):
        raise UpstreamError("Prometheus answered a malformed matrix")
    return Series(_labels(item.get("metric")), tuple(_point(p) for p in item["values"]))


def _rule_group(group: Mapping[str, Any]) -> RuleGroup:
    rules = tuple(
        Rule(
            name=str(rule.get("name", "")),
            kind=str(rule.get("type", "")),
            health=str(rule.get("health", "unknown")),
            last_error=str(rule["lastError"]) if rule.get("lastError") else None,
            state=str(rule["state"]) if rule.get("state") else None,
        )
        for rule in group.get("rules") or []
        if isinstance(rule, Mapping)
    )
    return RuleGroup(str(group.get("name", "")), str(group.get("file", "")), rules)


def _target(item: Mapping[str, Any]) -> ScrapeTarget:
    return ScrapeTarget(
        labels=_labels(item.get("labels")),
        scrape_pool=str(item.get("scrapePool", "")),
        scrape_url=_redacted(str(item.get("scrapeUrl", ""))),
        health=str(item.get("health", "unknown")),
        last_error=str(item["lastError"]) if item.get("lastError") else None,
    )


def _ts(value: float) -> str:
    return f"{value:.3f}"


def _redacted(url: str) -> str:
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL:
        return "<invalid URL>"
    if parsed.userinfo:
        parsed = parsed.copy_with(username=None, password=None)
    return str(parsed)
