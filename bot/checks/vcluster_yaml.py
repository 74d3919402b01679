"""A client's vcluster.yaml judged as vCluster's startup validation judges its resource proxy section.

The rules come from the vendor's configuration page and troubleshooting playbook. Refused (vCluster does not
start the proxy with them):
- a key that is not `<resource>.<group>/<version>` or `*.<group>/<version>` (the group is required);
- `targetVirtualCluster.name` missing on any entry, disabled entries included; field values of the wrong
  type; an `accessResources` other than `owned` or `all`; a target name or project that is not a DNS label;
  a field vCluster's values schema does not know under `experimental.proxy` (it allows no other);
- enabled entries of one group/version with different targets or access modes. Validation compares the
  values as written, before defaults, so leaving `accessResources` (or `targetVirtualCluster.project`) out
  of one entry and writing it on another is refused even when the written value is the default;
- a wildcard and an enabled explicit entry for one group/version (a disabled explicit entry is fine);
- an enabled proxied API group also synced by `sync.toHost.customResources` or
  `sync.fromHost.customResources` (compared by group, whatever the resource or version).
Warned (it starts, but): every entry disabled (then the proxy does not start at all); wildcard keys (the
fallback discovery document of a wildcard is an empty list); `accessResources: all` (a privileged client);
vCluster's generated NetworkPolicies without a control-plane UDP egress rule (the proxy falls back to the
DERP relay). Duplicate keys on the way to and under `customResources` are refused here: YAML parsers
disagree about them (most keep the last one silently), so what vCluster would read is not certain.

Each problem names the YAML path it is about, e.g.
`experimental.proxy.customResources["widgets.example.com/v1"]`. Pure: the file's bytes in, a verdict out.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import yaml

from bot.checks.vcluster_yaml_entry import (
    CUSTOM_RESOURCES,
    ProxyEntry,
    entry_path,
    kind,
    read_entry,
    refused,
    unknown_fields,
    warning,
)
from bot.domain.vcluster_yaml_result import Problem, ProblemSeverity, ProxyState, Route, VclusterYamlResult

ROOT_KEY = "(file)"
PROXY, _, CUSTOM_FIELD = CUSTOM_RESOURCES.rpartition(".")
SYNC_PATHS = ("sync.toHost.customResources", "sync.fromHost.customResources")
NETPOL_EGRESS = "policies.networkPolicy.controlPlane.egress"
_MERGE_TAG = "tag:yaml.org,2002:merge"


# -- one group/version --------------------------------------------------------------------------------------


def _written(value: str | None) -> str:
    return "omits it" if value is None else f"sets {value!r}"


def _disagreement(
    field: str, entry: ProxyEntry, first: ProxyEntry, mine: str | None, theirs: str | None
) -> str:
    """Why `entry` disagrees with `first` on one field, or '' when it does not."""
    if mine == theirs:
        return ""
    where = f"{first.key!r}, the first enabled entry of {entry.group_version}"
    if mine is None or theirs is None:
        return (
            f"{field}: this entry {_written(mine)} while {where}, {_written(theirs)}; validation compares "
            "the values as written, before defaults"
        )
    return f"{field}: {mine!r} here, {theirs!r} on {where}"


def _agreement(entry: ProxyEntry, first: ProxyEntry) -> list[str]:
    """Every field on which `entry` disagrees with `first` (a missing name is refused on its own)."""
    names_known = bool(entry.name and first.name)
    return [
        why
        for why in (
            _disagreement("targetVirtualCluster.name", entry, first, entry.name, first.name)
            if names_known
            else "",
            _disagreement("targetVirtualCluster.project", entry, first, entry.project, first.project),
            _disagreement("accessResources", entry, first, entry.access, first.access),
        )
        if why
    ]


def _group_version_problems(entries: Sequence[ProxyEntry]) -> Iterator[Problem]:
    enabled = [e for e in entries if e.enabled]
    if not enabled:
        return
    first = enabled[0]
    gv = first.group_version
    fix = f"write one target and one access mode identically on every entry of {gv} (or split the API group)"
    for entry in entries:
        whys = _agreement(entry, first) if entry is not first else []
        if whys and entry.enabled:
            message = f"enabled entries of {gv} must agree on target and access mode: " + "; ".join(whys)
            yield refused(entry.path, message, fix)
        elif whys:
            message = "disabled, but enabling it would be refused: " + "; ".join(whys)
            yield warning(entry.path, message, fix)
    yield from _wildcard_problems(enabled)


def _wildcard_problems(enabled: Sequence[ProxyEntry]) -> Iterator[Problem]:
    wildcards = [e for e in enabled if e.wildcard]
    for entry in enabled:
        if wildcards and not entry.wildcard:
            yield refused(
                entry.path,
                f"enabled beside the wildcard {wildcards[0].key!r}: one group/version takes a wildcard or "
                "enabled explicit keys, not both",
                "keep the explicit keys (fallback discovery advertises them) and remove the wildcard, or "
                "disable the explicit entry",
            )
    for entry in wildcards:
        yield warning(
            entry.path,
            "a wildcard key: while the target is unreachable, fallback discovery for "
            f"{entry.group_version} is an empty list, which some controllers and CLIs handle poorly",
            "prefer explicit keys for the resources clients depend on, e.g. "
            f"<resource>.{entry.group_version}",
        )


def _access_all(entry: ProxyEntry) -> Problem:
    return warning(
        f"{entry.path}.accessResources",
        "accessResources: all removes ownership filtering: target RBAC alone decides whether this client may "
        "read, change and delete other tenant clusters' objects; treat the client as privileged",
        "stay on owned unless the client must manage objects it did not create",
    )


# -- the document -------------------------------------------------------------------------------------------


def _at(document: Mapping[Any, Any], dotted: str, problems: list[Problem]) -> Mapping[Any, Any]:
    """The mapping at a dotted path; {} when absent, refused when something else is in the way."""
    node: Mapping[Any, Any] = document
    walked: list[str] = []
    for part in dotted.split("."):
        walked.append(part)
        child = node.get(part)
        if child is None:
            return {}
        if not isinstance(child, Mapping):
            where = ".".join(walked)
            problems.append(refused(where, f"must be a mapping, not {kind(child)}", "fix its indentation"))
            return {}
        node = child
    return node


def _synced_groups(document: Mapping[Any, Any], problems: list[Problem]) -> dict[str, list[str]]:
    """API group -> the enabled sync.toHost/fromHost customResources keys of that group."""
    groups: dict[str, list[str]] = {}
    for base in SYNC_PATHS:
        for key, value in _at(document, base, problems).items():
            resource_group = str(key).partition("/")[0]
            _, dot, group = resource_group.partition(".")
            if dot and group and isinstance(value, Mapping) and value.get("enabled") is True:
                groups.setdefault(group, []).append(f"{base}[{json.dumps(str(key))}]")
    return groups


def _sync_conflict(entry: ProxyEntry, synced: list[str]) -> Problem:
    return refused(
        entry.path,
        f"the API group {entry.group} is proxied and also synced by {', '.join(synced)}",
        f"either proxy {entry.group} or sync it: disable or remove one side",
    )


def _allows_udp(rule: object) -> bool:
    """A NetworkPolicy egress rule that admits UDP on any port (tsnet binds a new UDP port each session)."""
    if not isinstance(rule, Mapping):
        return False
    ports = rule.get("ports")
    if not ports:
        return True
    return any(isinstance(p, Mapping) and p.get("protocol") == "UDP" and p.get("port") is None for p in ports)


def _netpol_problem(document: Mapping[Any, Any], problems: list[Problem]) -> Problem | None:
    policy = _at(document, "policies.networkPolicy", problems)
    if policy.get("enabled") is not True:
        return None
    egress = _at(document, "policies.networkPolicy.controlPlane", problems).get("egress")
    if isinstance(egress, list) and any(_allows_udp(rule) for rule in egress):
        return None
    return warning(
        NETPOL_EGRESS,
        "policies.networkPolicy.enabled is true without a control-plane egress rule allowing UDP: the "
        "generated policies block the direct WireGuard path to the target, so the proxy falls back to the "
        "DERP relay",
        "add the UDP egress rule (and the matching ingress rule on the target's vcluster.yaml): "
        "`proxybot netpol --client NS/RELEASE --target NS/RELEASE` prints both",
    )


def _routes(entries: Sequence[ProxyEntry]) -> tuple[Route, ...]:
    by_gv: dict[str, list[ProxyEntry]] = {}
    for entry in entries:
        if entry.enabled:
            by_gv.setdefault(entry.group_version, []).append(entry)
    return tuple(
        Route(gv, same[0].name, same[0].project, same[0].access or "owned", tuple(e.key for e in same))
        for gv, same in by_gv.items()
    )


def judge_document(document: object) -> VclusterYamlResult:
    """Judge a parsed vcluster.yaml (None, an empty file, is a valid one with every default)."""
    if document is None:
        document = {}
    if not isinstance(document, Mapping):
        why = f"the top level must be a mapping of vcluster.yaml sections, not {kind(document)}"
        problem = refused(ROOT_KEY, why, "check that this is the client's vcluster.yaml")
        return VclusterYamlResult((problem,), ProxyState.REFUSED)
    problems: list[Problem] = []
    custom = _at(document, CUSTOM_RESOURCES, problems)
    problems += unknown_fields(PROXY, _at(document, PROXY, []), (CUSTOM_FIELD,))
    entries = [e for key, value in custom.items() if (e := read_entry(key, value, problems)) is not None]
    by_gv: dict[str, list[ProxyEntry]] = {}
    for entry in entries:
        by_gv.setdefault(entry.group_version, []).append(entry)
    for same in by_gv.values():
        problems += _group_version_problems(same)
    enabled = [e for e in entries if e.enabled]
    synced = _synced_groups(document, problems)
    problems += [_sync_conflict(e, synced[e.group]) for e in enabled if e.group in synced]
    problems += [_access_all(e) for e in enabled if e.access == "all"]
    # An entry with a bad key is not in `entries`, yet its `enabled: true` still means "not all disabled".
    any_enabled = any(isinstance(v, Mapping) and v.get("enabled") is True for v in custom.values())
    if any_enabled and (netpol := _netpol_problem(document, problems)) is not None:
        problems.append(netpol)
    if custom and not any_enabled:
        problems.append(_ALL_DISABLED)
    ordered = tuple(sorted(problems, key=lambda p: p.severity is not ProblemSeverity.REFUSED))
    state = _state(custom, enabled, ordered)
    return VclusterYamlResult(ordered, state, _routes(entries) if state is ProxyState.STARTS else ())


_ALL_DISABLED = warning(
    CUSTOM_RESOURCES,
    "every entry is disabled (enabled: false or omitted): the proxy does not start",
    "set enabled: true on the entries to proxy",
)


def _state(
    custom: Mapping[Any, Any], enabled: Sequence[ProxyEntry], problems: Sequence[Problem]
) -> ProxyState:
    if any(p.severity is ProblemSeverity.REFUSED for p in problems):
        return ProxyState.REFUSED
    if not custom:
        return ProxyState.NOT_CONFIGURED
    return ProxyState.STARTS if enabled else ProxyState.ALL_DISABLED


# -- the file -----------------------------------------------------------------------------------------------


def judge_vcluster_yaml(data: bytes | str) -> VclusterYamlResult:
    """Parse one vcluster.yaml (refusing duplicate keys on the proxy's path) and judge it."""
    try:
        root, document = _load(data)
    except yaml.YAMLError as err:
        return _not_yaml(_yaml_error_text(err))
    except RecursionError:
        return _not_yaml("nested too deeply")
    result = judge_document(document)
    duplicates = _duplicates(root)
    if not duplicates:
        return result
    return VclusterYamlResult((*duplicates, *result.problems), ProxyState.REFUSED)


def _load(data: bytes | str) -> tuple[yaml.Node | None, object]:
    """The node tree (for the duplicate keys and their lines) and the document built from it."""
    loader = yaml.SafeLoader(data)
    try:
        root = loader.get_single_node()
        return root, loader.construct_document(root) if root is not None else None
    finally:
        loader.dispose()


def _not_yaml(why: str) -> VclusterYamlResult:
    problem = refused(ROOT_KEY, f"not valid YAML: {why}", "fix the file there; vCluster cannot read it")
    return VclusterYamlResult((problem,), ProxyState.REFUSED)


def _yaml_error_text(err: yaml.YAMLError) -> str:
    """Where and what, in PyYAML's words: `line 3, column 7: mapping values are not allowed here`."""
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        mark = err.problem_mark
        what = ", ".join(part for part in (err.context, err.problem) if part) or "unreadable"
        return f"line {mark.line + 1}, column {mark.column + 1}: {what}"
    if isinstance(err, yaml.reader.ReaderError) and err.encoding == "unicode":  # a control character
        return f"character {err.position + 1}: {err.reason} (#x{err.character:04x})"
    if isinstance(err, yaml.reader.ReaderError):
        return f"byte {err.position}: not {err.encoding} text ({err.reason})"
    return str(err).splitlines()[0]


def _duplicates(root: yaml.Node | None) -> list[Problem]:
    """Keys written twice in the mappings on the way to customResources, in it and in its entries."""
    problems: list[Problem] = []
    node, path = root, ""
    for part in CUSTOM_RESOURCES.split("."):
        if not isinstance(node, yaml.MappingNode):
            return problems
        problems += _repeated(node, _under(path), only=part)
        node, path = _last_value(node, part), f"{path}.{part}" if path else part
    if not isinstance(node, yaml.MappingNode):
        return problems
    problems += _repeated(node, entry_path)
    for key_node, entry in node.value:
        if not isinstance(entry, yaml.MappingNode):
            continue
        base = entry_path(str(key_node.value))
        problems += _repeated(entry, _under(base))
        target = _last_value(entry, "targetVirtualCluster")
        if isinstance(target, yaml.MappingNode):
            problems += _repeated(target, _under(f"{base}.targetVirtualCluster"))
    return problems


def _under(base: str) -> Callable[[str], str]:
    """The YAML path of a key under `base` (the document itself when empty)."""
    return lambda key: f"{base}.{key}" if base else key


def _repeated(
    node: yaml.MappingNode, path_of: Callable[[str], str], only: str | None = None
) -> list[Problem]:
    """Keys of one mapping written more than once (just `only`, when given)."""
    first_line: dict[str, int] = {}
    problems: list[Problem] = []
    for key_node, _ in node.value:
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == _MERGE_TAG:
            continue
        if only is not None and key_node.value != only:
            continue
        key, line = str(key_node.value), key_node.start_mark.line + 1
        if key not in first_line:
            first_line[key] = line
            continue
        problems.append(
            refused(
                path_of(key),
                f"written twice (lines {first_line[key]} and {line}): YAML parsers disagree on duplicate "
                "keys (most keep the last one silently, some refuse the file)",
                "merge the two into one",
            )
        )
    return problems


def _last_value(node: yaml.MappingNode, key: str) -> yaml.Node | None:
    """The value a YAML loader keeps for `key`: the last one written."""
    found: yaml.Node | None = None
    for key_node, value in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            found = value
    return found
