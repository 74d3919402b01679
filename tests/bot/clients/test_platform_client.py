"""The platform's management API client against a small strict stand-in: what the platform answers is not
trusted to build a path, and a key rotated in its file is used at once when the old one is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.clients.platform import PlatformClient
from bot.errors import PlatformError
from tests.fakes.http_server import LocalServer, Request

NEW_KEY, OLD_KEY = "lk-new-key-0123456789", "lk-old-key-0123456789"


class Platform:
    """Answers Self with `projects` and lists; accepts only `key`; records every path asked."""

    def __init__(self, projects: list[str]) -> None:
        self.projects = projects
        self.key = NEW_KEY
        self.paths: list[str] = []

    def __call__(self, request: Request) -> tuple[int, Any]:
        self.paths.append(request.path)
        if request.headers.get("authorization") != f"Bearer {self.key}":
            return 401, {"kind": "Status", "code": 401, "message": "Unauthorized"}
        if request.path.endswith("/selves"):
            scope = {"projects": [{"project": p} for p in self.projects]}
            return 201, {"status": {"projectNamespacePrefix": "p-", "accessKeyScope": scope}}
        return 200, {"kind": "VirtualClusterInstanceList", "items": []}


@pytest.fixture
def served() -> Iterator[tuple[Platform, str]]:
    platform = Platform(["payments"])
    with LocalServer(platform) as server:
        yield platform, server.url


async def test_a_project_the_platform_names_that_is_no_dns_label_reaches_no_path(
    served: tuple[Platform, str], tmp_path: Path
) -> None:
    platform, url = served
    platform.projects = ["payments", "../../api/v1/secrets"]
    key = tmp_path / "key"
    key.write_text(NEW_KEY)
    client = PlatformClient(url, key, ca_file=None, timeout=5)
    try:
        scope = await client.scope()
        with pytest.raises(PlatformError, match="not a DNS-1123 label"):
            await client.instances([scope.prefix + p for p in scope.projects])
    finally:
        await client.aclose()
    assert not [p for p in platform.paths if "secrets" in p or ".." in p]


async def test_a_key_rotated_in_its_file_is_used_at_once_when_the_old_one_is_refused(
    served: tuple[Platform, str], tmp_path: Path
) -> None:
    platform, url = served
    key = tmp_path / "key"
    key.write_text(OLD_KEY)
    platform.key = OLD_KEY
    client = PlatformClient(url, key, ca_file=None, timeout=5)
    try:
        await client.scope()  # the old key, read and kept for a while
        platform.key = NEW_KEY  # rotated: the platform refuses the old one from now on
        key.write_text(NEW_KEY + "\n")
        assert (await client.scope()).projects == ("payments",)
    finally:
        await client.aclose()
