"""The check commands of the `proxybot` CLI: each module exports `COMMANDS` for `bot.cli` to register."""
