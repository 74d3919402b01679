"""Credential files that rotate; the TLS trust and the authentication of the Prometheus and Alertmanager
clients."""

from __future__ import annotations

import base64
import logging
from pathlib import Path

import httpx
import pytest

from bot.clients.credentials import CredentialFile, http_security
from bot.errors import ConfigError
from config.settings import PrometheusSettings


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_a_credential_file_is_read_again_once_it_is_a_minute_old(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "token"
    path.write_text("  one\n")
    clock = Clock()
    token = CredentialFile(path, what="prometheus.bearer_token_file", clock=clock)
    assert await token.current() == "one"  # the first call reads it, whitespace around it dropped
    path.write_text("two")
    clock.now = 59.9
    assert await token.current() == "one"
    clock.now = 60.0
    assert await token.current() == "two"
    path.write_text("")
    clock.now = 120.0
    with caplog.at_level(logging.WARNING):
        assert await token.current() == "two"  # an empty rewrite keeps the last value
    assert f"prometheus.bearer_token_file: {path} is empty; still using the value read before" in caplog.text


def test_a_missing_or_empty_file_names_itself(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=rf"^x: cannot read {tmp_path}/nope: No such file or directory$"):
        CredentialFile(tmp_path / "nope", what="x").load()
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ValueError, match=r"^x: .*/empty is empty$"):
        CredentialFile(tmp_path / "empty", what="x").load()


def _settings(tmp_path: Path, **fields: object) -> PrometheusSettings:
    return PrometheusSettings.model_validate({"url": "https://prometheus.example:9090", **fields})


async def test_security_builds_the_header_each_scheme_sends(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("tok\n")
    (tmp_path / "password").write_text("pa:ss\n")
    bearer = http_security(_settings(tmp_path, bearer_token_file=str(tmp_path / "token")), "prometheus")
    basic = http_security(
        _settings(tmp_path, basic_auth={"username": "bot", "password_file": str(tmp_path / "password")}),
        "prometheus",
    )
    sent = []
    for security in (bearer, basic):
        assert security.auth is not None
        flow = security.auth.async_auth_flow(httpx.Request("GET", "https://prometheus.example:9090/"))
        sent.append((await flow.__anext__()).headers["Authorization"])
    assert sent == ["Bearer tok", "Basic " + base64.b64encode(b"bot:pa:ss").decode()]
    assert http_security(_settings(tmp_path), "prometheus").auth is None


def test_files_that_cannot_be_used_at_start_are_config_errors_naming_the_key(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_text("not a certificate")
    settings = _settings(
        tmp_path, bearer_token_file=str(tmp_path / "missing"), ca_file=str(tmp_path / "ca.pem")
    )
    with pytest.raises(ConfigError) as caught:
        http_security(settings, "prometheus")
    assert caught.value.problems == [
        f"prometheus.ca_file: {tmp_path / 'ca.pem'} is not a PEM CA bundle (no certificate loads from it)",
        f"prometheus.bearer_token_file: cannot read {tmp_path / 'missing'}: No such file or directory",
    ]
