"""A throwaway PostgreSQL server (Debian's `postgresql` binaries) for tests, benchmarks and the demo.

`with start_postgres() as server:` initdb's a fresh cluster in a temporary directory (a superuser role
`proxybot` with a random password, scram-sha-256 for every connection), runs `postgres` on a free loopback
port with its socket in that directory, waits until `pg_isready` says it accepts connections, and at the
end stops it (SIGINT, a fast shutdown; SIGKILL only if it hangs) and removes the directory.
`await server.new_database()` creates a database of its own for one test and returns its libpq URL.

PostgreSQL refuses to run as root, so as root both initdb and postgres run through
`runuser -u postgres --` on a directory owned by `postgres`. Never a system service, never a cluster the
machine already has: nothing outside the temporary directory is touched.
"""

from __future__ import annotations

import itertools
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import psycopg
from psycopg import sql

from sim.ports import free_port

ROLE = "proxybot"
HOST = "127.0.0.1"
LOG_NAME = "postgres.log"
SERVICE_USER = "postgres"
LIB_ROOT = Path("/usr/lib/postgresql")
INSTALL_HINT = (
    "install Debian's `postgresql` package (apt-get install postgresql; scripts/test.sh does, as root)"
)
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
INITDB_TIMEOUT = 120.0
CONNECT_TIMEOUT = 10  # seconds, libpq's connect_timeout
# A Unix socket path is at most 107 bytes on Linux; `.s.PGSQL.NNNNN` takes 15 of them.
MAX_SOCKET_DIR = 90
START_ATTEMPTS = 3
# postmaster.pid: pid, data dir, start time, port, socket dir, listen address, shmem key, status.
PID_FILE_STATUS_LINE = 8
_database_numbers = itertools.count(1)


class PostgresError(RuntimeError):
    """The throwaway server could not be found, started, reached or stopped."""


@dataclass(frozen=True)
class Binaries:
    """The server programs, all of one PostgreSQL installation."""

    initdb: str
    postgres: str
    pg_isready: str


@dataclass(frozen=True)
class PostgresServer:
    """A running throwaway server: its admin URL, and a fresh database per caller."""

    host: str
    port: int
    password: str
    directory: Path
    pid: int  # the postmaster's

    @property
    def url(self) -> str:
        """The admin URL: the superuser role on the `postgres` database."""
        return self.database_url("postgres")

    def database_url(self, name: str) -> str:
        return f"postgresql://{ROLE}:{self.password}@{self.host}:{self.port}/{name}"

    async def new_database(self) -> str:
        """CREATE DATABASE with a name no other caller got; its libpq URL."""
        name = f"proxybot_{os.getpid()}_{next(_database_numbers)}_{secrets.token_hex(3)}"
        async with await psycopg.AsyncConnection.connect(
            self.url, autocommit=True, connect_timeout=CONNECT_TIMEOUT
        ) as conn:
            await conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.database_url(name)

    def log_tail(self, lines: int = 30) -> str:
        return _tail(self.directory / LOG_NAME, lines)


def _version_key(bin_dir: Path) -> tuple[int, ...]:
    """`/usr/lib/postgresql/15/bin` -> (15,); `9.6` -> (9, 6), so 15 sorts above 9.6."""
    return tuple(int(part) for part in re.findall(r"\d+", bin_dir.parent.name)) or (-1,)


def find_binaries(path: str | None = None, lib_root: Path = LIB_ROOT) -> Binaries:
    """initdb and postgres from PATH's installation, else the newest under `lib_root`; never a mix."""
    candidates: list[Path] = []
    on_path = shutil.which("initdb", path=path)
    if on_path is not None:
        candidates.append(Path(os.path.realpath(on_path)).parent)
    candidates += sorted(lib_root.glob("*/bin"), key=_version_key, reverse=True)
    for bin_dir in candidates:
        initdb, postgres = bin_dir / "initdb", bin_dir / "postgres"
        if _executable(initdb) and _executable(postgres):
            ready = bin_dir / "pg_isready"
            pg_isready = str(ready) if _executable(ready) else shutil.which("pg_isready", path=path)
            if pg_isready is not None:
                return Binaries(str(initdb), str(postgres), pg_isready)
    raise PostgresError(
        f"PostgreSQL's initdb, postgres and pg_isready were not found on PATH or in {lib_root}/*/bin: "
        + INSTALL_HINT
    )


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


class _Launcher:
    """Runs the server's programs as the right user: as root, through runuser on a postgres-owned tree."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.prefix = [_runuser(), "-u", SERVICE_USER, "--"] if os.geteuid() == 0 else []

    def hand_over(self) -> None:
        """As root: chown the tree to `postgres` and check that user can reach it."""
        if not self.prefix:
            return
        try:
            account = pwd.getpwnam(SERVICE_USER)
        except KeyError:
            raise PostgresError(f"running as root needs the `{SERVICE_USER}` user: {INSTALL_HINT}") from None
        for path in [self.directory, *self.directory.rglob("*")]:
            os.chown(path, account.pw_uid, account.pw_gid)
        probe = [*self.prefix, "test", "-w", str(self.directory)]
        if subprocess.run(probe, timeout=10, check=False).returncode != 0:
            raise PostgresError(
                f"the {SERVICE_USER} user cannot write {self.directory}: put it under a directory every "
                "user can traverse (the default, the system temp directory, is)"
            )

    def run(self, argv: Sequence[str], log: Path, timeout: float) -> None:
        with log.open("wb") as out:
            try:
                done = subprocess.run(
                    [*self.prefix, *argv],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    cwd=self.directory,
                    timeout=timeout,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                raise PostgresError(f"{argv[0]} did not finish within {timeout:.0f}s") from None
        if done.returncode != 0:
            raise PostgresError(f"{argv[0]} exited with {done.returncode}:\n{_tail(log)}")

    def start(self, argv: Sequence[str], log: IO[bytes]) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [*self.prefix, *argv], stdout=log, stderr=subprocess.STDOUT, cwd=self.directory
        )


def _runuser() -> str:
    found = shutil.which("runuser") or ("/usr/sbin/runuser" if Path("/usr/sbin/runuser").exists() else None)
    if found is None:
        raise PostgresError("runuser (util-linux) is needed to run PostgreSQL as the postgres user, as root")
    return found


def _tail(log: Path, lines: int = 30) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:]) if log.exists() else ""


def _initdb(binaries: Binaries, launcher: _Launcher, password: str) -> Path:
    """A new cluster in `data/`: superuser `proxybot` with `password`, scram-sha-256 for every connection."""
    directory = launcher.directory
    pwfile = directory / "pwfile"
    pwfile.write_text(password + "\n")
    pwfile.chmod(0o600)
    launcher.hand_over()
    data = directory / "data"
    argv = [binaries.initdb, "-D", str(data), "-U", ROLE, "--auth=scram-sha-256", f"--pwfile={pwfile}"]
    # C locale: no dependency on the machine's locales; --no-sync: a throwaway cluster needs no fsync at init.
    argv += ["--encoding=UTF8", "--locale=C", "--no-sync"]
    try:
        launcher.run(argv, directory / "initdb.log", INITDB_TIMEOUT)
    finally:
        pwfile.unlink()
    return data


class _Running:
    """The postgres process of one start attempt: started, waited for, stopped."""

    def __init__(self, binaries: Binaries, launcher: _Launcher, data: Path, port: int) -> None:
        self.binaries, self.data, self.port = binaries, data, port
        self.log_path = launcher.directory / LOG_NAME
        self.log = self.log_path.open("ab")
        argv = [binaries.postgres, "-D", str(data), "-p", str(port), "-k", str(launcher.directory)]
        argv += ["-c", f"listen_addresses={HOST}"]
        self.process = launcher.start(argv, self.log)

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> int:
        """Wait until this server (its own postmaster.pid says ready) accepts connections; its pid."""
        deadline = time.monotonic() + timeout
        while True:
            code = self.process.poll()
            if code is not None:
                raise PostgresError(f"postgres exited with {code}:\n{_tail(self.log_path)}")
            pid = self.postmaster_pid(ready=True)
            if pid is not None and self._accepting():
                return pid
            if time.monotonic() >= deadline:
                raise PostgresError(f"postgres not ready within {timeout:.0f}s:\n{_tail(self.log_path)}")
            time.sleep(0.1)

    def _accepting(self) -> bool:
        argv = [self.binaries.pg_isready, "-q", "-h", HOST, "-p", str(self.port), "-U", ROLE]
        argv += ["-d", "postgres", "-t", "2"]
        try:
            return subprocess.run(argv, timeout=5, check=False).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def postmaster_pid(self, *, ready: bool = False) -> int | None:
        """The server's own pid from postmaster.pid (under runuser it is our child's child), if that
        process is ours; with `ready`, only once the file's status line says it accepts connections."""
        try:
            lines = (self.data / "postmaster.pid").read_text().splitlines()
            pid = int(lines[0])
        except (OSError, ValueError, IndexError):
            return None
        if ready and (
            len(lines) < PID_FILE_STATUS_LINE or lines[PID_FILE_STATUS_LINE - 1].strip() != "ready"
        ):
            return None
        return pid if pid == self.process.pid or _parent_of(pid) == self.process.pid else None

    def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """SIGINT to the postmaster (fast shutdown: sessions ended, a checkpoint), SIGKILL if it hangs."""
        try:
            if self.process.poll() is None:
                pid = self.postmaster_pid() or self.process.pid
                _signal(pid, signal.SIGINT)
                try:
                    self.process.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    _signal(pid, signal.SIGKILL)
                    self.process.kill()
                    self.process.wait(timeout=timeout)
        finally:
            self.log.close()


def _parent_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # `pid (comm) state ppid ...`; comm may hold spaces and parentheses, so split after the last `)`.
    return int(stat.rpartition(")")[2].split()[1])


def _signal(pid: int, signum: signal.Signals) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, signum)


def _start(binaries: Binaries, launcher: _Launcher, data: Path) -> tuple[_Running, int, int]:
    """Start and wait: (the process, its port, the postmaster's pid). A port taken by someone else
    between choosing and binding it gets a new port, a few times."""
    for attempt in range(1, START_ATTEMPTS + 1):
        running = _Running(binaries, launcher, data, free_port())
        try:
            pid = running.wait_ready()
        except PostgresError as error:
            running.stop()
            if attempt == START_ATTEMPTS or "could not bind" not in str(error):
                raise
            continue
        return running, running.port, pid
    raise AssertionError("unreachable")


@contextmanager
def start_postgres(tmpdir: Path | None = None) -> Iterator[PostgresServer]:
    """A fresh server for a `with` block, in a new directory under `tmpdir` (default: the system temp dir)."""
    binaries = find_binaries()
    directory = Path(tempfile.mkdtemp(prefix="proxybot-pg-", dir=tmpdir)).resolve()
    try:
        if len(str(directory)) > MAX_SOCKET_DIR:
            raise PostgresError(f"{directory} is too long for a Unix socket path: pass a shorter tmpdir")
        launcher = _Launcher(directory)
        password = secrets.token_hex(16)
        running, port, pid = _start(binaries, launcher, _initdb(binaries, launcher, password))
        try:
            yield PostgresServer(HOST, port, password, directory, pid)
        finally:
            running.stop()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
