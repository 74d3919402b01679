"""The outbox keys of Slack operations: built here only, so that a re-run enqueues the same key again."""

from __future__ import annotations


def post_key(channel: str, group_key: str) -> str:
    """The outbox key of a message's top-level post: one per channel and group, ever."""
    return f"post:{channel}:{group_key}"


def update_key(channel: str, group_key: str, revision: str) -> str:
    return f"update:{channel}:{group_key}:{revision}"


def show_key(channel: str, group_key: str, revision: str) -> str:
    """An edit that shows the message again as it is when sent (`Enqueuer.show_again`), once per revision;
    not an `update:` key, so it is never taken for the message's newest content."""
    return f"show:{channel}:{group_key}:{revision}"


def reply_key(channel: str, group_key: str, revision: str) -> str:
    return f"reply:{channel}:{group_key}:{revision}"


def upload_key(channel: str, group_key: str, revision: str) -> str:
    return f"upload:{channel}:{group_key}:{revision}"


def reply_edit_key(channel: str, group_key: str, reply: str, revision: str) -> str:
    """An edit of the reply `reply_key(channel, group_key, reply)`, once per `revision`."""
    return f"reply-edit:{channel}:{group_key}:{reply}:{revision}"


def delete_key(channel: str, group_key: str, upload: str) -> str:
    """The outbox key of deleting the files of upload `upload` (its revision) from a message's thread."""
    return f"delete:{channel}:{group_key}:{upload}"
