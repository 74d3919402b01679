"""`check-config --serve`'s live part: the store answers, and Slack takes the token with the scopes we use.

Each check has its own timeout and says one line. A store that does not answer, or a token Slack refuses, is a
problem (serve would fail, or never post); Slack unreachable from where the check runs, or a Slack app
without the history scopes (posts whose answer was lost may be posted twice), is a warning.
"""

from __future__ import annotations

import asyncio
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from bot.clients.slack import SlackClient, SlackError, SlackRejected
from bot.store.opening import is_postgres_url
from bot.store.schema import SCHEMA_VERSION
from config.settings import Settings

TIMEOUT = 5.0
HISTORY_SCOPES = ("channels:history", "groups:history")


@dataclass
class LiveReport:
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


async def live_checks(settings: Settings, *, timeout: float = TIMEOUT) -> LiveReport:
    """Both checks at once, each within `timeout` seconds."""
    report = LiveReport()
    await asyncio.gather(_store(settings, report, timeout), _slack(settings, report, timeout))
    return report


async def _store(settings: Settings, report: LiveReport, timeout: float) -> None:
    url = settings.store.url.get_secret_value()
    if is_postgres_url(url):
        problem = await _postgres(url, timeout)
    else:
        path = settings.store.sqlite_path
        problem = None if path is None else await asyncio.to_thread(_sqlite, path)
    if problem is not None:
        report.problems.append(f"store.url: {problem}")


async def _postgres(url: str, timeout: float) -> str | None:
    # Imported here: a SQLite deployment never loads the driver.
    import psycopg

    from bot.store.pg_schema import PG_SCHEMA_VERSION
    from bot.store.pg_url import scrub, where

    place = where(url)
    try:
        async with asyncio.timeout(timeout + 1):
            conn = await psycopg.AsyncConnection.connect(url, connect_timeout=max(1, int(timeout)))
            async with conn:
                cursor = await conn.execute("SELECT to_regclass('proxybot_schema') IS NOT NULL")
                row = await cursor.fetchone()
                if row is None or not row[0]:
                    return None  # a new database: serve creates the tables at start
                version_row = await (
                    await conn.execute("SELECT max(version) FROM proxybot_schema")
                ).fetchone()
    except TimeoutError:
        return f"postgresql at {place} did not answer within {timeout:g} s"
    except psycopg.Error as error:
        first = str(error).strip().splitlines()
        reason = scrub(first[0] if first else type(error).__name__, url)
        return f"cannot connect to postgresql at {place}: {reason}"
    version = int(version_row[0]) if version_row and version_row[0] is not None else 0
    if version > PG_SCHEMA_VERSION:
        newer = f"schema version {version}, newer than this proxybot ({PG_SCHEMA_VERSION})"
        return f"the database at {place} is at {newer}"
    return None


def _sqlite(path: Path) -> str | None:
    if not path.parent.is_dir():
        return f"the directory {path.parent} does not exist (serve creates the file, not its directory)"
    if not path.exists():
        return None
    try:
        with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=TIMEOUT)) as conn:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error as error:
        return f"cannot read {path}: {error}"
    if version > SCHEMA_VERSION:
        return f"{path} is at schema version {version}, newer than this proxybot ({SCHEMA_VERSION})"
    return None


async def _slack(settings: Settings, report: LiveReport, timeout: float) -> None:
    try:
        client = SlackClient.from_settings(settings.slack, timeout=timeout)
        scopes = await client.granted_scopes()
    except SlackRejected as error:
        report.problems.append(f"slack.bot_token: Slack refused it ({error.error_code})")
        return
    except SlackError as error:
        report.warnings.append(f"could not reach Slack to check the bot token and its scopes: {error}")
        return
    missing = [scope for scope in HISTORY_SCOPES if scope not in scopes]
    if missing:
        report.warnings.append(
            f"the Slack app lacks {', '.join(missing)}: a post whose answer was lost (a crash, a timeout) "
            "cannot be looked for and may be posted twice; add the scopes (config/slack/manifest.yaml) "
            "and reinstall the app"
        )
