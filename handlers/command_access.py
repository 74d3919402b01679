"""Who may run which `/proxy` command from where: `access` in the configuration, and nothing else.

A channel may query the clusters it is granted under `access.channels` (and a cluster's alert channel
that cluster, unless `access.alert_channels_may_query` is off). A direct message follows
`access.direct_messages`: only the users listed there, only for the clusters listed there; nobody by
default. Silencing also needs `access.silencers`. Refusals say what is refused and why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bot.errors import Refused
from bot.reads.context import TargetRef, resolve_target
from bot.render.blocks import code
from bot.subcommands import SLASH, Access
from config.clusters import ClusterSettings
from config.settings import Requester, Settings


@dataclass(frozen=True)
class Asker:
    """Who typed the command, from where, as bolt verified it."""

    who: Requester
    user_name: str
    where: str  # the channel as logs name it: "#ops", "this direct message"

    @property
    def place(self) -> str:
        """Where they asked, as an answer names it (mrkdwn): `#ops` as code, shown rather than linked."""
        return self.where if self.who.direct_message else code(self.where)

    @classmethod
    def from_body(cls, body: Mapping[str, Any]) -> Asker:
        channel_id = str(body.get("channel_id") or "")
        channel_name = body.get("channel_name")
        direct = channel_name == "directmessage" or channel_id.startswith("D")
        user = str(body.get("user_id") or "")
        who = Requester(user, channel_id, str(channel_name) if channel_name else None, direct)
        where = "this direct message" if direct else f"#{channel_name}" if channel_name else channel_id
        return cls(who, str(body.get("user_name") or user), where)


def queryable(settings: Settings, who: Requester) -> tuple[ClusterSettings, ...]:
    return tuple(c for c in settings.clusters if settings.may_query(c.name, who))


def allowed_subcommands(
    settings: Settings, who: Requester, *, silences: bool, digest: bool
) -> frozenset[str]:
    """What `who` may run from where they ask (what `help` lists), given what this bot can do."""
    clusters = queryable(settings, who)
    rule = {
        Access.ANYONE: True,
        Access.QUERY: bool(clusters),
        Access.SILENCE: silences and any(settings.may_silence(c.name, who) for c in clusters),
        Access.FLEET: digest and bool(clusters) and len(clusters) == len(settings.clusters),
    }
    return frozenset(name for name, slash in SLASH.items() if rule[slash.access])


def query_refusal(cluster: str, asker: Asker) -> Refused:
    if asker.who.direct_message:
        why = "direct messages may query only the clusters `access.direct_messages` grants, to its users"
    else:
        why = f"{asker.place} is not granted it under `access` in proxybot's configuration"
    return Refused(f"You may not query cluster {code(cluster)} from here: {why}.")


def silence_refusal(settings: Settings, cluster: str, who: Requester) -> str:
    """Why `who` may not silence alerts of `cluster` from where they ask (buttons and `/proxy silence`)."""
    if who.user not in settings.access.silencers:
        why = "you are not in `access.silencers` of proxybot's configuration"
    elif who.direct_message:
        why = f"direct messages may not query cluster {code(cluster)} (see `access.direct_messages`)"
    else:
        why = f"this channel may not query cluster {code(cluster)} (see `access` in the configuration)"
    return f"You may not silence alerts of cluster {code(cluster)}: {why}."


def granted(settings: Settings, asker: Asker, sub: str) -> tuple[ClusterSettings, ...]:
    """The clusters the asker may query; Refused when none (every subcommand but help needs one)."""
    clusters = queryable(settings, asker.who)
    if not clusters:
        if asker.who.direct_message:
            why = "your direct messages are granted no cluster (see `access.direct_messages`)"
        else:
            why = f"{asker.place} is granted no cluster under `access` in proxybot's configuration"
        raise Refused(f"You may not run `/proxy {sub}` here: {why}.")
    return clusters


def target_for(settings: Settings, asker: Asker, name: str) -> TargetRef:
    """A configured target the asker may query; unknown names list only targets they may see."""
    ref = resolve_target(settings, name, queryable(settings, asker.who))
    # A target several clients forward to: the first of them the asker may query.
    mine = (
        TargetRef(c, t) for c, t in settings.forwarders(ref.name) if settings.may_query(c.name, asker.who)
    )
    found = next(mine, None)
    if found is None:
        raise query_refusal(ref.cluster.name, asker)
    return found
