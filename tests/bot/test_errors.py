"""The hierarchy drawn in bot/errors.py's docstring is the one the classes have, and it names them all."""

from __future__ import annotations

import re

import bot.errors
from bot.clients.slack import SlackError, SlackRateLimited, SlackRejected, SlackTransient
from bot.errors import ProxybotError
from bot.store.errors import StoreError

CLASSES: dict[str, type[Exception]] = {
    name: cls
    for name, cls in vars(bot.errors).items()
    if isinstance(cls, type) and issubclass(cls, ProxybotError)
} | {cls.__name__: cls for cls in (SlackError, SlackRateLimited, SlackRejected, SlackTransient, StoreError)}
_NODE = re.compile(r"^(?P<indent>[\s│]*)(?:[├└]── )?(?P<name>[A-Z]\w+)\s", re.MULTILINE)


def drawn() -> list[tuple[int, str]]:
    """(depth, class name) of every node in the docstring's tree, top to bottom."""
    doc = bot.errors.__doc__ or ""
    tree = doc.split("\n\n")[1]
    return [(len(m["indent"]) // 4, m["name"]) for m in _NODE.finditer(tree + "\n")]


def test_the_diagram_draws_every_error_class_once() -> None:
    names = [name for _, name in drawn()]
    assert sorted(names) == sorted(CLASSES)


def test_each_drawn_parent_is_the_real_parent() -> None:
    parents: list[str] = []
    for depth, name in drawn():
        del parents[depth:]
        if parents:
            assert CLASSES[name].__mro__[1] is CLASSES[parents[-1]], name
        else:
            assert name == "ProxybotError"
        parents.append(name)
