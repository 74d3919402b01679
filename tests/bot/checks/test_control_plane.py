"""A control-plane pod's readiness as the triage reads it (bot/reads/control_plane.py)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.domain.verdict import PodState
from bot.reads.control_plane import pod_state


def pod(
    ready: str | None, *, phase: str = "Running", deleting: bool = False, reason: str = ""
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "store-0"}
    if deleting:
        meta["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    conditions = [{"type": "PodScheduled", "status": "True"}]
    if ready is not None:
        conditions.append({"type": "Ready", "status": ready, **({"reason": reason} if reason else {})})
    return {"metadata": meta, "status": {"phase": phase, "conditions": conditions}}


@pytest.mark.parametrize(
    ("doc", "state"),
    [
        (pod("True"), PodState("store-0", True, "Ready")),
        (
            pod("False", reason="ContainersNotReady"),
            PodState("store-0", False, "not Ready (Running, ContainersNotReady)"),
        ),
        (pod("True", deleting=True), PodState("store-0", False, "Terminating")),  # leaves the endpoints
        (pod(None, phase="Pending"), PodState("store-0", False, "not Ready (Pending)")),
        ({}, PodState("?", False, "not Ready (unknown phase)")),
    ],
)
def test_pod_state(doc: dict[str, Any], state: PodState) -> None:
    assert pod_state(doc) == state
