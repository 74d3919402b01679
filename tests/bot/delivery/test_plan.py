"""Planning the delivery worker's calls: pure, on hand-made rows and times."""

from __future__ import annotations

from dataclasses import replace

from bot.delivery.plan import DEFERRED, SHOW_AGAIN, DeliveryPolicy, backoff, plan
from bot.store.models import OutboxItem, OutboxKind, OutboxState


def row(item_id: int, kind: OutboxKind, group: str = "g1", at: float = 0.0, text: str = "") -> OutboxItem:
    payload = {"group_key": group, "text": text or f"{kind}-{item_id}"}
    return OutboxItem(item_id, f"k{item_id}", "C1", kind, payload, OutboxState.PENDING, 0, at, 0.0)


def test_due_edits_fold_into_the_newest() -> None:
    rows = [row(1, OutboxKind.UPDATE), row(2, OutboxKind.UPDATE), row(3, OutboxKind.UPDATE)]
    [step] = plan(rows, now=10).steps
    assert step.item.id == 3
    assert [i.id for i in step.superseded] == [1, 2]


def test_a_post_not_sent_yet_carries_the_newest_edit() -> None:
    rows = [row(1, OutboxKind.POST, text="first"), row(2, OutboxKind.UPDATE, text="newest")]
    [step] = plan(rows, now=10).steps
    assert (step.item.kind, step.payload["text"]) == (OutboxKind.POST, "newest")
    assert [i.id for i in step.superseded] == [2]


def test_a_post_not_sent_yet_keeps_the_newest_content_when_the_newest_edit_only_shows_it_again() -> None:
    show_again = OutboxItem(
        3,
        "k3",
        "C1",
        OutboxKind.UPDATE,
        {"group_key": "g1", SHOW_AGAIN: True},
        OutboxState.PENDING,
        0,
        0.0,
        0.0,
    )
    rows = [row(1, OutboxKind.POST, text="first"), row(2, OutboxKind.UPDATE, text="newest"), show_again]
    [step] = plan(rows, now=10).steps
    assert (step.item.kind, step.payload["text"]) == (OutboxKind.POST, "newest")
    assert [i.id for i in step.superseded] == [2, 3]


def test_a_row_waiting_for_retry_holds_only_its_own_message() -> None:
    rows = [
        row(1, OutboxKind.POST, "g1", at=50),
        row(2, OutboxKind.REPLY, "g1"),
        row(3, OutboxKind.POST, "g2"),
        row(4, OutboxKind.REPLY, "g2"),
    ]
    planned = plan(rows, now=10)
    assert [s.item.id for s in planned.steps] == [3, 4]
    assert planned.next_at == 50


def test_rows_are_planned_in_enqueue_order_whatever_their_due_times() -> None:
    rows = [
        row(3, OutboxKind.REPLY, "g2", at=5),
        row(1, OutboxKind.POST, "g1", at=9),
        row(2, OutboxKind.POST, "g2"),
    ]
    assert [s.item.id for s in plan(rows, now=10).steps] == [1, 2, 3]


def test_an_edit_waits_for_its_message_edit_slot_and_says_when() -> None:
    rows = [row(1, OutboxKind.UPDATE, "g1"), row(2, OutboxKind.REPLY, "g1")]
    planned = plan(rows, now=10, edit_ready={"g1": 11.5})
    assert [s.item.id for s in planned.steps] == [2]
    assert planned.next_at == 11.5


def test_edits_go_first_then_posts_then_replies_each_message_in_order() -> None:
    rows = [
        row(1, OutboxKind.REPLY, "storm"),
        row(2, OutboxKind.REPLY, "g1"),
        row(3, OutboxKind.POST, "storm"),
        row(4, OutboxKind.UPDATE, "g2"),
    ]
    assert [s.item.id for s in plan(rows, now=10).steps] == [4, 3, 1, 2]


def test_backoff_doubles_with_jitter_and_is_capped() -> None:
    policy = DeliveryPolicy(backoff_base=1.0, backoff_cap=60.0)
    assert [backoff(n, policy, rand=1.0) for n in range(4)] == [1.0, 2.0, 4.0, 8.0]
    assert backoff(2, policy, rand=0.0) == 2.0
    assert backoff(50, policy, rand=1.0) == 60.0


def reply_rows() -> list[OutboxItem]:
    """A group's post, its details reply (keyed as delivery keys it), and two edits of that reply."""
    details = row(2, OutboxKind.REPLY, text="details v1")
    details = OutboxItem(
        2, "reply:C1:g1:details", "C1", details.kind, details.payload, details.state, 0, 0, 0
    )
    edits = [row(i, OutboxKind.REPLY_EDIT, text=f"details v{i}") for i in (3, 4)]
    edits = [
        OutboxItem(e.id, e.key, e.channel, e.kind, {**e.payload, "reply": "details"}, e.state, 0, 0, 0)
        for e in edits
    ]
    return [row(1, OutboxKind.POST), details, *edits]


def test_edits_of_a_reply_not_sent_yet_go_out_as_the_reply() -> None:
    steps = plan(reply_rows(), now=10).steps
    assert [(s.item.id, s.payload["text"]) for s in steps] == [(1, "post-1"), (2, "details v4")]
    assert [i.id for i in steps[1].superseded] == [3, 4]


def test_of_a_sent_reply_only_the_newest_edit_goes_out_before_the_paced_calls() -> None:
    rows = [*reply_rows()[2:], row(5, OutboxKind.REPLY, text="1 new")]
    steps = plan(rows, now=10).steps
    assert [(s.item.id, s.item.kind) for s in steps] == [(4, OutboxKind.REPLY_EDIT), (5, OutboxKind.REPLY)]
    assert [i.id for i in steps[0].superseded] == [3]


def test_a_deferred_reply_holds_back_only_its_own_edits() -> None:
    deferred = row(2, OutboxKind.REPLY, at=50)
    deferred = replace(deferred, key="reply:C1:g1:details", payload={**deferred.payload, DEFERRED: True})
    edit = row(4, OutboxKind.REPLY_EDIT)
    edit = replace(edit, payload={**edit.payload, "reply": "details"})
    rows = [row(1, OutboxKind.POST), deferred, row(3, OutboxKind.UPDATE), edit, row(5, OutboxKind.REPLY)]
    planned = plan(rows, now=10)
    # The post (carrying the newest edit) and the later reply go; the deferred reply and its edit wait.
    assert [s.item.id for s in planned.steps] == [1, 5]
    assert planned.next_at == 50
    # A reply waiting for a retry (not deferred) still holds back every later row of its message.
    retried = replace(row(2, OutboxKind.REPLY, at=50), attempts=1)
    assert [
        s.item.id for s in plan([row(1, OutboxKind.POST), retried, row(5, OutboxKind.REPLY)], 10).steps
    ] == [1]
