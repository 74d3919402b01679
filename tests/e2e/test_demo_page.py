"""The demo's page in a real browser (Debian's headless Chromium): the tour as Slack lays it out, a button
pressed and answered on it, the README's pictures still what the page shows, and outside text as text.

One `proxybot demo --tour` serves every test of the tour (module scope): it runs once, in this process, and
is held up (its last bot behind the page) until the module is done.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from bot.cli.demo_tour import SILENCE_COMMENT
from sim.server import SimServer
from sim.slack_api import FakeSlack
from sim.slack_page import SlackPage
from tests.e2e import screenshots
from tests.e2e.stack import (
    BOT_TOKEN,
    CHANNEL,
    SIGNING_SECRET,
    BotProcess,
    alert_entry,
    auth,
    notification,
    now,
    wait_until,
    write_bot_config,
)
from tests.harness.story import page_threads, problems

REPO = Path(__file__).resolve().parents[2]
TIMEOUT = 30.0
_TOP = re.compile(r'<div class="msg" id="m-([0-9.]+)" data-ts="[0-9.]+">')


shots = screenshots.load()


class Tour:
    """The running tour: its page, its terminal so far, and the page's DOM per channel name."""

    def __init__(self, url: str, output: Callable[[], str]) -> None:
        self.url = url
        self.output = output
        self.channels: dict[str, str] = shots.channels(url)

    def dom(self, channel: str) -> str:
        return str(shots.dump_dom(f"{self.url}?channel={self.channels[channel]}"))

    def state(self, channel: str) -> str:
        answer = httpx.get(self.url + "page/state", params={"channel": self.channels[channel]}, timeout=10)
        return str(answer.json()["html"])


@pytest.fixture(scope="module")
def tour() -> Iterator[Tour]:
    with shots.tour() as (url, output):
        yield Tour(url, output)


def top_messages(html: str) -> list[tuple[str, str]]:
    """(ts, HTML) of each top-level message, in order."""
    starts = [(m.start(), m.group(1)) for m in _TOP.finditer(html)]
    ends = [at for at, _ in starts[1:]] + [len(html)]
    return [(ts, html[at:end]) for (at, ts), end in zip(starts, ends, strict=True)]


@pytest.mark.slow
def test_the_tour_announces_every_stop_and_reaches_each_goal(tour: Tour) -> None:
    out = tour.output()
    assert out.splitlines()[1].startswith(f"page: {tour.url}")  # the page's URL comes first
    titles = (
        "restart that heals",
        "target down",
        "peer watch",
        "four clients",
        "vcluster.yaml changed",
        "flapping",
        "storm",
        "digest",
    )
    for i, title in enumerate(titles, 1):
        assert re.search(rf"══ tour {i}/{len(titles)}: [^\n]*{title}", out), title
    assert "fleet changed on the platform: team-a; the bot is rebuilt over it" in out
    assert "are up before" not in out
    assert "── pressed *Probe now* on the page" in out
    assert "── pressed *Acknowledge* on the page" in out
    assert "👀 Acknowledged by" in out, "the acknowledged message, printed as edited"
    assert "── pressed *Silence…* on the page" in out
    assert "── submitted the modal on the page (a signed view_submission to the bot)" in out
    shown = " ".join(out.split())  # the terminal wraps long lines
    # Until 4 h from now: a time of day, dated when that is tomorrow (a tour begun after 20:00 UTC).
    until = r"(?:\d{4}-\d\d-\d\d )?\d\d:\d\d UTC"
    assert re.search(rf"🔕 Silenced by \S+ until {until}: {re.escape(SILENCE_COMMENT)}", shown)
    # The silence as the stop's Alertmanager (the stand-in) lists it: the page's user, the comment.
    listed = r"── Alertmanager lists silence [0-9a-f-]{36} \([^)]*target=platform/crd-store[^)]*\)"
    assert re.search(rf"{listed} by you \(Slack U0DEMO001\): {re.escape(SILENCE_COMMENT)}", shown)
    assert "── typed `/proxy digest` in the page's command box" in out


@pytest.mark.slow
def test_the_page_shows_the_alert_its_edit_thread_buttons_table_and_chart(tour: Tour) -> None:
    alert = tour.dom("tour-target-down")
    [(_, first), *_] = top_messages(alert)
    assert "FIRING: ResourceProxyTargetUnavailable · platform/crd-store" in first
    assert '<span class="edited">(edited)</span>' in first
    assert re.search(r'<span class="reply-count">\d+ replies</span>', first)
    assert re.search(r'<button type="button" class="btn" data-action="[^"]*proxy_probe[^"]*"', first)
    assert "Probe platform/crd-store:" in first  # the button's answer, in the thread
    assert "Path platform/crd-store:" in first
    assert "👀 Acknowledged by" in first
    assert "🔕 Silenced by" in first
    assert "Expire silence" in first
    # The other stops as the page's script gets them (one browser run less each).
    assert "RESOLVED: ResourceProxyTargetUnavailable" in tour.state("tour-restart")
    assert "one cause:" in tour.state("tour-incident")
    assert "lapping: " in tour.state("tour-flapping")
    storm = tour.dom("tour-storm")
    assert "Alert storm: " in storm
    table = re.search(r'<table class="table">(.*?)</table>', storm, re.DOTALL)  # Slack's own table block
    assert table is not None
    assert re.search(r"<td[^>]*><b>CLUSTER</b></td>\s*<td[^>]*><b>TARGET</b></td>", table.group(1))
    assert "platform/shard-00" in table.group(1)
    digest = tour.dom("tour-digest")
    assert "Proxy fleet digest" in digest
    # The stop's simulated day before (bot/cli/demo.py's past day): both charts drawn, none said in words.
    assert "not charted" not in digest
    assert "No failing requests" not in digest
    charts = re.findall(r'<img class="file-image" src="(/page/files/F\d+)" alt="([^"]*)"', digest)
    titles = [title for _, title in charts]
    peers, reasons = "Healthy peers of the targets not healthy now", "Failing requests by reason, fleet-wide"
    assert titles == [peers, reasons]
    # The night's incident went through the bot (acknowledged on the page, resolved): both times numeric.
    assert re.search(r"Time to acknowledge: median [^.]+, p90 [^.]+\. Time to resolve: median", digest)
    for src, _ in charts:
        with Image.open(io.BytesIO(httpx.get(tour.url + src[1:], timeout=10).content)) as chart:
            chart.load()
            assert chart.width > 200
    assert '<div id="error" class="page-error" hidden=""></div>' in digest
    assert 'data-script="running"' in digest  # the page's script ran (and found nothing to complain of)


@pytest.mark.slow
def test_every_message_of_the_tour_tells_one_story(tour: Tour) -> None:
    """Issue 35's invariant table (tests.harness.story) over every message the tour posted, as shown."""
    threads = [
        page_threads(f"#{name} {ts}", shots.message_text(tour.url, cid, ts))
        for name, cid in tour.channels.items()
        for ts in shots.top_level_ts(tour.url, cid)
    ]
    # Every stop posted into its channel (how many messages a stop posts may vary with the machine).
    assert {t.where.split(" ")[0] for t in threads} == {f"#{name}" for name in tour.channels}
    found = problems(threads)
    assert not found, "\n".join(found)
    # One message per flapping target: its alerts are one incident, its flaps a count on it.
    assert len(shots.top_level_ts(tour.url, tour.channels["tour-flapping"])) == 1
    # One message for the target four clients use: the three clients cut off, the fourth still healthy.
    [shared] = shots.top_level_ts(tour.url, tour.channels["tour-shared"])
    told = shots.message_text(tour.url, tour.channels["tour-shared"], shared)
    assert "3 of 4 clients cannot reach platform/crd-store" in " ".join(told)


@pytest.mark.slow
def test_the_live_page_renders_in_a_browser(tour: Tour) -> None:
    shot = shots.screenshot(f"{tour.url}?channel={tour.channels['tour-storm']}", 1200, 900)
    assert shot.size == (1200, 900)
    assert len(shot.getcolors(maxcolors=1 << 16) or range(1 << 16)) > 50  # not blank: text, sidebar


@pytest.mark.slow
def test_probe_now_pressed_on_the_page_is_answered_on_the_page(tour: Tour) -> None:
    # The digest stop's bot is the one still running behind the page.
    html = tour.state("tour-digest")
    ts, alert = next((ts, m) for ts, m in top_messages(html) if "proxy_probe" in m)
    block = re.search(r"data-action=\"([^\"]*proxy_probe[^\"]*)\"", alert)
    assert block is not None
    about = json.loads(block.group(1).replace("&quot;", '"'))
    answers = alert.count("Probe platform/crd-store:")
    # What page.js sends for a click: the channel, the message and which control.
    press = {"channel": tour.channels["tour-digest"], "ts": ts, "block_id": about["block_id"]}
    press |= {"action_id": about["action_id"], "option": None}
    answer = httpx.post(tour.url + "page/action", json=press, timeout=10)
    assert answer.json() == {"ok": True, "status": 200}

    def answered() -> bool:
        now_html = dict(top_messages(tour.state("tour-digest")))[ts]
        return now_html.count("Probe platform/crd-store:") > answers

    wait_until(answered, TIMEOUT, "the probe's answer in the alert's thread")
    assert tour.dom("tour-digest").count("Probe platform/crd-store:") > answers


@pytest.mark.slow
def test_the_command_box_is_answered_only_to_the_asker(tour: Tour) -> None:
    typed = {"channel": tour.channels["tour-digest"], "text": "status"}
    assert httpx.post(tour.url + "page/command", json=typed, timeout=10).json()["ok"] is True
    wait_until(lambda: "Only visible to you" in tour.state("tour-digest"), TIMEOUT, "the /proxy answer")
    dom = tour.dom("tour-digest")
    answer = dom[dom.index('<div class="msg answer ephemeral">') :]
    assert "platform/crd-store" in answer


@pytest.mark.slow
@pytest.mark.parametrize("shot", shots.SHOTS, ids=lambda s: s.filename)
def test_the_readme_pictures_are_what_the_page_shows(tour: Tour, shot: Any, tmp_path: Path) -> None:
    """What a picture shows is decided by the tour's simulated clock and seed: its text first, exactly
    (content), then its pixels, within the tolerance of font rendering (drawing)."""
    img = REPO / "docs" / "img"
    committed, text = img / shot.filename, shots.text_path(img, shot)
    for path in (committed, text):
        assert path.exists(), f"{path} is missing: python scripts/screenshots.py makes it"
    assert f"docs/img/{shot.filename}" in (REPO / "README.md").read_text()
    shown = shots.page_text(tour.url, shot)
    (tmp_path / text.name).write_text("\n".join(shown) + "\n")
    differs = shots.first_difference(text.read_text().splitlines(), shown)
    assert differs is None, (
        f"{shot.filename}: the page's text differs from docs/img/{text.name} ({tmp_path / text.name}): "
        f"{differs}. If the change is meant, run python scripts/screenshots.py"
    )
    fresh = shots.shoot(tour.url, shot)
    with Image.open(committed) as old:
        drawn = old.convert("RGB")
    changed = shots.difference(drawn, fresh)
    if changed > shots.TOLERANCE:
        (tmp_path / shot.filename).write_bytes(shots.png_bytes(fresh))
    assert changed <= shots.TOLERANCE, (
        f"{shot.filename}: the same text, drawn differently: {changed:.1%} of its pixels differ, first at "
        f"rows {shots.first_changed_rows(drawn, fresh)} of the committed picture "
        f"({tmp_path / shot.filename}): run python scripts/screenshots.py"
    )


# -- outside text -------------------------------------------------------------------------------------------

HOSTILE = {
    "alertname": "<img src=x onerror=alert(1)>",
    "cluster": "team-a",
    "target": "platform/crd-store",
    "severity": "warning",
    "team": "<script>alert(2)</script>",
}
HOSTILE_SUMMARY = (
    "<script>alert(3)</script> see <javascript:alert(4)|the runbook> <a href=javascript:alert(5)>x</a>"
)


@pytest.fixture(scope="module")
def hostile_page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeSlack, SlackPage, str]]:
    workdir = tmp_path_factory.mktemp("hostile")
    slack = FakeSlack(bot_token=BOT_TOKEN, channels=[CHANNEL])
    page = SlackPage(slack)
    with SimServer(scenario="healthy", speed=20) as sim, slack:
        config = write_bot_config(sim, workdir, slack.api_url)
        with BotProcess(config, workdir / "bot.log") as bot:
            page.connect(f"{bot.url}/slack/events", SIGNING_SECRET)
            entry = alert_entry(HOSTILE, now())
            entry["annotations"] = {"summary": HOSTILE_SUMMARY, "description": HOSTILE_SUMMARY}
            body = json.dumps(notification([entry])).encode()
            headers = {**auth(), "Content-Type": "application/json"}
            assert (
                httpx.post(f"{bot.url}/alertmanager", content=body, headers=headers, timeout=10).status_code
                < 300
            )
            wait_until(lambda: slack.top_level(CHANNEL), TIMEOUT, "the hostile alert's post")
            yield slack, page, slack.channel_id(CHANNEL)


class Elements(HTMLParser):
    """Every element of a DOM with its attributes, and the text it shows."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.mark.slow
def test_alert_labels_holding_markup_show_as_text(hostile_page: tuple[FakeSlack, SlackPage, str]) -> None:
    _, page, channel = hostile_page
    dom = shots.dump_dom(f"{page.url}?channel={channel}")
    messages = Elements(dom[dom.index('<div id="messages"') : dom.index('<form id="composer"')])
    tags = {tag for tag, _ in messages.elements}
    assert not tags & {"script", "img", "iframe", "object", "svg"}
    for _, attrs in messages.elements:
        assert not [name for name in attrs if name.startswith("on")]
        for name in ("href", "src"):
            assert not (attrs.get(name) or "").lower().startswith(("javascript:", "data:"))
    shown = "".join(messages.text)
    assert "<img src=x onerror=alert(1)>" in shown
    assert "<script>alert(3)</script>" in shown
    assert Elements(dom).elements.count(("script", {"src": "/page/static/page.js", "defer": ""})) == 1
