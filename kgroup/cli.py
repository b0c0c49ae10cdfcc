"""The `kgroup` command line.

Each subcommand lives in its own module and registers itself through `SUBCOMMANDS`: a module exposes
`add_parser(subparsers)` which adds its parser and sets `func` (called with the parsed namespace, returning an
exit code). Exit codes: 0 success, 1 runtime failure, 2 usage error (argparse's own convention).
"""

from __future__ import annotations

import argparse
import importlib
import sys

# Module paths of subcommands; each exposes add_parser(subparsers).
SUBCOMMANDS = (
    "kgroup.cmd_hash",
    "kgroup.cmd_demo",
    "kgroup.cmd_assign",
    "kgroup.cmd_serve",
    "kgroup.cmd_run",
    "kgroup.cmd_fuzz",
    "kgroup.cmd_analyze",
    "kgroup.cmd_sweep",
    "kgroup.cmd_ctl",
    "kgroup.cmd_diagram",
    "kgroup.cmd_partition",
    "kgroup.cmd_placement",
    "kgroup.cmd_groups",
    "kgroup.cmd_watch",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kgroup",
        description="kgroup: a Kafka consumer-group coordination emulator (classic rebalance protocol).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
