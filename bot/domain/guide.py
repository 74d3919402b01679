"""The sections of the vendor's guide that alerts and findings cite, each named once, as the guide has it."""

from __future__ import annotations

MONITOR = "Monitor the proxy"
METRICS = f"{MONITOR} > Metrics reference"
PEER_METRICS = f"{METRICS} > Peer health metrics"
REQUEST_METRICS = f"{METRICS} > Request metrics"
WATCH_METRICS = f"{METRICS} > Watch metrics"
OUTCOME_REASONS = f"{METRICS} > Outcome reasons"
ALERT_STARTING_POINTS = f"{MONITOR} > Alert starting points"
SYNTHETIC_PROBE = f"{MONITOR} > Synthetic probe"
CONFIRM_PATH = "Prefer direct connections over the DERP relay > Confirm which path you are on"
TROUBLESHOOT = "Troubleshoot the resource proxy"
APISERVICE_DELETE_DENIED = f"{TROUBLESHOOT} > Deleting the proxy APIService or Service is denied"
PROXY_DOES_NOT_START = f"{TROUBLESHOOT} > The proxy doesn't start"
KEEP_VERSIONS_CURRENT = "Operate the resource proxy (its first rule: keep versions current)"
