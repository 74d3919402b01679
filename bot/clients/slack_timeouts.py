"""How long one Slack Web API call may take, apart from the client so the lease's rules (`bot.lease`, which
`check-config` applies) read it without importing slack_sdk and aiohttp."""

from __future__ import annotations

# Slack answers in well under a second; a call that takes longer is retried (a post found by its mark
# first). The leader lease must outlast it (`bot.lease.fencing_floor`).
DEFAULT_TIMEOUT = 5.0
