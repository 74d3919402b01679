"""`PROXYBOT_*` variables that mean nothing are warned about with the name that was probably meant."""

from __future__ import annotations

import pytest

from config.environment import KNOWN, SECRET_OVERRIDES, unknown_variables

IGNORED = "set, but proxybot reads no such variable, so it changes nothing"


@pytest.mark.parametrize(
    ("name", "meant"),
    [
        ("PROXYBOT_SLACK_TOKEN", "did you mean PROXYBOT_SLACK_BOT_TOKEN?"),
        ("PROXYBOT_WEBHOOK_TOKEN", "did you mean PROXYBOT_ALERTMANAGER_WEBHOOK_TOKEN?"),
        ("PROXYBOT_CONFIG_FILE", "did you mean PROXYBOT_CONFIG?"),
        ("PROXYBOT_SIGNING_SECRET", "did you mean PROXYBOT_SLACK_SIGNING_SECRET?"),
    ],
)
def test_a_misspelt_secret_variable_names_the_closest_real_one(name: str, meant: str) -> None:
    assert unknown_variables({name: "x"}) == [f"{name}: {IGNORED}; {meant}"]


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("PROXYBOT_SERVER_PORT", "server.port"),
        ("PROXYBOT_PROMETHEUS_URL", "prometheus.url"),
        ("PROXYBOT_SLACK_DEFAULT_CHANNEL", "slack.default_channel"),
        ("PROXYBOT_ALERTMANAGER_WEBHOOK_USERNAME", "alertmanager.webhook_username"),
    ],
)
def test_a_variable_named_after_a_setting_points_to_the_config_key(name: str, key: str) -> None:
    assert unknown_variables({name: "x"}) == [
        f"{name}: {IGNORED}; {key} is set in the config file (`${{{name}}}` there reads this variable)"
    ]


def test_a_name_like_nothing_lists_the_variables_there_are() -> None:
    assert unknown_variables({"PROXYBOT_DEBUG": "1"}) == [
        f"PROXYBOT_DEBUG: {IGNORED}; the variables are {', '.join(KNOWN)}"
    ]


def test_the_real_variables_and_other_prefixes_are_not_warned_about() -> None:
    env = dict.fromkeys([*SECRET_OVERRIDES, "PROXYBOT_CONFIG", "SLACK_BOT_TOKEN", "proxybot_lower"], "x")
    assert unknown_variables(env) == []
