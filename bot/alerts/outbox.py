"""The Slack operations the alert side queues (`Outbox`), and the names of a group's details reply."""

from __future__ import annotations

from bot.delivery.enqueue import Enqueuer

# The name of a group's details reply (`Outbox.reply_in_place`): one per group message, edited in place; a
# group that joined an incident has its own in the incident message's thread (`bot.alerts.incident`).
DETAILS_REPLY = "details"
# Seconds a details reply's first post waits: the message itself goes first, and a storm starting in the
# channel gets its summary and table out before it (they compete for Slack's ~1 post/s per channel).
DETAILS_DEFER = 5.0


# The alert side queues through the delivery side's own API (`bot.delivery.Delivery` is its one
# implementation): written once there, not restated as a protocol here.
Outbox = Enqueuer
