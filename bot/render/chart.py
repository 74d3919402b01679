"""A chart -> a PNG for a Slack thread: readable as a thumbnail, colour-blind safe, UTC.

    Chart(key, title, y_label, lines, span, end)   what one chart shows (the digest's charts are these)
    draw(chart)                                    its PNG (`figure_of(chart)` saved)
    has_line(chart)                                whether it draws a line at all (a lone point is none)
    render_chart(lines, title, now, ...)           the same for a caller holding the parts (alert charts)

Drawn with matplotlib's object API on the Agg canvas (no pyplot, no display, no global state), so charts
can be rendered from worker threads. The same inputs give the same bytes: the PNG carries no timestamp
or version metadata, and the bundled DejaVu font is used. matplotlib is imported by the first drawing, not
with this module: `serve` draws its charts in its worker processes (`bot.digest.pool`), and the import
was a third of its start.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from bot.domain.enrichment import TimeSeries

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# Okabe & Ito's palette: distinguishable with every common colour-vision deficiency.
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000")
# Line styles cycle too, so lines stay apart in greyscale and for readers who cannot tell two colours.
LINE_STYLES = ("-", "--", "-.", ":")
MAX_LINES = len(OKABE_ITO)
SIZE_INCHES = (8.0, 4.0)
DPI = 100
FONT_SIZE = 13
TITLE_SIZE = 15
DEFAULT_SPAN = timedelta(hours=1)
# Neither a timestamp nor matplotlib's version: identical inputs give identical files.
_PNG_METADATA: dict[str, str | None] = {"Software": None}


@dataclass(frozen=True)
class Chart:
    """What one chart shows: its lines over the `span` seconds up to `end` (unix seconds); `key` names it.

    `counts`: the quantity is a count (whole-number ticks, and an axis up to 1 at least, never 0.00-0.05);
    `absent`: why there is nothing to show, in words said instead of posting the chart (None: it shows)."""

    key: str
    title: str
    y_label: str
    lines: tuple[TimeSeries, ...]
    span: float
    end: float
    counts: bool = False
    absent: str | None = None


def has_line(chart: Chart) -> bool:
    """Whether some line has two drawable points: one point alone is a dot at an edge, not a history."""
    return any(len(_finite(line.points)) >= 2 for line in chart.lines)


def draw(chart: Chart) -> bytes:
    """A PNG of the chart in UTC; says "no data" when there is nothing to draw."""
    buffer = io.BytesIO()
    figure_of(chart).savefig(buffer, format="png", dpi=DPI, metadata=_PNG_METADATA)
    return buffer.getvalue()


def figure_of(chart: Chart) -> Figure:
    """The chart as a matplotlib figure on the Agg canvas, laid out (what `draw` saves)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    end = datetime.fromtimestamp(chart.end, UTC)
    figure = Figure(figsize=SIZE_INCHES, dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    drawable = [s for s in chart.lines if _finite(s.points)]
    shown = sorted(drawable, key=_peak, reverse=True)[:MAX_LINES]
    for index, line in enumerate(sorted(shown, key=lambda s: s.name)):
        _plot(axes, line, index)
    _decorate(axes, chart.title, chart.y_label, end - timedelta(seconds=chart.span), end)
    if chart.counts:
        _count_axis(axes)
    if not shown:
        axes.text(0.5, 0.5, "no data", transform=axes.transAxes, ha="center", va="center", fontsize=20)
    else:
        _legend(axes, len(drawable) - len(shown))
    figure.tight_layout()
    return figure


def render_chart(
    series: Sequence[TimeSeries],
    title: str,
    now: datetime,
    *,
    y_label: str = "value",
    span: timedelta = DEFAULT_SPAN,
) -> bytes:
    """A PNG of `series` over the `span` before `now` (UTC): `draw` of that chart."""
    return draw(Chart("chart", title, y_label, tuple(series), span.total_seconds(), now.timestamp()))


def _finite(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    # NaN is Prometheus' "no value" (e.g. a rate of nothing); it leaves a gap, never a crash.
    return [(t, v) for t, v in points if v == v and abs(v) != float("inf")]


def _day_number(unix_seconds: float) -> float:
    """Matplotlib's date axis unit: days since its epoch, 1970-01-01 UTC."""
    return unix_seconds / 86400.0


def _peak(line: TimeSeries) -> float:
    return max(v for _, v in _finite(line.points))


def _plot(axes: Axes, line: TimeSeries, index: int) -> None:
    points = sorted(line.points)
    times = [_day_number(t) for t, _ in points]
    values = [v if v == v and abs(v) != float("inf") else float("nan") for _, v in points]
    axes.plot(
        times,
        values,
        label=line.name,
        color=OKABE_ITO[index % len(OKABE_ITO)],
        linestyle=LINE_STYLES[index % len(LINE_STYLES)],
        linewidth=2.5,
        marker="o" if len(points) == 1 else None,
    )


def _decorate(axes: Axes, title: str, y_label: str, start: datetime, end: datetime) -> None:
    from matplotlib.dates import AutoDateLocator, DateFormatter

    axes.set_title(title, fontsize=TITLE_SIZE, loc="left")
    axes.set_xlabel("time (UTC)", fontsize=FONT_SIZE)
    axes.set_ylabel(y_label, fontsize=FONT_SIZE)
    axes.set_xlim(_day_number(start.timestamp()), _day_number(end.timestamp()))
    axes.set_ylim(bottom=0)
    axes.xaxis.set_major_locator(AutoDateLocator(tz=UTC, maxticks=7))  # type: ignore[no-untyped-call]
    axes.xaxis.set_major_formatter(DateFormatter("%H:%M", tz=UTC))  # type: ignore[no-untyped-call]
    axes.tick_params(labelsize=FONT_SIZE)
    axes.grid(True, alpha=0.3)


def _count_axis(axes: Axes) -> None:
    from matplotlib.ticker import MaxNLocator

    axes.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylim(0, max(1.0, axes.get_ylim()[1]))


def _legend(axes: Axes, hidden: int) -> None:
    from matplotlib.font_manager import FontProperties

    legend = axes.legend(fontsize=FONT_SIZE - 2, loc="best", framealpha=0.85)
    if hidden > 0:
        legend.set_title(f"+{hidden} more not drawn", prop=FontProperties(size=FONT_SIZE - 3))
