"""The strict base of every settings section: unknown keys are refused where they are, values are frozen."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from config.settings import Settings
from tests.fakes.config_data import PROBE, cluster, config, locations, target


@pytest.mark.parametrize(
    ("section", "loc"),
    [
        ({"slack": {"default_channel": "#a", "bot_tokn": "x"}}, ("slack", "bot_tokn")),
        ({"sever": {}}, ("sever",)),
    ],
)
def test_unknown_keys_are_refused(section: dict[str, Any], loc: tuple[str, ...]) -> None:
    assert locations(config(**section)) == {loc}


def test_unknown_keys_deep_in_a_target_are_refused() -> None:
    probe = {"group_version": "ledger.example.com/v1", "resource": "accounts", "verb": "delete"}
    assert locations(config(clusters=[cluster(targets=[target(probe=probe)])])) == {(*PROBE, "verb")}


def test_settings_are_immutable() -> None:
    settings = Settings.model_validate(config())
    with pytest.raises(ValidationError):
        settings.server.port = 1  # type: ignore[misc]
