"""The README's pictures: the tour's key messages as the demo page shows them, shot by headless Chromium.

    python scripts/screenshots.py [--out docs/img]

runs `proxybot demo --tour` (in this process), then shoots each message of `SHOTS` alone with its thread
open (`/?channel=ID&focus=TS&fixed=1`: every time shown as 09:41, fixed fonts), trims the white below it
and writes PNGs, each with the text it shows beside it (`.txt`). Chromium is Debian's `chromium` package
(scripts/test.sh installs it); the demo itself never needs it. tests/e2e/test_demo_page.py compares the
page's text and pictures with the committed ones: the text exactly, then the pixels.
"""

from __future__ import annotations

import argparse
import difflib
import io
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
from PIL import Image, ImageChops

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "img"
WIDTH = 900
HEIGHT = 3200  # tall enough for the alert, its details, its members' replies and both checks' answers
MARGIN = 8
TOUR_SECONDS = 1000.0
# What a picture shows is decided by the tour's simulated clock and seed, never by the machine or the moment
# (`bot.cli.demo_tour`): its simulated clock starts at the same date every run, the alerting model scrapes,
# evaluates and notifies at its own simulated seconds, and each pictured stop holds its clock once what it
# shows has been notified; its bot tells the time by that clock (stopped at the hold) and reads only the
# held world. Its text is kept beside the picture (`alert-with-thread.txt`) and compared first, exactly:
# a difference there is content. The pixels are compared next: a pixel differs when a channel moves by
# more than PIXEL_DELTA, a picture when more than TOLERANCE of its pixels do (font rendering). The page
# draws every message's own time as 09:41 (`fixed=1`), fonts are fixed and hinting off. Measured before the
# text was held: a row of buttons added to an alert 3.6%, to a storm's summary 5.7%; another picture 66%.
PIXEL_DELTA = 64
TOLERANCE = 0.02
_PAGE = re.compile(r"^page: (http://127\.0\.0\.1:\d+/)", re.MULTILINE)
_CHANNEL = re.compile(r'href="/\?channel=([A-Z0-9]+)"># ([\w-]+)</a>')
_TOP = re.compile(r'<div class="msg" id="m-([0-9.]+)"')


@dataclass(frozen=True)
class Shot:
    """One picture: the first top-level message of `channel` whose HTML holds `marker`."""

    filename: str
    channel: str
    marker: str
    caption: str


SHOTS = (
    Shot("alert-with-thread.png", "tour-target-down", "FIRING: ResourceProxyTargetUnavailable",
         "An alert, its details reply and the answers to Probe now and Path check in its thread"),
    Shot("storm-with-table.png", "tour-storm", "Alert storm", "A storm's summary with its table of targets"),
    Shot("digest-with-charts.png", "tour-digest", "Proxy fleet digest", "The fleet digest with its charts"),
)  # fmt: skip


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        raise SystemExit("chromium is missing: apt-get install chromium (scripts/test.sh does it as root)")
    return found


def _browser(
    *args: str, done: Callable[[bytes], bool], timeout: float = 60.0
) -> subprocess.CompletedProcess[bytes]:
    """Chromium run with `args`; `done(stdout)` says whether what it was asked for is complete, for a
    Chromium that wrote it and then did not exit within `timeout` (seen on a loaded machine): it is
    killed and what it wrote is used."""
    argv = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    argv += ["--force-device-scale-factor=1", "--font-render-hinting=none", "--no-first-run"]
    with tempfile.TemporaryDirectory(prefix="proxybot-chromium-") as profile:
        argv += [f"--user-data-dir={profile}", *args]
        try:
            return subprocess.run(argv, capture_output=True, timeout=timeout, check=True)
        except subprocess.TimeoutExpired as late:  # run() killed it
            out = late.output or b""
            if not done(out):
                raise
            return subprocess.CompletedProcess(argv, 0, out, late.stderr or b"")


def dump_dom(url: str) -> str:
    """The page's DOM after its scripts ran, as Chromium serialises it."""

    def whole(out: bytes) -> bool:
        return out.rstrip().endswith(b"</html>")

    return _browser("--virtual-time-budget=1000", "--dump-dom", url, done=whole).stdout.decode()


def screenshot(url: str, width: int = WIDTH, height: int = HEIGHT) -> Image.Image:
    """The page at `url` in a `width` by `height` window."""
    with tempfile.TemporaryDirectory(prefix="proxybot-shot-") as tmp:
        path = Path(tmp) / "shot.png"

        def written(_: bytes) -> bool:  # a whole PNG ends with its IEND chunk
            return path.exists() and path.read_bytes().endswith(b"IEND\xaeB`\x82")

        _browser(f"--window-size={width},{height}", f"--screenshot={path}", url, done=written)
        with Image.open(path) as shot:
            return shot.convert("RGB")


def trimmed(image: Image.Image) -> Image.Image:
    """The picture down to its content and a margin (the page's white below the message cut)."""
    white = Image.new("RGB", image.size, (255, 255, 255))
    box = ImageChops.difference(image, white).getbbox()
    if box is None:
        raise ValueError("the page is blank")
    return image.crop((0, 0, image.width, min(image.height, box[3] + MARGIN)))


def channels(page_url: str) -> dict[str, str]:
    """The page's channels: name -> ID, read from its sidebar."""
    html = httpx.get(page_url, timeout=10).text
    return {name: cid for cid, name in _CHANNEL.findall(html)}


def message_ts(page_url: str, channel_id: str, marker: str) -> str:
    """The `ts` of the first top-level message of the channel whose HTML holds `marker`."""
    html = httpx.get(page_url, params={"channel": channel_id}, timeout=10).text
    starts = [(m.start(), m.group(1)) for m in _TOP.finditer(html)]
    ends = [at for at, _ in starts[1:]] + [len(html)]
    for (at, ts), end in zip(starts, ends, strict=True):
        if marker in html[at:end]:
            return ts
    raise LookupError(f"no message holding {marker!r} in channel {channel_id}")


def focus_url(page_url: str, channel_id: str, ts: str) -> str:
    return f"{page_url}?channel={channel_id}&focus={ts}&fixed=1"


def shoot(page_url: str, shot: Shot) -> Image.Image:
    """One picture, after checking the page shows the message and no error."""
    cid = channels(page_url)[shot.channel]
    url = focus_url(page_url, cid, message_ts(page_url, cid, shot.marker))
    dom = dump_dom(url)
    if shot.marker not in dom or '<div id="error" class="page-error" hidden' not in dom:
        raise RuntimeError(f"{shot.filename}: the page shows an error or not the message ({url})")
    return trimmed(screenshot(url))


# Elements that start a line of the text a picture shows (the rest flow within one).
_BLOCKS = frozenset(
    {"div", "p", "li", "pre", "h1", "h2", "h3", "tr", "br", "section", "header", "ul", "ol"}
    | {"details", "summary"}  # a thread: its "N replies" a line of its own
)
# Blocks whose elements the page lays apart with a gap (sim/page_static's CSS: `display: flex; gap`), as Slack
# shows a context block's elements and a row of buttons: read apart by a space. (A message's name line stays
# `proxybotAPP09:41`, which tests/harness/story.py splits a thread by.)
_APART = frozenset({"context", "actions"})
_VOID = frozenset({"area", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"})


class _Text(HTMLParser):
    """The text of an HTML fragment as lines: one per block element, children of a gapped container apart,
    blanks dropped, spaces folded."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = [""]
        self._pre = 0
        self._open: list[tuple[str, bool]] = []  # each open element and whether it lays its children apart

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._pre += tag == "pre"
        if tag in _BLOCKS:
            self.lines.append("")
        elif self._open and self._open[-1][1] and self.lines[-1].strip():
            self.lines[-1] += " "
        if tag not in _VOID:
            classes = next((value or "" for name, value in attrs if name == "class"), "").split()
            self._open.append((tag, not _APART.isdisjoint(classes)))

    def handle_endtag(self, tag: str) -> None:
        self._pre -= tag == "pre"
        if tag in _BLOCKS:
            self.lines.append("")
        if any(name == tag for name, _ in self._open):
            while self._open.pop()[0] != tag:
                pass  # an element left open inside it ends with it

    def handle_data(self, data: str) -> None:
        if self._pre:  # a file's preview keeps its lines
            first, *rest = data.split("\n")
            self.lines[-1] += first
            self.lines.extend(rest)
        else:
            self.lines[-1] += data

    def text(self) -> list[str]:
        folded = (" ".join(line.split()) for line in self.lines)
        return [line for line in folded if line]


def page_text(page_url: str, shot: Shot) -> list[str]:
    """The text of what the picture shows (the message and its open thread), line by line, as the page
    serves it: what `shoot` draws, without the drawing."""
    cid = channels(page_url)[shot.channel]
    return message_text(page_url, cid, message_ts(page_url, cid, shot.marker))


def top_level_ts(page_url: str, channel_id: str) -> list[str]:
    """The `ts` of every top-level message of the channel, oldest first."""
    html = httpx.get(page_url, params={"channel": channel_id}, timeout=10).text
    return [m.group(1) for m in _TOP.finditer(html)]


def message_text(page_url: str, channel_id: str, ts: str) -> list[str]:
    """The text of one top-level message and its open thread, line by line, as the page serves it."""
    html = httpx.get(focus_url(page_url, channel_id, ts), timeout=10).text
    start, end = html.index('<div id="messages"'), html.index('<form id="composer"')
    return html_text(html[start:end])


def html_text(html: str) -> list[str]:
    """The text of a fragment of the page, line by line, as the page draws it apart."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    return parser.text()


def first_difference(committed: list[str], shown: list[str]) -> str | None:
    """Where two texts part, as a sentence naming the line (None: the same)."""
    for number, (old, new) in enumerate(zip(committed, shown, strict=False), 1):
        if old != new:
            return f"line {number} was {old!r}, is now {new!r}"
    if len(committed) != len(shown):
        shorter = min(len(committed), len(shown))
        more = shown[shorter:] if len(shown) > shorter else committed[shorter:]
        side = "now also shows" if len(shown) > shorter else "no longer shows"
        return f"after line {shorter} the page {side} {more[0]!r} ({len(more)} lines)"
    return None


def text_path(out: Path, shot: Shot) -> Path:
    """Where the text of a picture is kept, beside it (`alert-with-thread.txt`)."""
    return out / Path(shot.filename).with_suffix(".txt").name


def difference(a: Image.Image, b: Image.Image) -> float:
    """The share of pixels that differ between two pictures, lines matched first: a line inserted (an
    "(edited)" mark) counts its own rows, not every row it pushes down; rows with no match all differ."""
    if a.width != b.width:
        return 1.0
    rows_a, rows_b = _rows(a), _rows(b)
    changed = 0
    matcher = difflib.SequenceMatcher(None, rows_a, rows_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        both = min(i2 - i1, j2 - j1)
        if both:
            changed += _pixels_changed(
                a.crop((0, i1, a.width, i1 + both)), b.crop((0, j1, b.width, j1 + both))
            )
        changed += (max(i2 - i1, j2 - j1) - both) * a.width
    return changed / (max(a.height, b.height) * a.width)


def first_changed_rows(a: Image.Image, b: Image.Image) -> tuple[int, int] | None:
    """The rows of `a` where it first differs from `b` (lines matched as `difference` matches them)."""
    matcher = difflib.SequenceMatcher(None, _rows(a), _rows(b), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        both = min(i2 - i1, j2 - j1)
        if (
            both
            and not _pixels_changed(a.crop((0, i1, a.width, i1 + both)), b.crop((0, j1, b.width, j1 + both)))
            and i2 - i1 == j2 - j1
        ):
            continue  # rows that differ only below PIXEL_DELTA
        return i1, max(i2, i1 + 1)
    return None


def _rows(image: Image.Image) -> list[bytes]:
    data = image.tobytes()
    stride = image.width * 3
    return [data[y * stride : (y + 1) * stride] for y in range(image.height)]


def _pixels_changed(a: Image.Image, b: Image.Image) -> int:
    grey = ImageChops.difference(a, b).convert("L")
    return sum(grey.histogram()[PIXEL_DELTA + 1 :])


def png_bytes(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


class _Output(io.StringIO):
    """The demo's terminal, kept (and echoed to stderr when asked)."""

    def __init__(self, echo: bool) -> None:
        super().__init__()
        self._echo = echo

    def write(self, text: str) -> int:
        if self._echo:
            sys.stderr.write(text)
        return super().write(text)


@contextmanager
def tour(echo: bool = False) -> Iterator[tuple[str, Callable[[], str]]]:
    """`proxybot demo --tour` in this process, held up once it is done: (page URL, its output so far)."""
    from bot.cli.demo import run_demo
    from bot.render.terminal import Style

    out = _Output(echo)
    hold = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            run_demo("target-rolling-restart", None, 0.0, out, Style(False), tour=True, hold=hold)
        except BaseException as err:  # reported to the waiting side
            failed.append(err)

    thread = threading.Thread(target=run, name="demo-tour", daemon=True)
    thread.start()
    try:
        url = _wait(lambda: _PAGE.search(out.getvalue()), 30.0, failed, "the page's URL").group(1)
        _wait(lambda: "the page stays up" in out.getvalue(), TOUR_SECONDS, failed, "the tour's end")
        yield url, out.getvalue
    finally:
        hold.set()
        thread.join(timeout=60)


def _wait(check: Callable[[], Any], seconds: float, failed: list[BaseException], what: str) -> Any:
    deadline = time.monotonic() + seconds
    while not (found := check()):
        if failed:
            raise RuntimeError(f"the demo failed before {what}") from failed[0]
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {what} within {seconds:g}s")
        time.sleep(0.2)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help=f"where the PNGs go (default {OUT})")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tour(echo=False) as (url, _):
        for shot in SHOTS:
            path, text = args.out / shot.filename, text_path(args.out, shot)
            path.write_bytes(png_bytes(shoot(url, shot)))
            text.write_text("\n".join(page_text(url, shot)) + "\n")
            for written in (path, text):
                print(f"wrote {written.relative_to(REPO) if written.is_relative_to(REPO) else written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
