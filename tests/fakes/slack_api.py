"""The fake Slack Web API server lives in the simulator (the demo uses it too); tests import it from here."""

from sim.slack_api import FakeSlack, Message, SlackCall, iter_texts

__all__ = ["FakeSlack", "Message", "SlackCall", "iter_texts"]
