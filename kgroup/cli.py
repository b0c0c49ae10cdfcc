"""The `kgroup` command line.

Each subcommand lives in its own module and registers itself through `SUBCOMMANDS`: a module exposes
`add_parser(subparsers)` which adds its parser and sets `func` (called with the parsed namespace, returning an
exit code). Exit codes: 0 success, 1 runtime failure, 2 usage error (argparse's own convention).

Bad input is one line on stderr, never a traceback: usage errors are ``kgroup CMD: error: ... (see kgroup CMD
--help)``; a subcommand reports its own errors in one line; anything unexpected is ``kgroup CMD: unexpected
error: ...`` with exit code 1 (``KGROUP_DEBUG=1`` shows the traceback).
"""

from __future__ import annotations

import argparse
import importlib
import os
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


def one_line(text: str) -> str:
    """Several problems as one line: "FILE: a; b" from the lines "FILE: a" and "FILE: b" (a scenario with more
    than one error names them all, on the one line a bad input gets)."""
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    if not lines:
        return ""
    head, sep, _ = lines[0].partition(": ")
    prefix = head + sep if sep else ""
    rest = [ln[len(prefix):] if prefix and ln.startswith(prefix) else ln for ln in lines[1:]]
    return "; ".join([lines[0]] + rest)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (argparse prints the whole usage first)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="kgroup",
        description="kgroup: a Kafka consumer-group coordination emulator (the classic rebalance protocol and "
                    "KIP-848's consumer group protocol).",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        importlib.import_module(name).add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # usage error (one line already printed) or --help: an exit code, as for a command
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # noqa: BLE001 - a bug: still one line (KGROUP_DEBUG=1 for the traceback)
        if os.environ.get("KGROUP_DEBUG"):
            raise
        first = (str(e).strip().splitlines() or [""])[0][:300]
        print(f"kgroup {args.command}: unexpected error: {type(e).__name__}: {first} (a bug; KGROUP_DEBUG=1 shows "
              "the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
