"""The probe's request: built from the target's config, overrides validated, unknown targets refused."""

from __future__ import annotations

import pytest

from bot.checks.probe import ProbeRequest, probe_request
from bot.domain.paths import ApiPath
from bot.errors import InputError
from tests.fakes.probe_settings import PROBE, SETTINGS, TARGET


def _request(**overrides: str) -> ProbeRequest:
    return probe_request(SETTINGS, TARGET, **overrides)


def test_defaults_come_from_the_target_probe_config() -> None:
    request = _request()
    assert request.path == ApiPath(PROBE, (("limit", "1"),))
    assert request.url == PROBE + "?limit=1"
    assert request.cluster == "team-a"


def test_overrides_must_be_names_and_a_configured_group_version() -> None:
    request = _request(group_version="data.example.com/v1alpha1", resource="datasets", namespace="apps")
    assert request.path.path == "/apis/data.example.com/v1alpha1/namespaces/apps/datasets"
    with pytest.raises(InputError, match="not proxied to platform/crd-store"):
        _request(group_version="data.example.com/v1")
    for field, bad in [("group_version", "example.com/v1/../x"), ("resource", "a/b"), ("namespace", "%2e")]:
        with pytest.raises(InputError, match=f"^{field}: "):
            _request(**{field: bad})


def test_unknown_target_is_refused() -> None:
    with pytest.raises(InputError, match=r"^TARGET: "):
        probe_request(SETTINGS, "platform/other")
