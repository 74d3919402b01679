"""Read the `vcluster_proxy_*` series of a `/metrics/syncer` page into a ProxySnapshot.

Accepts the Prometheus text exposition format (0.0.4) and OpenMetrics text. A syncer page is mostly
controller-runtime, Go runtime and workqueue series; the proxy lines are a small part of it. So the page is
never split into lines: the proxy lines are found by searching the raw text for the metric-name prefix, and
nothing else is parsed or even counted (a line number is computed only for an error message). Malformed
proxy lines raise MetricsParseError; malformed lines of other families are none of our business.

Each proxy sample line is matched by one compiled regular expression (the fast path). Only when it does not
match does a step-by-step reader go over the line again, to say precisely what is wrong with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from bot.domain.snapshot import HISTOGRAMS, PREFIX, Bucket, Histogram, Labels, ProxySnapshot
from bot.errors import MetricsParseError

_METRIC_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*+"
_LABEL_NAME = r"[a-zA-Z_][a-zA-Z0-9_]*+"
# Only `\\`, `\"` and `\n` are escapes in a label value (what client_golang's own parser accepts).
_LABEL_VALUE = r'"(?:[^"\\]|\\[\\"n])*+"'
_PAIR = rf"{_LABEL_NAME}[ \t]*=[ \t]*{_LABEL_VALUE}"
_LABEL_SET = rf"\{{[ \t]*(?:{_PAIR}[ \t]*,[ \t]*)*(?:{_PAIR}[ \t]*)?\}}"
# The numbers Go's strconv.ParseFloat reads (bar hex): NaN, Inf and Infinity in any case, signed infinities.
_FINITE = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_NUMBER = rf"(?:{_FINITE}|[+-]?[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN])"
# OpenMetrics exemplar: ` # {labels} value [timestamp]` after the sample's value and timestamp.
_EXEMPLAR = rf"[ \t]+#[ \t]+{_LABEL_SET}[ \t]*{_NUMBER}(?:[ \t]+{_FINITE})?"

_SAMPLE_RE = re.compile(
    rf"(?P<name>{_METRIC_NAME})(?:[ \t]*(?P<labels>{_LABEL_SET})[ \t]*|[ \t]+)"
    rf"(?P<value>{_NUMBER})(?:[ \t]+{_FINITE})?(?:{_EXEMPLAR})?[ \t]*"
)
_PAIR_RE = re.compile(rf"({_LABEL_NAME})[ \t]*=[ \t]*\"((?:[^\"\\]|\\[\\\"n])*+)\"")
_ESCAPE_RE = re.compile(r"\\(.)")
_UNESCAPED = {"\\": "\\", '"': '"', "n": "\n"}
_COMMENT_RE = re.compile(r"#[ \t]*(HELP|TYPE)[ \t]+(\S+)[ \t]*(.*)")
_QUOTED_PROXY_NAME_RE = re.compile(rf'\{{[ \t]*"{PREFIX}')

_METRIC_NAME_RE = re.compile(_METRIC_NAME)
_LABEL_NAME_RE = re.compile(_LABEL_NAME)
_NUMBER_RE = re.compile(_NUMBER)
_FINITE_RE = re.compile(_FINITE)
_EXEMPLAR_RE = re.compile(_EXEMPLAR)
_BLANKS_RE = re.compile(r"[ \t]*")

_TYPES = frozenset(
    {"counter", "gauge", "histogram", "summary", "untyped", "unknown", "gaugehistogram", "info", "stateset"}
)
_HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")


@dataclass(frozen=True, slots=True)
class _Line:
    """Where a proxy line sits in the page: enough to name it in an error, found only when needed."""

    text: str
    page: str
    start: int

    def error(self, reason: str) -> MetricsParseError:
        return MetricsParseError(self.page.count("\n", 0, self.start) + 1, self.text, reason)


@dataclass(frozen=True, slots=True)
class _Sample:
    """One parsed proxy sample line."""

    name: str
    labels: Labels
    value: float
    line: _Line


@dataclass(slots=True)
class _HistogramParts:
    """The `_bucket`, `_sum` and `_count` samples of one histogram series, as they are found."""

    first: _Line
    buckets: dict[float, float] = field(default_factory=dict)
    sum: float | None = None
    count: float | None = None

    def build(self) -> Histogram:
        if self.count is None or self.sum is None:
            missing = "_count" if self.count is None else "_sum"
            raise self.first.error(f"histogram series has no {missing} sample")
        buckets = tuple(Bucket(le, c) for le, c in sorted(self.buckets.items()))
        return Histogram(buckets=buckets, count=self.count, sum=self.sum)


def parse_syncer(text: str) -> ProxySnapshot:
    """Every `vcluster_proxy_*` series of a `/metrics/syncer` page (Prometheus text or OpenMetrics).

    Raises MetricsParseError, naming the 1-based line, when a proxy line is malformed or a proxy series
    appears twice. Lines of other families are skipped without being read.
    """
    types: dict[str, str] = {}
    found: list[_Sample] = []
    for line in _proxy_lines(text):
        if line.text[0] == "#":
            _read_comment(line, types)
        elif (sample := _read_sample(line)) is not None:
            found.append(sample)
    return _assemble(found, types)


def _proxy_lines(text: str) -> list[_Line]:
    """Lines before `# EOF` that mention the prefix anywhere, stripped; callers decide if they are ours."""
    lines: list[_Line] = []
    eof = _eof_offset(text)
    find = text.find
    pos = find(PREFIX, 0, eof)
    while pos != -1:
        start = text.rfind("\n", 0, pos) + 1
        end = find("\n", pos)
        if end == -1:
            end = len(text)
        lines.append(_Line(text[start:end].strip(" \t\r"), text, start))
        pos = find(PREFIX, end, eof)
    _refuse_after_eof(text, eof)
    return lines


def _refuse_after_eof(text: str, eof: int) -> None:
    """OpenMetrics ends at `# EOF`: a proxy sample after it is an error, not something to drop quietly."""
    pos = text.find(PREFIX, eof)
    while pos != -1:
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        line = text[start : len(text) if end == -1 else end].strip(" \t\r")
        if _is_proxy_sample(line):
            raise _Line(line, text, start).error("sample after # EOF")
        if end == -1:
            return
        pos = text.find(PREFIX, end)


def _eof_offset(text: str) -> int:
    """Where OpenMetrics' `# EOF` line starts, or the end of the text when there is none."""
    pos = text.find("# EOF")
    while pos != -1:
        end = text.find("\n", pos)
        rest = text[pos + 5 : len(text) if end == -1 else end]
        if (pos == 0 or text[pos - 1] == "\n") and not rest.strip(" \t\r"):
            return pos
        pos = text.find("# EOF", pos + 5)
    return len(text)


def _read_comment(line: _Line, types: dict[str, str]) -> None:
    """Record the type a `# TYPE` line gives a proxy family; other comments carry nothing we need."""
    m = _COMMENT_RE.fullmatch(line.text)
    if m is None or m[1] != "TYPE" or not m[2].startswith(PREFIX):
        return
    family, kind = m[2], m[3]
    if kind not in _TYPES:
        raise line.error(f"unknown metric type {kind!r}" if kind else "TYPE line without a type")
    if types.setdefault(family, kind) != kind:
        raise line.error(f"second TYPE for {family}: {types[family]} then {kind}")


def _read_sample(line: _Line) -> _Sample | None:
    """The sample of a proxy line, or None when the line belongs to another family."""
    m = _SAMPLE_RE.fullmatch(line.text)
    if m is None:
        if _is_proxy_sample(line.text):
            raise line.error(_diagnose(line.text))
        return None
    name = m["name"]
    if not name.startswith(PREFIX):
        return None
    raw = m["labels"]
    labels = _labels(raw, line) if raw is not None and len(raw) > 2 else ()
    return _Sample(name, labels, float(m["value"]), line)


def _is_proxy_sample(text: str) -> bool:
    m = _METRIC_NAME_RE.match(text)
    if m is not None:
        return m[0].startswith(PREFIX)
    # A quoted (UTF-8 style) name is valid text, but no proxy emits one; refuse rather than drop it.
    return _QUOTED_PROXY_NAME_RE.match(text) is not None


def _labels(raw: str, line: _Line) -> Labels:
    pairs = _PAIR_RE.findall(raw)
    if "\\" in raw:
        pairs = [(k, _ESCAPE_RE.sub(_unescape, v)) for k, v in pairs]
    if len(dict(pairs)) != len(pairs):
        names = [k for k, _ in pairs]
        twice = next(k for k in names if names.count(k) > 1)
        raise line.error(f"label {twice!r} appears twice")
    return tuple(sorted(pairs))


def _unescape(m: re.Match[str]) -> str:
    return _UNESCAPED[m[1]]


def _diagnose(text: str) -> str:
    """Why a proxy sample line does not match the grammar, read one token at a time."""
    pos = _METRIC_NAME_RE.match(text)
    if pos is None:
        return "quoted metric names are not supported"
    i = _skip_blanks(text, pos.end())
    if i < len(text) and text[i] == "{":
        problem, i = _diagnose_labels(text, i + 1)
        if problem:
            return problem
        i = _skip_blanks(text, i)
    elif i == pos.end() and i < len(text):
        return f"invalid character {text[i]!r} in metric name"
    return _diagnose_tail(text, i)


def _diagnose_labels(text: str, i: int) -> tuple[str, int]:
    """The problem in a label set starting after `{` ('' when none) and the offset after `}`."""
    while True:
        i = _skip_blanks(text, i)
        if i >= len(text):
            return "label set is not closed with '}'", i
        if text[i] == "}":
            return "", i + 1
        name = _LABEL_NAME_RE.match(text, i)
        if name is None:
            return f"expected a label name at {text[i : i + 20]!r}", i
        i = _skip_blanks(text, name.end())
        if not text.startswith("=", i):
            return f"expected '=' after label {name[0]!r}", i
        i = _skip_blanks(text, i + 1)
        if not text.startswith('"', i):
            return f"value of label {name[0]!r} is not quoted", i
        problem, i = _diagnose_label_value(text, i + 1, name[0])
        if problem:
            return problem, i
        i = _skip_blanks(text, i)
        if text.startswith(",", i):
            i += 1
        elif not text.startswith("}", i):
            return f"expected ',' or '}}' after the value of label {name[0]!r}", i


def _diagnose_label_value(text: str, i: int, name: str) -> tuple[str, int]:
    """Walk a quoted value from just after its opening quote; the offset after the closing quote."""
    while i < len(text):
        c = text[i]
        if c == '"':
            return "", i + 1
        if c == "\\":
            escaped = text[i + 1 : i + 2]
            if escaped not in _UNESCAPED:
                return f"invalid escape '\\{escaped}' in the value of label {name!r}", i
            i += 1
        i += 1
    return f"unterminated quoted value of label {name!r}", i


def _diagnose_tail(text: str, i: int) -> str:
    """What is wrong from the value on."""
    if i >= len(text):
        return "missing value"
    value = text[i:].split(None, 1)[0]
    if _NUMBER_RE.fullmatch(value) is None:
        return f"invalid value {value!r}"
    i = _skip_blanks(text, i + len(value))
    if i < len(text) and text[i] != "#":
        stamp = text[i:].split(None, 1)[0]
        if _FINITE_RE.fullmatch(stamp) is None:
            return f"unexpected text after value: {stamp!r}"
        i = _skip_blanks(text, i + len(stamp))
    if i < len(text) and text[i] == "#":
        if _EXEMPLAR_RE.match(text, i - 1 if i > 0 else i) is None:
            return "malformed exemplar after value"
        return "unexpected text after exemplar"
    return f"unexpected text after timestamp: {text[i:]!r}" if i < len(text) else "malformed sample line"


def _skip_blanks(text: str, i: int) -> int:
    m = _BLANKS_RE.match(text, i)
    return i if m is None else m.end()


def _assemble(found: list[_Sample], types: dict[str, str]) -> ProxySnapshot:
    """Sort the samples into histogram series and plain samples; refuse any series seen twice."""
    samples: dict[str, dict[Labels, float]] = {}
    parts: dict[tuple[str, Labels], _HistogramParts] = {}
    roles: dict[str, tuple[str, str] | None] = {}
    for s in found:
        role = roles[s.name] if s.name in roles else roles.setdefault(s.name, _role(s.name, types))
        if role is None:
            series = samples.setdefault(s.name, {})
            if s.labels in series:
                raise s.line.error(f"duplicate series {s.name}")
            series[s.labels] = s.value
        else:
            _add_part(parts, role, s)
    histograms: dict[str, dict[Labels, Histogram]] = {}
    for (family, labels), p in parts.items():
        histograms.setdefault(family, {})[labels] = p.build()
    return ProxySnapshot(samples=samples, histograms=histograms)


def _role(name: str, types: dict[str, str]) -> tuple[str, str] | None:
    """(family, suffix) when the sample is part of a histogram, else None."""
    for suffix in _HISTOGRAM_SUFFIXES:
        if name.endswith(suffix):
            family = name[: -len(suffix)]
            kind = types.get(family)
            if kind == "histogram" or (kind is None and family in HISTOGRAMS):
                return family, suffix
    return None


def _add_part(parts: dict[tuple[str, Labels], _HistogramParts], role: tuple[str, str], s: _Sample) -> None:
    family, suffix = role
    if suffix != "_bucket":
        p = parts.setdefault((family, s.labels), _HistogramParts(s.line))
        if (p.sum if suffix == "_sum" else p.count) is not None:
            raise s.line.error(f"duplicate series {s.name}")
        if suffix == "_sum":
            p.sum = s.value
        else:
            p.count = s.value
        return
    le = _bucket_bound(s)
    p = parts.setdefault((family, tuple(kv for kv in s.labels if kv[0] != "le")), _HistogramParts(s.line))
    if le in p.buckets:
        raise s.line.error(f"duplicate series {s.name}")
    p.buckets[le] = s.value


def _bucket_bound(s: _Sample) -> float:
    for key, value in s.labels:
        if key == "le":
            if _NUMBER_RE.fullmatch(value) is None or value.lower() in ("nan", "-nan", "+nan"):
                raise s.line.error(f"invalid le {value!r}")
            return float(value)
    raise s.line.error("histogram bucket without an le label")
