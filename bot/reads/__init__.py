"""The shared cluster reads: what the checks, the alerts and the digest all read from the clusters.

`context.py` (the readers per cluster, a target's lookup and its reference), `triage.py` (the quick-triage
reads: a target's control-plane pods, its versions, its APIServices), `control_plane.py`, `apiservices.py`,
`control_plane_logs.py` (the client control plane's log lines, per pod). The checks (`bot/checks/`) build
on them; so do alert enrichment (`bot/alerts/`) and the digest (`bot/digest/`).
"""
