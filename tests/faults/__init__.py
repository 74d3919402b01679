"""The fault suite: real processes, each fault injected while traffic flows."""
