"""What the Slack-side fault tests share: a switch that cuts the fake Slack off, the storm as webhooks sent
(and re-sent, as Alertmanager retries), and what must hold once it is over.

What must hold, whatever the fault: nothing answered 2xx is lost (every accepted notification is stored and
shown in Slack in its final state), nothing is answered 2xx that was not stored, each group's changes reach
Slack in their order, no top-level message is posted twice, and the bot never crashes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Self

import httpx

from bench.loadgen import LoadRun, Outcome
from sim.slack_api import FakeSlack, Message, iter_texts
from tests.e2e.stack import CHANNEL, BotProcess, StoreView, auth, text_of
from tests.e2e.storm_load import storm_bodies, storm_plan, storm_target
from tests.waiting import WaitTimeout, wait_until

# A storm group's second notification adds this to its thread line (`storm_group_line`).
TARGET_IN_ROW = re.compile(r"\s(platform/storm-\d+)\s")
ALERT_IN_ROW = re.compile(r"ResourceProxy\w+(?: x(\d+))?")
TARGET_IN_TITLE = re.compile(r" on (platform/storm-\d+)")
STORM_TITLE = "🌩️ Alert storm"


# -- Slack cut off -------------------------------------------------------------------------------------


class SlackGate:
    """A TCP relay in front of the fake Slack: `cut()` refuses new connections and resets the open ones,
    as when Slack (or the way to it) is gone; `restore()` listens again on the same port."""

    def __init__(self, upstream: FakeSlack) -> None:
        self._upstream_port = upstream.port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self.port = 0

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def __enter__(self) -> Self:
        self._thread.start()
        self.restore()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cut()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    def cut(self) -> None:
        self._run(self._close()).result(timeout=5)

    def restore(self) -> None:
        self._run(self._listen()).result(timeout=5)

    def _run(self, work: Any) -> Future[None]:
        return asyncio.run_coroutine_threadsafe(work, self._loop)

    async def _listen(self) -> None:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for writer in list(self._open):
            writer.transport.abort()  # a reset, as a dropped route gives
        self._open.clear()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._upstream_port)
        except OSError:
            writer.transport.abort()
            return
        self._open |= {writer, up_writer}
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True)
        self._open -= {writer, up_writer}


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        with contextlib.suppress(OSError):
            writer.close()


# -- the storm -----------------------------------------------------------------------------------------


@dataclass
class Storm:
    """A storm's webhooks (two notifications per target, `tests/e2e/storm_load.py`) and each one's last
    answer; re-sending what was not accepted is what Alertmanager does with a 5xx or no answer."""

    targets: int
    seconds: float
    bodies: list[bytes] = field(default_factory=list)
    status: dict[int, int] = field(default_factory=dict)  # body index -> last status (0: no answer)

    def __post_init__(self) -> None:
        self.bodies = storm_bodies(self.targets)

    def load(self, url: str, timeout: float = 10.0) -> LoadRun:
        """The load generator sending the storm (start it with `started()`; read it with `record`)."""
        return LoadRun(storm_plan(url, self.bodies, seconds=self.seconds, probe_path=None, timeout=timeout))

    def record(self, outcomes: Sequence[Outcome]) -> None:
        offsets = {self.seconds * i / len(self.bodies): i for i in range(len(self.bodies))}
        for outcome in outcomes:
            self.status[offsets[outcome.offset]] = outcome.status

    def unaccepted(self) -> list[int]:
        """What Alertmanager would still send: bodies never answered 2xx, unless a later body of their group
        was (Alertmanager sends a group's current state; it never goes back to an older one)."""
        newest: dict[str, int] = {}
        for i in range(len(self.bodies)):
            if self._accepted(i):
                newest[self._group(i)] = i
        return [
            i for i in range(len(self.bodies)) if not self._accepted(i) and newest.get(self._group(i), -1) < i
        ]

    def _accepted(self, i: int) -> bool:
        return 200 <= self.status.get(i, 0) < 300

    def _group(self, i: int) -> str:
        return str(json.loads(self.bodies[i])["groupKey"])

    def resend_unaccepted(self, url: str, timeout: float = 60.0) -> int:
        """Send again (in order) what Alertmanager would retry, until it is accepted; how many needed it."""
        again = self.unaccepted()
        headers = {**auth(), "Content-Type": "application/json"}
        with httpx.Client(base_url=url, headers=headers, timeout=10.0) as http:
            for i in again:
                wait_until(functools.partial(self._sent, http, i), timeout, f"webhook {i} to be accepted")
        return len(again)

    def _sent(self, http: httpx.Client, i: int) -> bool:
        try:
            self.status[i] = http.post("/alertmanager", content=self.bodies[i]).status_code
        except httpx.TransportError:
            self.status[i] = 0
        return 200 <= self.status[i] < 300

    def accepted_bodies(self) -> set[tuple[str, int]]:
        """(group key, alert count) of every body answered 2xx."""
        found = set()
        for i, status in self.status.items():
            if 200 <= status < 300:
                doc = json.loads(self.bodies[i])
                found.add((doc["groupKey"], len(doc["alerts"])))
        return found

    @property
    def target_names(self) -> list[str]:
        return [storm_target(i) for i in range(self.targets)]


# -- what must hold ------------------------------------------------------------------------------------


class FaultStore(StoreView):
    """The bot's SQLite store read-only, with what the fault tests ask of it besides the e2e questions."""

    def bodies(self) -> set[tuple[str, int]]:
        """(group key, alert count) of every notification stored."""
        return {(str(k), int(n)) for k, n in self._rows("SELECT group_key, alert_count FROM notifications")}

    def keys(self) -> dict[int, str]:
        return {int(i): str(k) for i, k in self._rows("SELECT id, key FROM outbox")}

    def pending(self) -> int:
        """Undelivered Slack operations: what the bot's `proxybot_outbox_depth` counts."""
        return self._one("SELECT count(*) FROM outbox WHERE state = 'pending'")

    def pending_in(self, channel: str) -> int:
        rows = self._rows("SELECT channel FROM outbox WHERE state = 'pending'")
        return sum(1 for (found,) in rows if found == channel)

    def in_doubt(self) -> int:
        """Pending rows marked in flight: a call whose outcome nobody saw (the next sender looks it up)."""
        return self._one("SELECT count(*) FROM outbox WHERE state = 'pending' AND sent_at IS NOT NULL")

    def drained(self) -> bool:
        """Every notification processed and every Slack operation done, but a replaced storm table's
        deletion, which waits on purpose (the new table is up already)."""
        waiting = self._one("SELECT count(*) FROM outbox WHERE state = 'pending' AND kind != 'delete_file'")
        return self.unprocessed() == 0 and waiting == 0

    def wait_drained(self, timeout: float) -> None:
        wait_until(self.drained, timeout, "every notification processed and delivered", interval=0.25)


def shown_per_target(slack: FakeSlack, channel: str = CHANNEL) -> dict[str, list[int]]:
    """Per storm target, the alert counts Slack showed it with, in the order Slack got them: its own
    message's versions, then its rows in the storm's tables (in the summary's thread: its table reply,
    each version in turn, then its files, each upload in turn, a replaced one too: it was shown until
    then)."""
    own: dict[str, list[int]] = {}
    tabled: dict[str, list[int]] = {}
    for top in slack.top_level(channel):
        if top.text.startswith(STORM_TITLE):
            for table in _table_block_versions(slack.thread(channel, top.ts)):
                for target, count in _table_rows(table):
                    tabled.setdefault(target, []).append(count)
            for upload in sorted(slack.uploads, key=lambda u: float(u["at"])):
                if upload.get("thread_ts") == top.ts:
                    for target, count in _table_rows(bytes(upload["content"]).decode()):
                        tabled.setdefault(target, []).append(count)
        elif found := TARGET_IN_TITLE.search(top.text):
            own.setdefault(found.group(1), []).extend(_versions(top))
    # A group posted before the storm was recognised keeps its own message, and is a row of the table too:
    # while the storm lasts its changes show in the table (its message is edited only when its status
    # changes), so its message's versions come first, then its rows.
    return {t: own.get(t, []) + tabled.get(t, []) for t in {*tabled, *own}}


def _table_block_versions(replies: list[Message]) -> list[str]:
    """Each version of the replies' table blocks, as lines of cells (as a file's rows read)."""
    found = []
    for reply in replies:
        for blocks in [*(v["blocks"] for v in reply.versions), reply.blocks]:
            for block in blocks:
                if block.get("type") == "table":
                    cells = (" ".join(_cell(c) for c in row) for row in block["rows"])
                    found.append("\n".join(f" {line} " for line in cells))
    return found


def _cell(cell: dict[str, Any]) -> str:
    if cell["type"] == "raw_text":
        return str(cell["text"])
    return "".join(e.get("text", "") for section in cell["elements"] for e in section["elements"])


def _table_rows(table: str) -> list[tuple[str, int]]:
    """(target, alerts) of each storm target's row: its ALERTS cell names each alert, `NAME xN` for N."""
    found = []
    for line in table.splitlines():
        target = TARGET_IN_ROW.search(line)
        if target is None:
            continue
        counts = [int(n) if n else 1 for n in ALERT_IN_ROW.findall(line[target.end() :])]
        found.append((target.group(1), sum(counts)))
    return found


def _shown(message: Message) -> str:
    """What a message shows: its blocks (its `text` repeats them, for notifications), else its text."""
    return "\n".join(iter_texts(message.blocks)) if message.blocks else message.text


def _versions(message: Message) -> list[int]:
    texts = [f"{v['text']}\n{json.dumps(v['blocks'], ensure_ascii=False)}" for v in message.versions]
    return [2 if "2 alerts firing" in t else 1 for t in [*texts, text_of(message)]]


# A storm's table is replaced at most this often (StormPolicy.refresh_seconds), so the last changes of its
# targets reach Slack up to that long after the outbox drained; plus time for the upload itself.
TABLE_SETTLES = 30.0 + 15.0


def assert_all_delivered_in_order(slack: FakeSlack, targets: Sequence[str]) -> None:
    """Every target of the storm is in Slack, last with both of its alerts, never shown older after newer
    (waiting for the storm's table to be replaced with the last changes, as it is within its refresh)."""
    with contextlib.suppress(WaitTimeout):  # the assertions below say what is missing
        wait_until(lambda: not _undelivered(slack, targets), TABLE_SETTLES, "every target in its final state")
    shown = shown_per_target(slack)
    missing = [t for t in targets if t not in shown]
    assert not missing, f"{len(missing)} targets never reached Slack, e.g. {missing[:5]}"
    stale = {t: counts for t, counts in shown.items() if counts[-1] != 2}
    assert not stale, f"not in their final state: {dict(list(stale.items())[:5])}"
    reordered = {t: counts for t, counts in shown.items() if counts != sorted(counts)}
    assert not reordered, f"shown out of order: {dict(list(reordered.items())[:5])}"


def _undelivered(slack: FakeSlack, targets: Sequence[str]) -> bool:
    shown = shown_per_target(slack)
    return any(t not in shown or shown[t][-1] != 2 for t in targets)


def duplicate_posts(slack: FakeSlack, store: FaultStore) -> int:
    """Top-level messages beyond the first of their outbox post (found by the row id each one carries)."""
    return sum(len(texts) - 1 for texts in posted_twice(slack, store).values())


def posted_twice(slack: FakeSlack, store: FaultStore) -> dict[str, list[str]]:
    """Outbox key (or "no mark") -> the start of each top-level message made for it, where more than one."""
    keys = store.keys()
    made: dict[str, list[str]] = {}
    for message in slack.top_level():
        key = keys.get(_row_id(message) or 0, "no mark")
        made.setdefault(key, []).append(f"ts {message.ts} mark {_row_id(message)}: {message.text[:80]}")
    return {key: texts for key, texts in made.items() if len(texts) > 1}


def _row_id(message: Message) -> int | None:
    mark = ((message.metadata or {}).get("event_payload") or {}).get("mark", "")
    return int(mark.removeprefix("outbox:")) if str(mark).startswith("outbox:") else None


def assert_never_crashed(*bots: BotProcess) -> None:
    for bot in bots:
        log = bot.log_text()
        assert "Traceback" not in log, bot.log_tail()
        assert "unexpected failure" not in log, bot.log_tail()


def metric_samples(url: str, name: str) -> Iterator[tuple[dict[str, str], float]]:
    """Every sample of one metric on the bot's `/metrics`, with its labels."""
    text = httpx.get(f"{url}/metrics", timeout=5.0).text
    for line in text.splitlines():
        if line.startswith((name + "{", name + " ")):
            head, value = line.rsplit(" ", 1)
            labels = dict(re.findall(r'(\w+)="([^"]*)"', head))
            yield labels, float(value)


def metric(url: str, name: str, **labels: str) -> float:
    return sum(
        v for found, v in metric_samples(url, name) if all(found.get(k) == w for k, w in labels.items())
    )
