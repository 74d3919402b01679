"""Each reading of the platform recorded as its instances' history of what defines the proxy (issue 39).

From every instance of a reading: its vcluster.yaml's `experimental.proxy` and `policies.networkPolicy` and
its vCluster version (`bot.domain.changes.InstanceFacts`, secret-named values replaced before they are
kept), recorded in the store where they differ from the instance's newest version. The store is the
replicas' one, so every replica reads the same history; per instance it keeps the last `KEEP_VERSIONS`
versions read within `KEEP_DAYS` days, and its newest always. A process parses and sends an instance again
only once it reads differently (`HistoryRecorder`). The control-plane pods' starts and images
are not read here: a reading is one list of the instances, and a pod read per instance per refresh would
not be cheap; a new version is a control plane restarted with it.
"""

from __future__ import annotations

import asyncio
import hashlib

import yaml

from bot.domain.changes import InstanceFacts
from bot.fleet.instances import Instance, read_instances
from bot.store.base import ChangeStore

# libyaml's safe loader where PyYAML was built with it: a fleet's vcluster.yamls parse ~10x faster.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
KEEP_VERSIONS = 50
KEEP_DAYS = 7
_DAY = 86_400.0


def instance_facts(instance: Instance) -> InstanceFacts:
    """What defines the proxy on `instance`, read from its effective vcluster.yaml."""
    if instance.values is None:
        return InstanceFacts.of(None, instance.version)
    try:
        parsed = yaml.load(instance.values, Loader=_LOADER)  # noqa: S506 - a safe loader, libyaml's when built
    except yaml.YAMLError as exc:
        # The error's own text quotes the document: only where it broke is said.
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        return InstanceFacts.unreadable_yaml(instance.version, f"not YAML{where}")
    return InstanceFacts.of(parsed, instance.version)


class HistoryRecorder:
    """Records one platform's readings. An instance whose vcluster.yaml and version read the same as when
    this process last recorded it is neither parsed again nor sent: a refresh of an unchanged fleet of a
    thousand instances costs hashing their values, not parsing them."""

    def __init__(self, store: ChangeStore, platform: str) -> None:
        self._store = store
        self._platform = platform
        self._recorded: dict[str, tuple[str, str | None]] = {}  # ref -> (its values' digest, version)

    async def record(self, prefix: str, listed: object) -> list[str]:
        """Record the reading's instances whose facts changed; those recorded. The YAML is parsed off the
        loop, and only of instances read differently than when last recorded here."""
        instances, _ = read_instances(listed, prefix)
        read = {i.ref: (_digest(i.values), i.version) for i in instances}
        fresh = [i for i in instances if self._recorded.get(i.ref) != read[i.ref]]
        if not fresh:
            return []
        versions = await asyncio.to_thread(lambda: [(i.ref, instance_facts(i)) for i in fresh])
        keep_for = KEEP_DAYS * _DAY
        recorded = await self._store.record_instance_versions(
            self._platform, versions, keep=KEEP_VERSIONS, keep_for=keep_for
        )
        self._recorded = read  # only once the store has them: a failed record is tried again next reading
        return recorded


def _digest(values: str | None) -> str:
    return "" if values is None else hashlib.sha256(values.encode()).hexdigest()
