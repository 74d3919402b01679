"""The on-demand checks (probe, path, status, reasons, verify, netpol): one implementation, two front ends.

Each check returns a neutral result; the CLI (`bot/cli/`) and Slack (`handlers/commands.py`) render it.
"""
