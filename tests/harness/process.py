"""Start a server binary, wait until it answers, and stop it cleanly (Prometheus, Alertmanager)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Self

import httpx

from tests.waiting import WaitTimeout, wait_until

# Every HTTP call the harness makes is bounded by this, so a wedged server fails a test instead of hanging it.
HTTP_TIMEOUT = httpx.Timeout(5.0)


class HarnessError(RuntimeError):
    """A real server used by the tests could not be started, reached or stopped."""


def find_binary(name: str, fallback: str) -> str:
    """The binary on PATH, else its Debian location; missing is an error, never a reason to skip."""
    found = shutil.which(name) or (fallback if Path(fallback).exists() else None)
    if found is None:
        raise HarnessError(f"{name} is not installed (expected on PATH or at {fallback})")
    return found


class ServerProcess:
    """One child process whose output goes to a log file, readable when something goes wrong."""

    def __init__(self, argv: Sequence[str], log_path: Path) -> None:
        self.argv = list(argv)
        self.log_path = log_path
        self._log: IO[bytes] | None = None
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._log = self.log_path.open("wb")
        self._process = subprocess.Popen(self.argv, stdout=self._log, stderr=subprocess.STDOUT)

    def exit_code(self) -> int | None:
        return None if self._process is None else self._process.poll()

    def log_tail(self, lines: int = 30) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM for a clean shutdown; SIGKILL only if the server ignores it."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=timeout)
        if self._log is not None:
            self._log.close()
            self._log = None

    def wait_ready(self, url: str, timeout: float) -> None:
        """Wait until `url` answers 200, failing early (with the log) if the process dies."""

        def ready() -> bool | None:
            code = self.exit_code()
            if code is not None:
                raise HarnessError(f"{self.argv[0]} exited with {code}:\n{self.log_tail()}")
            try:
                return httpx.get(url, timeout=HTTP_TIMEOUT).status_code == httpx.codes.OK or None
            except httpx.TransportError:
                return None

        try:
            wait_until(ready, timeout, f"{url} to be ready", interval=0.2)
        except WaitTimeout as error:
            raise HarnessError(f"{error}\n{self.log_tail()}") from None


class ManagedServer:
    """A server binary run for a `with` block: started, ready on `/-/ready`, stopped at the end.

    Subclasses set `url`, `ready_timeout` and `_process` in their constructor.
    """

    url: str
    ready_timeout: float
    _process: ServerProcess

    def __enter__(self) -> Self:
        self._process.start()
        try:
            self._process.wait_ready(f"{self.url}/-/ready", self.ready_timeout)
        except BaseException:
            self._process.stop()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._process.stop()

    def log_tail(self, lines: int = 30) -> str:
        return self._process.log_tail(lines)


# How long `run_until` waits for a process to end after its Ctrl-C.
STOP_TIMEOUT = 30.0


def run_until(
    argv: Sequence[str], shows: Callable[[str], None], timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `argv` until `shows(stdout so far)` stops raising (or the process ends, or `timeout` passes),
    then stop it with SIGINT as a person presses Ctrl-C, and return what it printed and its exit code.

    The process runs in a process group of its own, and the SIGINT goes to the whole group, as a terminal
    sends Ctrl-C to its foreground job: the processes it started (a pool's workers) get it too."""
    out: list[str] = []
    err: list[str] = []
    # A process that does not end after Ctrl-C is sent SIGABRT, which Python's fault handler answers by
    # printing every thread's stack to stderr: where it hung is in the failure, not lost with a SIGKILL.
    env = {**(os.environ if env is None else env), "PYTHONFAULTHANDLER": "1"}
    with _sigint_as_in_a_terminal():
        process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, process_group=0
        )
    with process:
        assert process.stdout is not None
        assert process.stderr is not None
        readers = [
            threading.Thread(target=_drain, args=(process.stdout, out), daemon=True),
            threading.Thread(target=_drain, args=(process.stderr, err), daemon=True),
        ]
        for reader in readers:
            reader.start()
        with contextlib.suppress(
            WaitTimeout
        ):  # on timeout it is stopped all the same; the caller checks the output
            wait_until(
                lambda: process.poll() is not None or _holds(shows, "".join(out)),
                timeout,
                f"{argv[0]} to show what it should",
                interval=0.1,
            )
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
        try:
            code = process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGABRT)
            try:
                code = process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                code = process.wait()
        for reader in readers:
            reader.join(timeout=5)
    return subprocess.CompletedProcess(list(argv), code, "".join(out), "".join(err))


@contextlib.contextmanager
def _sigint_as_in_a_terminal() -> Iterator[None]:
    """While a process is started: a suite started in the background of a script (`cmd &`) has SIGINT
    ignored, and an ignored signal stays ignored across exec, so the Ctrl-C would never reach it. Handled
    here for that moment, the signal starts at its default in the process, as in a terminal."""
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _drain(stream: IO[str], into: list[str]) -> None:
    for line in stream:
        into.append(line)


def _holds(shows: Callable[[str], None], out: str) -> bool:
    try:
        shows(out)
    except (AssertionError, ValueError):  # not yet: an assertion, or a str.index of text not printed yet
        return False
    return True
