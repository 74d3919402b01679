"""The vendor's reading of proxied answers: identities, 404 causes, named users and targets, timing."""

from __future__ import annotations

import pytest

from bot.domain.proxy_answers import (
    NotFoundCause,
    RequestKind,
    client_identity,
    is_auth_failed,
    latency_rule,
    not_found_causes,
    project_namespace,
    refused_user,
    unavailable_subject,
)


def test_the_client_identity_is_built_from_the_project_namespace_and_name() -> None:
    assert client_identity(project_namespace("default"), "client") == "loft:vcluster:p-default:client"


def test_named_users_targets_and_auth_failed_are_read_from_the_answers() -> None:
    msg = 'widgets.example.com is forbidden: User "loft:vcluster:p-a:team-a" cannot list resource'
    assert refused_user(msg) == "loft:vcluster:p-a:team-a"
    assert refused_user("forbidden") is None
    text = 'target tenant cluster "crd-store" for example.com/v1 is unavailable'
    assert unavailable_subject(text) == ("crd-store", "example.com/v1")
    assert unavailable_subject("service unavailable") is None
    assert is_auth_failed("Auth failed")
    assert not is_auth_failed("Unauthorized")


@pytest.mark.parametrize(
    ("access", "kind", "first", "applying"),
    [
        ("owned", RequestKind.LIST, NotFoundCause.GENUINE, 1),
        ("all", RequestKind.LIST, NotFoundCause.GENUINE, 1),
        ("owned", RequestKind.NAMED_GET, NotFoundCause.MASKED, 2),
        ("all", RequestKind.NAMED_GET, NotFoundCause.GENUINE, 1),
        ("owned", RequestKind.NAMED_UPDATE, NotFoundCause.MASKED, 4),
        ("all", RequestKind.NAMED_UPDATE, NotFoundCause.NAMESPACE_MISSING, 2),
        ("owned", RequestKind.NAMED_DELETE, NotFoundCause.MASKED, 3),
        ("all", RequestKind.NAMED_DELETE, NotFoundCause.GENUINE, 1),
        ("owned", RequestKind.CREATE, NotFoundCause.NAMESPACE_MISSING, 2),
    ],
)
def test_the_four_404_causes_put_those_that_can_apply_first(
    access: str, kind: RequestKind, first: NotFoundCause, applying: int
) -> None:
    causes = not_found_causes(access, kind)
    assert {c.cause for c in causes} == set(NotFoundCause)
    assert causes[0].cause is first
    assert [c.applies for c in causes] == [True] * applying + [False] * (4 - applying)


@pytest.mark.parametrize("access", ["owned", "all"])
def test_a_missing_namespace_is_never_the_404_of_a_delete(access: str) -> None:
    """troubleshoot/resource-proxy.mdx, "Existing target resources return 404": a namespace missing on the
    client answers 404 for namespaced POST, PUT and PATCH requests, not for DELETE."""
    causes = {c.cause: c.applies for c in not_found_causes(access, RequestKind.NAMED_DELETE)}
    assert causes[NotFoundCause.NAMESPACE_MISSING] is False
    assert {c.cause: c.applies for c in not_found_causes(access, RequestKind.NAMED_UPDATE)}[
        NotFoundCause.NAMESPACE_MISSING
    ]


@pytest.mark.parametrize(
    ("seconds", "says"),
    [
        (0.004, None),
        (2.0, None),
        (5.0, "dial timeout"),
        (6.4, "dial timeout"),
        (15.0, None),
        (59.0, "request deadline"),
        (60.0, "request deadline"),
        (None, None),
    ],
)
def test_the_latency_rule(seconds: float | None, says: str | None) -> None:
    words = latency_rule(seconds)
    assert (words is None) if says is None else (words is not None and says in words)
