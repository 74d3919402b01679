"""Pure domain logic: no I/O, no Slack, no HTTP."""
