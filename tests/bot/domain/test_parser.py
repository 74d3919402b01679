"""parse_syncer on each feature of the text exposition format and each way a proxy line can be malformed."""

from __future__ import annotations

import math

import pytest

from bot.domain.parser import parse_syncer
from bot.domain.snapshot import (
    DIAL_DURATION,
    PEERS,
    REQUEST_DURATION,
    REQUESTS,
    Bucket,
    Histogram,
    make_labels,
)
from bot.errors import MetricsParseError

INF = math.inf
T = ("target", "team/orders")


def sample(page: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return dict(parse_syncer(page).samples[name])


def only_value(page: str, name: str = "vcluster_proxy_x") -> float:
    (value,) = sample(page, name).values()
    return value


# (id, page, sample name, expected {labels: value}); every page holds exactly the series expected.
SAMPLE_CASES = [
    (
        "help_and_type",
        "# HELP vcluster_proxy_peers Peers per state.\n# TYPE vcluster_proxy_peers gauge\n"
        'vcluster_proxy_peers{target="team/orders",group_version="a.io/v1",state="healthy"} 2\n',
        PEERS,
        {make_labels([T, ("group_version", "a.io/v1"), ("state", "healthy")]): 2.0},
    ),
    (
        "no_help_no_type",
        'vcluster_proxy_peers{target="team/orders",state="healthy"} 3\n',
        PEERS,
        {make_labels([T, ("state", "healthy")]): 3.0},
    ),
    (
        "escaped_quote_backslash_newline",
        'vcluster_proxy_x{target="a\\"b\\\\c\\nd"} 1\n',
        "vcluster_proxy_x",
        {(("target", 'a"b\\c\nd'),): 1.0},
    ),
    (
        "escaped_backslash_before_quote_ends_value",
        'vcluster_proxy_x{a="x\\\\",b="y"} 1\n',
        "vcluster_proxy_x",
        {(("a", "x\\"), ("b", "y")): 1.0},
    ),
    (
        "unicode_and_braces_in_value",
        'vcluster_proxy_x{target="ünï/çødé}{,=# 1"} 1\n',
        "vcluster_proxy_x",
        {(("target", "ünï/çødé}{,=# 1"),): 1.0},
    ),
    (
        "labels_in_any_order",
        'vcluster_proxy_request_total{reason="upstream",verb="get",target="team/orders",code="200"} 7\n',
        REQUESTS,
        {make_labels([T, ("verb", "get"), ("code", "200"), ("reason", "upstream")]): 7.0},
    ),
    (
        "trailing_comma",
        'vcluster_proxy_x{a="1",b="2",} 1\n',
        "vcluster_proxy_x",
        {(("a", "1"), ("b", "2")): 1.0},
    ),
    ("empty_label_set", "vcluster_proxy_x{} 4\n", "vcluster_proxy_x", {(): 4.0}),
    ("no_label_set", "vcluster_proxy_x 4\n", "vcluster_proxy_x", {(): 4.0}),
    ("empty_label_value", 'vcluster_proxy_x{a=""} 4\n', "vcluster_proxy_x", {(("a", ""),): 4.0}),
    (
        "blanks_everywhere_allowed",
        '  \tvcluster_proxy_x \t{ a = "1" ,\tb="2" , } \t 4 \t 1700000000000 \t\n',
        "vcluster_proxy_x",
        {(("a", "1"), ("b", "2")): 4.0},
    ),
    (
        "crlf_line_ends",
        'vcluster_proxy_x{a="1"} 4\r\nvcluster_proxy_y 5\r\n',
        "vcluster_proxy_x",
        {(("a", "1"),): 4.0},
    ),
    ("no_final_newline", "vcluster_proxy_x 4", "vcluster_proxy_x", {(): 4.0}),
    ("timestamp_ms", "vcluster_proxy_x 4 1700000000000\n", "vcluster_proxy_x", {(): 4.0}),
    ("negative_timestamp", "vcluster_proxy_x 4 -1000\n", "vcluster_proxy_x", {(): 4.0}),
    ("openmetrics_float_timestamp", "vcluster_proxy_x 4 1700000000.123\n", "vcluster_proxy_x", {(): 4.0}),
    ("blank_lines", "\n\n  \nvcluster_proxy_x 4\n\n\t\n", "vcluster_proxy_x", {(): 4.0}),
    (
        "extra_and_repeated_help_type",
        "# HELP vcluster_proxy_x one\n# HELP vcluster_proxy_x two\n# TYPE vcluster_proxy_x gauge\n"
        "# TYPE vcluster_proxy_x gauge\n# TYPE vcluster_proxy_absent counter\n# just a comment\n"
        "vcluster_proxy_x 4\n",
        "vcluster_proxy_x",
        {(): 4.0},
    ),
    (
        "help_with_any_text",
        '# HELP vcluster_proxy_x has "quotes", \\t and vcluster_proxy_y {\nvcluster_proxy_x 4\n',
        "vcluster_proxy_x",
        {(): 4.0},
    ),
    (
        "openmetrics_counter_with_created",
        "# TYPE vcluster_proxy_request counter\n# UNIT vcluster_proxy_request requests\n"
        'vcluster_proxy_request_total{target="t/a"} 3.0\n'
        'vcluster_proxy_request_created{target="t/a"} 1.7e+09\n# EOF\n',
        "vcluster_proxy_request_created",
        {(("target", "t/a"),): 1.7e9},
    ),
    (
        "openmetrics_exemplar",
        'vcluster_proxy_request_total{target="t/a"} 3 # {trace_id="ab\\"c"} 0.5 1700000000.1\n# EOF\n',
        REQUESTS,
        {(("target", "t/a"),): 3.0},
    ),
    (
        "summary_typed_duration_family_stays_samples",
        "# TYPE vcluster_proxy_request_duration_seconds summary\n"
        'vcluster_proxy_request_duration_seconds{quantile="0.5"} 0.1\n'
        "vcluster_proxy_request_duration_seconds_sum 3\nvcluster_proxy_request_duration_seconds_count 9\n",
        "vcluster_proxy_request_duration_seconds_count",
        {(): 9.0},
    ),
]


@pytest.mark.parametrize(
    ("page", "name", "expected"), [c[1:] for c in SAMPLE_CASES], ids=[c[0] for c in SAMPLE_CASES]
)
def test_samples(page: str, name: str, expected: dict[tuple[tuple[str, str], ...], float]) -> None:
    assert sample(page, name) == expected


VALUE_CASES = [
    ("1", 1.0),
    ("-2.5", -2.5),
    ("1e3", 1000.0),
    ("1.5E-3", 0.0015),
    ("+7", 7.0),
    ("1.", 1.0),
    (".5", 0.5),
    ("-0", -0.0),
    ("1.2345678901234567e+19", 1.2345678901234567e19),
    ("+Inf", INF),
    ("-Inf", -INF),
    ("Inf", INF),
    ("inf", INF),
    ("INF", INF),
    ("+inf", INF),
    ("Infinity", INF),
    ("-infinity", -INF),
]


@pytest.mark.parametrize(("text", "expected"), VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_values(text: str, expected: float) -> None:
    assert only_value(f"vcluster_proxy_x {text}\n") == expected


@pytest.mark.parametrize("text", ["NaN", "nan", "NAN", "nAn"])
def test_nan_values(text: str) -> None:
    assert math.isnan(only_value(f'vcluster_proxy_x{{a="b"}} {text} 1700000000000\n'))


def duration_page(type_line: str = "") -> str:
    series = '{target="team/orders",verb="get"'
    return (
        type_line + f'vcluster_proxy_request_duration_seconds_bucket{series},le="+Inf"}} 10\n'
        f'vcluster_proxy_request_duration_seconds_bucket{{le="0.5",verb="get",target="team/orders"}} 6\n'
        f'vcluster_proxy_request_duration_seconds_bucket{series},le="0.1"}} 2\n'
        f"vcluster_proxy_request_duration_seconds_sum{series}}} 3.5\n"
        f"vcluster_proxy_request_duration_seconds_count{series}}} 10\n"
        f"vcluster_proxy_request_duration_seconds_created{series}}} 1.7e+09\n"
    )


DURATION = Histogram(buckets=(Bucket(0.1, 2.0), Bucket(0.5, 6.0), Bucket(INF, 10.0)), count=10.0, sum=3.5)
GET = make_labels([T, ("verb", "get")])


@pytest.mark.parametrize(
    "type_line",
    [
        "",
        f"# HELP {REQUEST_DURATION} x\n# TYPE {REQUEST_DURATION} histogram\n",
    ],
    ids=["known_family_without_type", "typed"],
)
def test_histogram_buckets_sorted_with_inf_last(type_line: str) -> None:
    snapshot = parse_syncer(duration_page(type_line))
    assert dict(snapshot.histograms[REQUEST_DURATION]) == {GET: DURATION}
    assert dict(snapshot.samples) == {f"{REQUEST_DURATION}_created": {GET: 1.7e9}}


def test_histogram_by_type_line_for_a_family_the_guide_does_not_name() -> None:
    page = (
        "# TYPE vcluster_proxy_new_seconds histogram\n"
        'vcluster_proxy_new_seconds_bucket{le="1"} 1\nvcluster_proxy_new_seconds_bucket{le="Inf"} 2\n'
        "vcluster_proxy_new_seconds_sum 1.5\nvcluster_proxy_new_seconds_count 2\n"
        'vcluster_proxy_untyped_seconds_bucket{le="1"} 1\n'
    )
    snapshot = parse_syncer(page)
    expected = Histogram(buckets=(Bucket(1.0, 1.0), Bucket(INF, 2.0)), count=2.0, sum=1.5)
    assert dict(snapshot.histograms["vcluster_proxy_new_seconds"]) == {(): expected}
    assert dict(snapshot.samples) == {"vcluster_proxy_untyped_seconds_bucket": {(("le", "1"),): 1.0}}


def test_histogram_without_buckets_and_without_inf() -> None:
    page = (
        f'{DIAL_DURATION}_bucket{{target="a/b",le="5"}} 4\n'
        f'{DIAL_DURATION}_sum{{target="a/b"}} 2\n{DIAL_DURATION}_count{{target="a/b"}} 4\n'
        f'{DIAL_DURATION}_sum{{target="c/d"}} 0\n{DIAL_DURATION}_count{{target="c/d"}} 0\n'
    )
    hists = dict(parse_syncer(page).histograms[DIAL_DURATION])
    assert hists == {
        (("target", "a/b"),): Histogram(buckets=(Bucket(5.0, 4.0),), count=4.0, sum=2.0),
        (("target", "c/d"),): Histogram(buckets=(), count=0.0, sum=0.0),
    }
    assert not hists[(("target", "a/b"),)].has_inf


def test_openmetrics_histogram_without_sum_and_count() -> None:
    page = f'{DIAL_DURATION}_bucket{{le="1"}} 1\n{DIAL_DURATION}_bucket{{le="+Inf"}} 3\n# EOF\n'
    (hist,) = parse_syncer(page).histograms[DIAL_DURATION].values()
    assert hist.buckets == (Bucket(1.0, 1.0), Bucket(INF, 3.0))
    assert hist.count == 3.0
    assert math.isnan(hist.sum)


NOISE = (
    "# HELP go_goroutines mentions vcluster_proxy_peers in its help\n"
    "# TYPE go_goroutines gauge\ngo_goroutines 42\n"
    'workqueue_depth{name="vcluster_proxy_peers"} 3\n'
    'workqueue_depth{name="a\\nvcluster_proxy_x 1"} 3\n'
    "this is { not valid at all vcluster_proxy_x\n"
    'controller_runtime_reconcile_total{controller="pod" 1 2 3 \\q vcluster_proxy_peers\n'
    "# TYPE go_gc_duration_seconds bogus\n"
    "xvcluster_proxy_x 1\n"
    'workqueue_adds_total{name="x"} not-a-number\n'
    '{"quoted.name", vcluster_proxy="x"} 1\n'
)


def test_malformed_lines_of_other_families_are_ignored() -> None:
    page = NOISE + "vcluster_proxy_x 4\n" + NOISE
    snapshot = parse_syncer(page)
    assert dict(snapshot.samples) == {"vcluster_proxy_x": {(): 4.0}}
    assert dict(snapshot.histograms) == {}


def test_page_without_proxy_series_is_empty() -> None:
    snapshot = parse_syncer(NOISE)
    assert (dict(snapshot.samples), dict(snapshot.histograms)) == ({}, {})
    assert parse_syncer("") == snapshot


def test_eof_only_counts_as_a_whole_line() -> None:
    page = "# HELP vcluster_proxy_x ends like # EOF\n# TYPE vcluster_proxy_x gauge\nvcluster_proxy_x 4\n"
    assert sample(page, "vcluster_proxy_x") == {(): 4.0}


def test_eof_ends_the_page_for_comments() -> None:
    page = "vcluster_proxy_x 4\n# EOF\n# TYPE vcluster_proxy_request_duration_seconds summary\n"
    assert sample(page, "vcluster_proxy_x") == {(): 4.0}


# (id, page, line number, words in the reason); the bad line is never the first, to check the count.
ERROR_CASES = [
    ("bad_value", "go_x 1\n\nvcluster_proxy_x abc\n", 3, "invalid value 'abc'"),
    ("underscore_in_value", "go_x 1\nvcluster_proxy_x 1_000\n", 2, "invalid value '1_000'"),
    ("signed_nan", "go_x 1\nvcluster_proxy_x -NaN\n", 2, "invalid value '-NaN'"),
    ("hex_value", "go_x 1\nvcluster_proxy_x 0x10\n", 2, "invalid value '0x10'"),
    ("missing_value", 'go_x 1\nvcluster_proxy_x{a="b"}\n', 2, "missing value"),
    ("name_only", "go_x 1\nvcluster_proxy_x\n", 2, "missing value"),
    ("unterminated_quote", 'go_x 1\nvcluster_proxy_x{a="b} 1\n', 2, "unterminated quoted value of label 'a'"),
    ("unterminated_label_set", 'go_x 1\nvcluster_proxy_x{a="b" 1\n', 2, "expected ',' or '}'"),
    ("label_set_not_closed", 'go_x 1\nvcluster_proxy_x{a="b",\n', 2, "label set is not closed"),
    ("bad_escape", 'go_x 1\nvcluster_proxy_x{a="\\t"} 1\n', 2, "invalid escape '\\t'"),
    ("backslash_at_end", 'go_x 1\nvcluster_proxy_x{a="\\', 2, "invalid escape"),
    ("unquoted_label_value", "go_x 1\nvcluster_proxy_x{a=b} 1\n", 2, "value of label 'a' is not quoted"),
    ("missing_equals", 'go_x 1\nvcluster_proxy_x{a "b"} 1\n', 2, "expected '=' after label 'a'"),
    ("leading_comma", 'go_x 1\nvcluster_proxy_x{,a="b"} 1\n', 2, "expected a label name"),
    ("double_comma", 'go_x 1\nvcluster_proxy_x{a="b",,c="d"} 1\n', 2, "expected a label name"),
    ("bad_label_name", 'go_x 1\nvcluster_proxy_x{1a="b"} 1\n', 2, "expected a label name"),
    ("duplicate_label", 'go_x 1\nvcluster_proxy_x{a="b",a="c"} 1\n', 2, "label 'a' appears twice"),
    ("garbage_after_value", "go_x 1\nvcluster_proxy_x 1 abc\n", 2, "unexpected text after value: 'abc'"),
    ("garbage_after_timestamp", "go_x 1\nvcluster_proxy_x 1 2 3\n", 2, "unexpected text after timestamp"),
    ("comment_after_value", "go_x 1\nvcluster_proxy_x 1 # note\n", 2, "malformed exemplar"),
    ("bad_char_in_name", "go_x 1\nvcluster_proxy_x-y 1\n", 2, "invalid character '-'"),
    ("quoted_name", 'go_x 1\n{"vcluster_proxy_x"} 1\n', 2, "quoted metric names are not supported"),
    (
        "duplicate_series",
        'vcluster_proxy_x{a="1",b="2"} 1\ngo_x 1\nvcluster_proxy_x{b="2",a="1"} 2\n',
        3,
        "duplicate",
    ),
    ("missing_le", f'go_x 1\n{REQUEST_DURATION}_bucket{{verb="get"}} 1\n', 2, "without an le label"),
    ("bad_le", f'go_x 1\n{REQUEST_DURATION}_bucket{{le="soon"}} 1\n', 2, "invalid le 'soon'"),
    ("nan_le", f'go_x 1\n{REQUEST_DURATION}_bucket{{le="NaN"}} 1\n', 2, "invalid le 'NaN'"),
    (
        "duplicate_bucket",
        f'{REQUEST_DURATION}_bucket{{le="1"}} 1\n{REQUEST_DURATION}_bucket{{le="1.0"}} 1\n',
        2,
        "duplicate series",
    ),
    (
        "duplicate_sum",
        f"{REQUEST_DURATION}_sum 1\n{REQUEST_DURATION}_count 1\n{REQUEST_DURATION}_sum 1\n",
        3,
        "dup",
    ),
    (
        "histogram_without_count_or_inf",
        f'go_x 1\n{DIAL_DURATION}_bucket{{le="1"}} 1\n{DIAL_DURATION}_sum 1\n',
        2,
        "_count",
    ),
    (
        "histogram_of_sum_only",
        f"go_x 1\n{DIAL_DURATION}_sum 1\n",
        2,
        "neither a _count sample nor a +Inf bucket",
    ),
    ("unknown_type", "go_x 1\n# TYPE vcluster_proxy_x countr\n", 2, "unknown metric type 'countr'"),
    ("type_without_type", "go_x 1\n# TYPE vcluster_proxy_x\n", 2, "TYPE line without a type"),
    (
        "conflicting_types",
        "# TYPE vcluster_proxy_x gauge\n# TYPE vcluster_proxy_x counter\n",
        2,
        "second TYPE",
    ),
    ("sample_after_eof", "vcluster_proxy_x 1\n# EOF\ngo_x 1\nvcluster_proxy_y 1\n", 4, "sample after # EOF"),
]


@pytest.mark.parametrize(
    ("page", "line_number", "reason"), [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES]
)
def test_malformed_proxy_lines(page: str, line_number: int, reason: str) -> None:
    with pytest.raises(MetricsParseError) as caught:
        parse_syncer(page)
    assert caught.value.line_number == line_number
    assert reason in caught.value.reason
    assert caught.value.line == page.split("\n")[line_number - 1].strip()
    assert f"line {line_number}: " in str(caught.value)


def test_error_line_number_counts_every_line_before_it() -> None:
    page = "".join(f'go_x{{i="{i}"}} {i}\n' for i in range(999)) + "\n# c\nvcluster_proxy_x nope\n"
    with pytest.raises(MetricsParseError) as caught:
        parse_syncer(page)
    assert caught.value.line_number == 1002
