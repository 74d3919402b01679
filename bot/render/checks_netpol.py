"""The NetworkPolicy values for both ends as a Slack message: two YAML code blocks and the notes."""

from __future__ import annotations

from bot.domain.netpol_result import NetpolResult
from bot.render.blocks import (
    Block,
    Message,
    code_block,
    context,
    esc,
    header,
    message,
    section,
    section_lines,
)


def _yaml_block(title: str, text: str) -> Block:
    return section(f"*{esc(title)}*\n{code_block(text)}")


def netpol_message(result: NetpolResult) -> Message:
    """Client values (egress), target values (ingress), and why both are needed."""
    where = "different control plane clusters" if result.cross else "the same control plane cluster"
    body: list[Block] = [
        header(f"NetworkPolicy values for a direct proxy path ({where})"),
        _yaml_block(f"Client {result.client}: vcluster.yaml", result.client_values),
        _yaml_block(f"Target {result.target}: vcluster.yaml", result.target_values),
        section_lines([f"• {esc(note)}" for note in result.notes]),
    ]
    tail = [context(["Guide: _Prefer direct connections &gt; NetworkPolicy exceptions for a direct path_"])]
    return message(f"NetworkPolicy values for {esc(result.client)} → {esc(result.target)}", body, tail)
