"""Each reading of the platform recorded as its instances' history of what defines the proxy (issue 39).

From every instance of a reading: its vcluster.yaml's `experimental.proxy` and `policies.networkPolicy` and
its vCluster version (`bot.domain.changes.InstanceFacts`, secret-named values replaced before they are
kept), recorded in the store where they differ from the instance's newest version. The store is the
replicas' one, so every replica reads the same history; per instance it keeps the last `KEEP_VERSIONS`
versions read within `KEEP_DAYS` days, and its newest always. The control-plane pods' starts and images
are not read here: a reading is one list of the instances, and a pod read per instance per refresh would
not be cheap; a new version is a control plane restarted with it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import yaml

from bot.domain.changes import InstanceFacts
from bot.fleet.instances import Instance, read_instances
from bot.store.base import ChangeStore

KEEP_VERSIONS = 50
KEEP_DAYS = 7
_DAY = 86_400.0


def instance_facts(instance: Instance) -> InstanceFacts:
    """What defines the proxy on `instance`, read from its effective vcluster.yaml."""
    if instance.values is None:
        return InstanceFacts.of(None, instance.version)
    try:
        parsed = yaml.safe_load(instance.values)
    except yaml.YAMLError as exc:
        # The error's own text quotes the document: only where it broke is said.
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        return InstanceFacts.unreadable_yaml(instance.version, f"not YAML{where}")
    return InstanceFacts.of(parsed, instance.version)


def reading_facts(prefix: str, listed: object) -> list[tuple[str, InstanceFacts]]:
    """Each readable instance of a list the platform answered, as `(<project>/<name>, facts)`."""
    instances, _ = read_instances(listed, prefix)
    return [(i.ref, instance_facts(i)) for i in instances]


async def record_reading(store: ChangeStore, platform: str, prefix: str, listed: object) -> list[str]:
    """Record a reading's instances whose facts changed; those recorded. The YAML is parsed off the loop."""
    versions: Sequence[tuple[str, InstanceFacts]] = await asyncio.to_thread(reading_facts, prefix, listed)
    keep_for = KEEP_DAYS * _DAY
    return await store.record_instance_versions(platform, versions, keep=KEEP_VERSIONS, keep_for=keep_for)
