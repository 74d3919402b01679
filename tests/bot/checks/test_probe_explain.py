"""Each class of answer the probe can meet, explained in the vendor's terms with the next step."""

from __future__ import annotations

import pytest

from bot.checks.probe import probe_request
from bot.checks.probe_run import probe_with
from bot.domain.probe_result import ProbeOutcome
from bot.errors import ClusterError
from config.settings import Settings
from tests.bot.checks.test_probe_run import (
    DISCOVERY,
    Answer,
    FakeReader,
    _discovery,
    _json,
    _live,
    _probe,
    _status,
)
from tests.fakes.probe_settings import PROBE, SETTINGS, TARGET

WIDGETS = _discovery(("widgets", ["get", "list"], True))
IDENTITY = "loft:vcluster:p-platform:team-a"


async def test_401_auth_failed_is_platform_trust_not_rbac() -> None:
    result, _ = await _probe({PROBE: [_json(401, _status(401, "auth failed"))], DISCOVERY: [WIDGETS]})
    assert result.outcome is ProbeOutcome.UNAUTHORIZED
    assert result.summary == (
        "401 auth failed: platform/crd-store rejected team-a's platform access key "
        "(platform trust, not Kubernetes RBAC)"
    )
    assert "same platform" in result.next_step
    assert "targetVirtualCluster.project defaults to the client's own project" in result.next_step
    assert "kubectl -n vcluster-team-a rollout restart statefulset/team-a" in result.next_step
    assert "RBAC does not answer 401: granting verbs will not fix this" in result.evidence


async def test_403_naming_the_client_identity_is_target_rbac_with_the_can_i_filled_in() -> None:
    msg = f'widgets.example.com is forbidden: User "{IDENTITY}" cannot list resource "widgets"'
    result, _ = await _probe({PROBE: [_json(403, _status(403, msg))], DISCOVERY: [WIDGETS]})
    assert result.outcome is ProbeOutcome.FORBIDDEN
    assert result.summary == f"403: the target's RBAC refuses {IDENTITY} to list widgets (example.com/v1)"
    can_i = (
        "vcluster connect crd-store --driver platform --project platform -- "
        f'kubectl auth can-i list widgets.example.com -n default --as="{IDENTITY}"'
    )
    assert can_i in result.next_step
    use = (
        "kubectl auth can-i use virtualclusterinstances.management.loft.sh/crd-store "
        f'--as="{IDENTITY}" -n p-platform --context <platform-context>'
    )
    assert use in result.next_step
    assert "keep `get` beside update/patch/delete" in result.next_step
    assert f"the answer names the client's identity {IDENTITY}" in result.evidence


async def test_403_naming_no_user_infers_the_identity_and_says_so() -> None:
    result, _ = await _probe({PROBE: [_json(403, _status(403, "forbidden"))], DISCOVERY: [WIDGETS]})
    assert IDENTITY in result.summary
    assert any(line.startswith(f"identity inferred as {IDENTITY}") for line in result.evidence)


def _with_access(access: str) -> Settings:
    cluster = SETTINGS.clusters[0]
    target = cluster.targets[0].model_copy(update={"access_resources": access})
    return SETTINGS.model_copy(update={"clusters": (cluster.model_copy(update={"targets": (target,)}),)})


@pytest.mark.parametrize("access", ["owned", "all"])
async def test_404_on_a_list_lists_the_four_causes_the_genuine_one_first(access: str) -> None:
    answers: dict[str, list[Answer]] = {
        PROBE: [_json(404, _status(404, "the server could not find the requested resource"))],
        DISCOVERY: [WIDGETS],
    }
    request = probe_request(_with_access(access), TARGET)
    result = await probe_with(FakeReader(answers), request, _live)
    causes = [line for line in result.evidence if line.startswith("404 cause ")]
    assert [c.split(":")[0] for c in causes] == [f"404 cause {i}" for i in range(1, 5)]
    assert causes[0].startswith("404 cause 1: genuine 404 from the target: ")
    assert "ownership masking (does not apply to a list" in causes[1]
    assert f"accessResources: {access})" in causes[1]
    assert result.next_step.startswith("Likely a genuine 404 from the target")


async def test_409_is_a_name_collision() -> None:
    msg = 'widgets.example.com "w1" already exists'
    result, _ = await _probe({PROBE: [_json(409, _status(409, msg))]})
    assert result.outcome is ProbeOutcome.CONFLICT
    assert (
        result.summary == "409: a name collision on platform/crd-store (owned isolates visibility, not names)"
    )
    assert "another name" in result.next_step
    assert "adopt" in result.next_step


async def test_501_sends_exec_attach_port_forward_to_the_target_directly() -> None:
    msg = "resource proxy does not support connection upgrades"
    result, _ = await _probe({PROBE: [_json(501, _status(501, msg))]})
    assert result.summary == "501: the resource proxy does not support connection upgrades"
    assert "exec, attach and port-forward go to platform/crd-store directly" in result.next_step


async def test_503_names_the_target_and_group_version_from_the_proxy_text() -> None:
    msg = 'target tenant cluster "crd-store" for example.com/v1 is unavailable'
    answer = _json(503, _status(503, msg), {"Retry-After": "1"}, seconds=0.003)
    result, _ = await _probe({PROBE: [answer]})
    assert (
        result.summary == "503 from the proxy: the target crd-store (example.com/v1) is unavailable to team-a"
    )
    assert "`reason` label" in result.next_step
    assert not any("dial timeout" in line for line in result.evidence)  # a fast 503 is not timed


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (5.02, "near the 5 s dial timeout: a peer dial failure"),
        (60.0, "near the 60 s request deadline: the target accepted the connection"),
    ],
)
async def test_a_failure_is_read_by_the_5_s_and_60_s_rule(seconds: float, words: str) -> None:
    answer = _json(503, _status(503, "unavailable"), {"Retry-After": "1"}, seconds=seconds)
    result, _ = await _probe({PROBE: [answer]})
    assert any(words in line for line in result.evidence), result.evidence


async def test_no_answer_in_15_s_points_past_the_dial_at_the_response_path() -> None:
    result, _ = await _probe({PROBE: [ClusterError("team-a", "timeout", "GET timed out after 15s")]})
    assert result.outcome is ProbeOutcome.TIMEOUT
    assert "A failed dial gives up at 5 s and answers 503" in result.next_step
    assert "the target's response path (the proxy cuts at 60 s)" in result.next_step


async def test_a_5xx_other_than_503_is_not_put_down_to_the_target() -> None:
    """troubleshoot/resource-proxy.mdx, "Target tenant cluster returns 503 unavailable": the proxy maps the
    target's 5xx to 503, so a 500 through the proxy is not the target's own answer."""
    result, _ = await _probe({PROBE: [_json(500, _status(500, "internal error"))]})
    assert result.outcome is ProbeOutcome.HTTP_ERROR
    assert "come from the target" not in result.next_step
    assert "turns the target's 5xx into 503" in result.next_step
