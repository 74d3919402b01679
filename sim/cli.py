"""`proxybot sim`: run the simulated clusters alone, optionally writing kubeconfigs and a proxybot config."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sim.scenarios import SCENARIOS

if TYPE_CHECKING:
    from sim.server import SimServer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scenario", default="healthy", help="scenario to run (see --list)")
    parser.add_argument("--port", type=int, default=0, help="HTTPS port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--speed", type=float, default=1.0, help="simulated seconds per wall second")
    parser.add_argument("--seed", type=int, default=7, help="seed of the simulated traffic")
    parser.add_argument(
        "--write-config", type=Path, metavar="F", help="write a proxybot config (and kubeconfigs)"
    )
    parser.add_argument(
        "--platform",
        action="store_true",
        help="also play the vCluster Platform (management API, proxy paths, one access key); "
        "--write-config then writes platform: and no clusters:",
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")


def run(args: argparse.Namespace) -> int:
    if args.list:
        width = max(map(len, SCENARIOS))
        for scenario in SCENARIOS.values():
            print(f"{scenario.name:<{width}}  {scenario.summary}")
        return 0
    if args.scenario not in SCENARIOS:
        print(f"unknown scenario {args.scenario!r}; try --list", file=sys.stderr)
        return 2
    if args.speed <= 0:
        print("--speed must be positive", file=sys.stderr)
        return 2
    from sim.server import SimServer

    try:
        server = SimServer(
            scenario=args.scenario, speed=args.speed, seed=args.seed, port=args.port, platform=args.platform
        )
    except OSError as exc:
        print(f"cannot listen on port {args.port}: {exc.strerror}", file=sys.stderr)
        return 1
    with server as srv:
        print(f"scenario {args.scenario} at {args.speed}x on {srv.base_url}")
        for info in srv.clusters():
            print(f"  {info.kind:<13} {info.name:<14} {info.server_url}")
        print(f"  kube-state-metrics         {srv.ksm_url}")
        if srv.platform is not None:
            _print_platform(srv, args.write_config is None)
        if args.write_config is not None:
            print(f"wrote {srv.write_config(args.write_config)}")
        print("Ctrl-C to stop", flush=True)
        try:
            srv.wait()
        except KeyboardInterrupt:
            print("stopped")
    return 0


def _print_platform(srv: SimServer, show_key: bool) -> None:
    """The platform's paths; its (throwaway) key only when no config file will hold it."""
    assert srv.platform is not None
    print(f"  platform                   {srv.platform_url}")
    for name, (url, _) in srv.platform_contexts().items():
        print(f"    {name:<24} {url}")
    if show_key:
        print(f"  access key                 {srv.platform.access_key}")
