"""draw / render_chart: a valid, readable, deterministic PNG; "no data" instead of a crash."""

from __future__ import annotations

import io
import math
import struct
from datetime import UTC, datetime, timedelta, timezone

import numpy as np
import numpy.typing as npt
import pytest
from matplotlib.image import imread

from bot.domain.enrichment import TimeSeries
from bot.render.chart import (
    DPI,
    MAX_LINES,
    OKABE_ITO,
    SIZE_INCHES,
    Chart,
    draw,
    figure_of,
    has_line,
    render_chart,
)

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
START = NOW.timestamp() - 3600
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def step_down(name: str, high: float, at: int) -> TimeSeries:
    return TimeSeries(name, tuple((START + i * 30, high if i < at else 0.0) for i in range(121)))


def size_of(png: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", png[16:24])  # the IHDR chunk follows the signature
    return width, height


def pixels(png: bytes) -> npt.NDArray[np.float32]:
    image: npt.NDArray[np.float32] = imread(io.BytesIO(png), format="png")
    return image


TWO_LINES = [step_down("example.com/v1", 2, 60), step_down("data.example.com/v1alpha1", 1, 80)]


def test_a_chart_is_a_png_of_the_expected_size() -> None:
    png = render_chart(TWO_LINES, "platform/crd-store: healthy peers", NOW, y_label="healthy peers")
    assert png.startswith(PNG_SIGNATURE)
    assert size_of(png) == (int(SIZE_INCHES[0] * DPI), int(SIZE_INCHES[1] * DPI))
    assert 5_000 <= len(png) <= 300_000


def test_the_same_inputs_give_the_same_bytes() -> None:
    first = render_chart(TWO_LINES, "t", NOW, y_label="healthy peers")
    assert render_chart(list(TWO_LINES), "t", NOW, y_label="healthy peers") == first
    assert render_chart(TWO_LINES, "t", NOW, y_label="peers") != first


def test_empty_series_say_no_data_instead_of_crashing() -> None:
    empty = render_chart([], "platform/crd-store: failing requests", NOW, y_label="requests per second")
    only_gaps = render_chart([TimeSeries("nan", ((START, math.nan), (START + 30, math.inf)))], "x", NOW)
    assert empty.startswith(PNG_SIGNATURE)
    assert only_gaps.startswith(PNG_SIGNATURE)
    # Drawing lines changes the picture; "no data" is a different picture from a chart with lines.
    assert empty != render_chart(
        TWO_LINES, "platform/crd-store: failing requests", NOW, y_label="requests per second"
    )


@pytest.mark.parametrize("count", [1, MAX_LINES + 4])
def test_any_number_of_lines_renders(count: int) -> None:
    lines = [step_down(f"reason-{i}", i + 1, 10 * i) for i in range(count)]
    png = render_chart(lines, "many", NOW)
    assert png.startswith(PNG_SIGNATURE)


def test_a_single_point_and_gaps_render() -> None:
    lines = [
        TimeSeries("one", ((START + 60, 3.0),)),
        TimeSeries("gappy", ((START, 1.0), (START + 30, math.nan), (START + 60, 2.0))),
    ]
    assert render_chart(lines, "sparse", NOW).startswith(PNG_SIGNATURE)


def test_times_are_utc_whatever_the_zone_of_now() -> None:
    elsewhere = NOW.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert render_chart(TWO_LINES, "t", elsewhere) == render_chart(TWO_LINES, "t", NOW)


def test_lines_are_drawn_in_the_colour_blind_safe_palette() -> None:
    image = pixels(render_chart(TWO_LINES, "t", NOW))
    for colour in OKABE_ITO[:2]:
        rgb = np.array([int(colour[k : k + 2], 16) / 255 for k in (1, 3, 5)])
        assert np.any(np.all(np.abs(image[:, :, :3] - rgb) < 0.01, axis=2)), colour
    blank = pixels(render_chart([], "t", NOW))
    first = np.array([int(OKABE_ITO[0][k : k + 2], 16) / 255 for k in (1, 3, 5)])
    assert not np.any(np.all(np.abs(blank[:, :, :3] - first) < 0.01, axis=2))


def test_a_chart_draws_as_render_chart_draws_its_parts() -> None:
    chart = Chart("peers", "t", "healthy peers", tuple(TWO_LINES), 3600.0, NOW.timestamp())
    assert draw(chart) == render_chart(TWO_LINES, "t", NOW, y_label="healthy peers")
    assert draw(chart) != draw(
        Chart("peers", "t", "healthy peers", tuple(TWO_LINES), 7200.0, NOW.timestamp())
    )


def flat_zero(name: str) -> TimeSeries:
    return TimeSeries(name, tuple((START + i * 600, 0.0) for i in range(7)))


@pytest.mark.parametrize(
    "lines",
    [(flat_zero("platform/crd-store"),), (step_down("a", 3, 3), step_down("b", 1, 5))],
    ids=["all zero", "a few"],
)
def test_a_count_axis_has_whole_number_ticks(lines: tuple[TimeSeries, ...]) -> None:
    chart = Chart("peers", "t", "healthy peers", lines, 3600.0, NOW.timestamp(), counts=True)
    axes = figure_of(chart).axes[0]
    ticks = [t for t in axes.get_yticks() if axes.get_ylim()[0] <= t <= axes.get_ylim()[1]]
    assert len(ticks) >= 2
    assert all(t == int(t) for t in ticks)
    assert axes.get_ylim()[1] >= 1.0  # zero healthy peers is not drawn on a 0.00-0.05 axis


def test_a_rate_axis_keeps_its_fractions() -> None:
    chart = Chart("r", "t", "requests per minute", (flat_zero("x"),), 3600.0, NOW.timestamp())
    assert any(t != int(t) for t in figure_of(chart).axes[0].get_yticks())


def test_a_line_needs_two_drawable_points() -> None:
    def chart(*lines: TimeSeries) -> Chart:
        return Chart("c", "t", "y", lines, 3600.0, NOW.timestamp())

    assert not has_line(chart())
    assert not has_line(chart(TimeSeries("one", ((NOW.timestamp(), 0.0),))))
    assert not has_line(chart(TimeSeries("gaps", ((START, 1.0), (START + 30, math.nan)))))
    assert has_line(
        chart(TimeSeries("one", ((START, 1.0),)), TimeSeries("two", ((START, 1.0), (START + 60, 2.0))))
    )
