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

import math
import re
from dataclasses import dataclass, field
from itertools import starmap

from bot.domain.snapshot import HISTOGRAMS, PREFIX, Bucket, Histogram, Labels, ProxySnapshot
from bot.errors import MetricsParseError

_METRIC_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*+"
_LABEL_NAME = r"[a-zA-Z_][a-zA-Z0-9_]*+"
# Only `\\`, `\"` and `\n` are escapes in a label value (what client_golang's own parser accepts).
# Written as runs of plain characters between escapes: far faster in `re` than one alternation per character.
_LABEL_TEXT = r'[^"\\]*+(?:\\[\\"n][^"\\]*+)*+'
_LABEL_VALUE = rf'"{_LABEL_TEXT}"'
_PAIR = rf"{_LABEL_NAME}[ \t]*=[ \t]*{_LABEL_VALUE}"
_LABEL_SET = rf"\{{[ \t]*(?:{_PAIR}[ \t]*,[ \t]*)*(?:{_PAIR}[ \t]*)?\}}"
# The numbers Go's strconv.ParseFloat reads (bar hex): NaN, Inf and Infinity in any case, signed infinities.
_FINITE = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_NUMBER = rf"(?:{_FINITE}|[+-]?[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN])"
# OpenMetrics exemplar: ` # {labels} value [timestamp]` after the sample's value and timestamp.
_EXEMPLAR = rf"[ \t]+#[ \t]+{_LABEL_SET}[ \t]*{_NUMBER}(?:[ \t]+{_FINITE})?"

# Matched over the raw page between a line's start and end, so the line is never sliced out.
_SAMPLE_RE = re.compile(
    rf"[ \t]*({_METRIC_NAME})(?:[ \t]*({_LABEL_SET})[ \t]*|[ \t]+)"
    rf"({_NUMBER})(?:[ \t]+{_FINITE})?(?:{_EXEMPLAR})?[ \t\r]*"
)
_PAIR_RE = re.compile(rf'({_LABEL_NAME})[ \t]*=[ \t]*"({_LABEL_TEXT})"')
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


# One parsed proxy sample: name, labels, value, and the offset of its line (for an error message).
_Sample = tuple[str, Labels, float, int]


def _line_at(text: str, start: int) -> str:
    end = text.find("\n", start)
    return text[start : len(text) if end == -1 else end].strip(" \t\r")


def _error(text: str, start: int, reason: str) -> MetricsParseError:
    """The error for the line starting at `start`; only now is its number counted."""
    return MetricsParseError(text.count("\n", 0, start) + 1, _line_at(text, start), reason)


@dataclass(slots=True)
class _HistogramParts:
    """The `_bucket`, `_sum` and `_count` samples of one histogram series, as they are found."""

    first: int
    buckets: dict[float, float] = field(default_factory=dict)
    sum: float | None = None
    count: float | None = None

    def build(self, text: str) -> Histogram:
        # OpenMetrics lets a histogram leave out `_sum` and `_count`; its `+Inf` bucket is the count
        # then, and the sum is unknown (NaN) rather than a made-up zero.
        count = self.buckets.get(math.inf) if self.count is None else self.count
        if count is None:
            raise _error(text, self.first, "histogram series has neither a _count sample nor a +Inf bucket")
        buckets = tuple(starmap(Bucket, sorted(self.buckets.items())))
        return Histogram(buckets=buckets, count=count, sum=math.nan if self.sum is None else self.sum)


def parse_syncer(text: str) -> ProxySnapshot:
    """Every `vcluster_proxy_*` series of a `/metrics/syncer` page (Prometheus text or OpenMetrics).

    Raises MetricsParseError, naming the 1-based line, when a proxy line is malformed or a proxy series
    appears twice. Lines of other families are skipped without being read.
    """
    types: dict[str, str] = {}
    found: list[_Sample] = []
    eof = _eof_offset(text)
    find, rfind, match = text.find, text.rfind, _SAMPLE_RE.fullmatch
    pos = find(PREFIX, 0, eof)
    while pos != -1:
        start = rfind("\n", 0, pos) + 1
        end = find("\n", pos)
        if end == -1:
            end = len(text)
        pos = find(PREFIX, end, eof)
        m = match(text, start, end)
        if m is None:
            _read_other(text, start, types)
            continue
        name, raw, value = m.group(1, 2, 3)
        if name.startswith(PREFIX):
            labels = _labels(raw, text, start) if raw is not None and len(raw) > 2 else ()
            found.append((name, labels, float(value), start))
    _refuse_after_eof(text, eof)
    return _assemble(text, found, types)


def _eof_offset(text: str) -> int:
    """Where OpenMetrics' `# EOF` line starts, or the end of the text when there is none."""
    pos = text.find("# EOF")
    while pos != -1:
        if (pos == 0 or text[pos - 1] == "\n") and _line_at(text, pos) == "# EOF":
            return pos
        pos = text.find("# EOF", pos + 5)
    return len(text)


def _refuse_after_eof(text: str, eof: int) -> None:
    """OpenMetrics ends at `# EOF`: a proxy sample after it is an error, not something to drop quietly."""
    pos = text.find(PREFIX, eof)
    while pos != -1:
        start = text.rfind("\n", 0, pos) + 1
        if _is_proxy_sample(_line_at(text, start)):
            raise _error(text, start, "sample after # EOF")
        end = text.find("\n", pos)
        pos = -1 if end == -1 else text.find(PREFIX, end)


def _read_other(text: str, start: int, types: dict[str, str]) -> None:
    """A line the sample grammar refused: a comment, a malformed proxy line, or none of our business."""
    line = _line_at(text, start)
    if line.startswith("#"):
        _read_comment(text, start, line, types)
    elif _is_proxy_sample(line):
        raise _error(text, start, _diagnose(line))


def _read_comment(text: str, start: int, line: str, types: dict[str, str]) -> None:
    """Record the type a `# TYPE` line gives a proxy family; other comments carry nothing we need."""
    m = _COMMENT_RE.fullmatch(line)
    if m is None or m[1] != "TYPE" or not m[2].startswith(PREFIX):
        return
    family, kind = m[2], m[3]
    if kind not in _TYPES:
        raise _error(text, start, f"unknown metric type {kind!r}" if kind else "TYPE line without a type")
    if types.setdefault(family, kind) != kind:
        raise _error(text, start, f"second TYPE for {family}: {types[family]} then {kind}")


def _is_proxy_sample(line: str) -> bool:
    m = _METRIC_NAME_RE.match(line)
    if m is not None:
        return m[0].startswith(PREFIX)
    # A quoted (UTF-8 style) name is valid text, but no proxy emits one; refuse rather than drop it.
    return _QUOTED_PROXY_NAME_RE.match(line) is not None


def _labels(raw: str, text: str, start: int) -> Labels:
    pairs: list[tuple[str, str]] = _PAIR_RE.findall(raw)
    if "\\" in raw:
        pairs = [(k, _ESCAPE_RE.sub(_unescape, v)) for k, v in pairs]
    if len(dict(pairs)) != len(pairs):
        names = [k for k, _ in pairs]
        twice = next(k for k in names if names.count(k) > 1)
        raise _error(text, start, f"label {twice!r} appears twice")
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


def _assemble(text: str, found: list[_Sample], types: dict[str, str]) -> ProxySnapshot:
    """Sort the samples into histogram series and plain samples; refuse any series seen twice."""
    samples: dict[str, dict[Labels, float]] = {}
    parts: dict[tuple[str, Labels], _HistogramParts] = {}
    roles: dict[str, tuple[str, str] | None] = {}
    bounds: dict[str, float] = {}
    for sample in found:
        name, labels, value, start = sample
        role = roles[name] if name in roles else roles.setdefault(name, _role(name, types))
        if role is not None:
            _add_part(text, parts, role, sample, bounds)
            continue
        series = samples.get(name)
        if series is None:
            series = samples[name] = {}
        elif labels in series:
            raise _error(text, start, f"duplicate series {name}")
        series[labels] = value
    histograms: dict[str, dict[Labels, Histogram]] = {}
    for (family, labels), p in parts.items():
        histograms.setdefault(family, {})[labels] = p.build(text)
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


def _add_part(
    text: str,
    parts: dict[tuple[str, Labels], _HistogramParts],
    role: tuple[str, str],
    sample: _Sample,
    bounds: dict[str, float],
) -> None:
    family, suffix = role
    name, labels, value, start = sample
    le: float | None = None
    if suffix == "_bucket":
        le, labels = _split_bound(text, labels, start, bounds)
    p = parts.get((family, labels))
    if p is None:
        p = parts[family, labels] = _HistogramParts(start)
    if le is not None:
        if le in p.buckets:
            raise _error(text, start, f"duplicate series {name} (le {le})")
        p.buckets[le] = value
    elif (p.sum if suffix == "_sum" else p.count) is not None:
        raise _error(text, start, f"duplicate series {name}")
    elif suffix == "_sum":
        p.sum = value
    else:
        p.count = value


def _split_bound(text: str, labels: Labels, start: int, bounds: dict[str, float]) -> tuple[float, Labels]:
    """A bucket's upper bound, and its labels without `le` (still sorted)."""
    for i, (key, value) in enumerate(labels):
        if key == "le":
            return _bound(text, value, start, bounds), labels[:i] + labels[i + 1 :]
    raise _error(text, start, "histogram bucket without an le label")


def _bound(text: str, value: str, start: int, bounds: dict[str, float]) -> float:
    """An `le` value as a number; `bounds` remembers the valid ones (a page repeats a dozen on every line)."""
    le = bounds.get(value)
    if le is None:
        if _NUMBER_RE.fullmatch(value) is None or value.lower() == "nan":
            raise _error(text, start, f"invalid le {value!r}")
        le = bounds[value] = float(value)
    return le
