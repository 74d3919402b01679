"""`proxybot check-vcluster` for the terminal: the verdict, the group/versions the proxy would serve, then
every problem with its YAML path (kept whole, to search for in the file), what is wrong and the next step.
"""

from __future__ import annotations

from bot.domain.vcluster_yaml_result import Problem, ProblemSeverity, ProxyState, Route, VclusterYamlResult
from bot.render.layout import WIDTH, Style, wrap
from bot.render.words import counted

_INDENT = "    "
_HEADLINE = {
    ProxyState.STARTS: "ok: vCluster's startup validation accepts the resource proxy configuration",
    ProxyState.ALL_DISABLED: "ok, but every entry is disabled: vCluster starts without the resource proxy",
    ProxyState.NOT_CONFIGURED: (
        "ok: no experimental.proxy.customResources entries: vCluster starts without the resource proxy"
    ),
    ProxyState.REFUSED: "refused: vCluster's startup validation refuses this configuration",
}
_COLOUR = {ProblemSeverity.REFUSED: "31", ProblemSeverity.WARNING: "33"}


def _route(route: Route) -> list[str]:
    project = route.project or "the client's project"
    text = f"{route.group_version} -> {route.target} ({project}), accessResources {route.access}: "
    text += ", ".join(route.keys)
    first, *rest = wrap(text, WIDTH - 2 * len(_INDENT))
    return [_INDENT + first, *(2 * _INDENT + line for line in rest)]


def _problem(problem: Problem, style: Style) -> list[str]:
    label = style.wrap(_COLOUR[problem.severity], problem.severity.value)
    width = WIDTH - len(_INDENT)
    lines = [f"{label} {style.bold(problem.key)}"]
    lines += [_INDENT + line for line in wrap(problem.message, width)]
    lines += [_INDENT + line for line in wrap(f"next: {problem.next_step}", width)]
    return lines


def _counts(result: VclusterYamlResult) -> str:
    refused = sum(1 for p in result.problems if p.severity is ProblemSeverity.REFUSED)
    warnings = len(result.problems) - refused
    return f"{counted(refused, 'refusal')}, {counted(warnings, 'warning')}"


def vcluster_text(file: str, result: VclusterYamlResult, style: Style | None = None) -> str:
    """The whole answer for one vcluster.yaml."""
    style = style or Style()
    colour = "32" if result.passed else "31"
    lines = [f"{file}: {style.wrap(colour, _HEADLINE[result.proxy])}"]
    if result.routes:
        lines.append(f"the proxy would serve {counted(len(result.routes), 'group/version')}:")
        lines += [line for route in result.routes for line in _route(route)]
    for problem in result.problems:
        lines += ["", *_problem(problem, style)]
    if result.problems:
        lines += ["", _counts(result)]
    return "\n".join(lines)
