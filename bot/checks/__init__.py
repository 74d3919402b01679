"""The on-demand checks (probe, path, status, reasons, verify, netpol): one implementation, two front ends.

Each check returns a neutral result; the CLI (`bot/cli/`) and Slack (`/proxy` in `handlers/commands.py`,
the alert buttons) render it. The argument validators both front ends share live with their checks
(`resolve_target`, `check_repeat`, `check_samples`, `chosen_clusters`), so both refuse the same input alike.
"""
