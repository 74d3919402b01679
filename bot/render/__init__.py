"""Turns neutral findings into Slack Block Kit or terminal text."""
