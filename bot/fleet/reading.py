"""One reading of the fleet: the key's scope, one list of the instances, the clients derived, the kubeconfig
of the platform's paths written for them.

`FleetReader` keeps the private directory (the kubeconfig, a key from the environment) and the platform
client for as long as the bot runs; `read()` is one refresh. A platform that fails raises `PlatformError`
and leaves the last kubeconfig as it was, so the last fleet keeps reading.
"""

from __future__ import annotations

import asyncio
import atexit
import shutil
from pathlib import Path
from typing import Any

from bot.clients.platform import PlatformClient
from bot.fleet.access import (
    KUBECONFIG,
    cluster_context,
    key_file,
    private_directory,
    virtual_cluster_context,
    write_kubeconfig,
)
from bot.fleet.derive import Fleet, derive_fleet
from bot.fleet.instances import read_instances
from config.platform import PlatformSettings
from config.settings import Settings


class FleetReader:
    """Reads the platform's fleet for these settings, as often as asked."""

    def __init__(self, settings: Settings, directory: Path | None = None) -> None:
        platform = settings.platform
        if platform is None:
            raise ValueError("the settings name no platform")
        self.settings = settings
        self.platform: PlatformSettings = platform
        self.directory = directory or private_directory()
        self.key = key_file(platform, self.directory)
        self.client = PlatformClient(
            platform.url, self.key, ca_file=platform.ca_file, timeout=platform.timeout
        )

    @property
    def kubeconfig(self) -> Path:
        return self.directory / KUBECONFIG

    async def aclose(self) -> None:
        await self.client.aclose()

    async def read(self) -> Fleet:
        """The fleet now: one `Self` and one list (one per configured project)."""
        prefix, listed = await self.fetch()
        return self.derive(prefix, listed)

    async def fetch(self) -> tuple[str, dict[str, Any]]:
        """The project namespace prefix and the list of instances, as the platform answers now."""
        scope = await self.client.scope()
        projects = self.platform.projects or scope.projects
        return scope.prefix, await self.client.instances([scope.prefix + p for p in projects])

    def derive(self, prefix: str, listed: object) -> Fleet:
        """The fleet of a list of instances (read now, or stored), its kubeconfig written."""
        instances, problems = read_instances(listed, prefix)
        contexts = {virtual_cluster_context(i.project, i.name) for i in instances}
        contexts |= {cluster_context(i.cluster) for i in instances}
        write_kubeconfig(self.platform, self.directory, self.key, contexts)
        return derive_fleet(
            instances,
            self.platform,
            self.settings.clusters,
            self.settings.refinements,
            self.kubeconfig,
            problems,
        )


def read_once(settings: Settings) -> tuple[Settings, Fleet | None]:
    """For a console command: the settings over the platform's fleet, read now on a loop of its own (the
    settings themselves without `platform:`). Its private directory lives as long as the process, which
    reads through its kubeconfig, and is removed at exit. A platform that cannot be read raises
    `PlatformError`."""
    if settings.platform is None:
        return settings, None
    reader = FleetReader(settings)
    atexit.register(shutil.rmtree, reader.directory, ignore_errors=True)

    async def once() -> Fleet:
        try:
            return await reader.read()
        finally:
            await reader.aclose()

    fleet = asyncio.run(once())
    return settings.with_fleet(fleet.clusters), fleet
