"""``kgroup diagram RUN_DIR|events.jsonl|trace.jsonl [--group G] [--from T --to T] [--format mermaid|svg]
[--out FILE]``: a sequence diagram of a run's protocol steps.

Reads what a run wrote (a ``kgroup run`` directory: events.jsonl + trace.jsonl; a ``kgroup serve --data-dir``
directory: ``__consumer_offsets-<p>.jsonl``; or one of those files) and draws the messages between consumers and
coordinator and the coordinator's decisions in the window (kgroup/sequence.py says which record or trace entry
proves each arrow). ``--format mermaid`` writes Mermaid ``sequenceDiagram`` text, ``--format svg`` a standalone
SVG (no script, no network). Times are milliseconds (``20000``) or with a unit (``20s``, ``1500ms``, ``1m``).
Exit codes: 0 written, 2 bad input (the message names the file or flag).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Optional

from kgroup.catalogue import LANGS


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("diagram", help="draw a run's protocol steps as a sequence diagram (Mermaid or SVG)",
                       description="Draw the messages between consumers and coordinator and the coordinator's "
                                   "decisions of a run (kgroup run output directory, kgroup serve --data-dir, or "
                                   "an events.jsonl / trace.jsonl file) as a Mermaid sequenceDiagram or a "
                                   "standalone SVG.")
    p.add_argument("source", metavar="RUN_DIR|events.jsonl|trace.jsonl",
                   help="a kgroup run output directory, a kgroup serve --data-dir, or one JSON-lines file")
    p.add_argument("--group", action="append", default=None, metavar="G",
                   help="only this group (repeatable; default: every group)")
    p.add_argument("--from", dest="t_from", default=None, metavar="T", help="start of the window (ms, or 20s)")
    p.add_argument("--to", dest="t_to", default=None, metavar="T", help="end of the window (ms, or 25s)")
    p.add_argument("--format", choices=("mermaid", "svg"), default=None,
                   help="output format (default: from --out's extension, .svg -> svg; else mermaid)")
    p.add_argument("--out", default=None, metavar="FILE", help="write here (default: standard output)")
    p.add_argument("--lang", choices=LANGS, default="en", help="language of the notes (default: en)")
    p.add_argument("--max-steps", type=int, default=400, metavar="N",
                   help="draw at most N arrows and notes (default 400); narrow the window for more")
    p.set_defaults(func=run)


_T = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$")


def parse_time(text: Optional[str], flag: str) -> Optional[int]:
    if text is None:
        return None
    m = _T.match(text)
    if not m:
        raise ValueError(f"{flag} {text!r}: expected milliseconds or a duration like 20s, 1500ms, 1m")
    value = float(m.group(1))
    return int(value * {"ms": 1, None: 1, "s": 1000, "m": 60000}[m.group(2)])


def run(args: argparse.Namespace) -> int:
    from kgroup.catalogue import Catalogue
    from kgroup.diagram import render
    from kgroup.runlog import RunLogError, load
    from kgroup.sequence import build_diagram

    try:
        t_from = parse_time(args.t_from, "--from")
        t_to = parse_time(args.t_to, "--to")
        if t_from is not None and t_to is not None and t_to < t_from:
            raise ValueError(f"--to ({t_to} ms) is before --from ({t_from} ms)")
        if args.max_steps < 1:
            raise ValueError("--max-steps must be >= 1")
        events = load(args.source)
    except (ValueError, RunLogError) as e:
        print(f"kgroup diagram: {e}", file=sys.stderr)
        return 2
    fmt = args.format or ("svg" if args.out and args.out.lower().endswith(".svg") else "mermaid")
    groups = set(args.group) if args.group else None
    src = Path(args.source)
    name = src.name if src.is_dir() else f"{src.parent.name}/{src.name}" if src.parent.name else src.name
    # a kgroup serve --data-dir keeps each partition's log as topics/<topic>-<partition>.log: the topic names
    topics = tuple(sorted({f.stem.rpartition("-")[0] for f in (src / "topics").glob("*-*.log")})) \
        if src.is_dir() and (src / "topics").is_dir() else ()
    d = build_diagram(events, Catalogue(args.lang), name, groups, t_from, t_to, args.max_steps, topics)
    if groups and not any("log_partition" in ev for ev in events):
        print(f"kgroup diagram: --group: {args.source} holds no coordinator records, hence no group ids (give the "
              "run directory or events.jsonl)", file=sys.stderr)
        return 2
    if groups:
        known = {ev.get("data", {}).get("group_id") for ev in events if "log_partition" in ev}
        unknown = sorted(groups - known)
        if unknown:
            print(f"kgroup diagram: --group {', '.join(unknown)}: no such group in {args.source} "
                  f"(groups: {', '.join(sorted(g for g in known if g)) or 'none'})", file=sys.stderr)
            return 2
    text = render(d, fmt)
    if args.out:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as e:
            print(f"kgroup diagram: cannot write {args.out}: {e.strerror or e}", file=sys.stderr)
            return 2
        print(f"wrote {args.out} ({fmt}: {len(d.participants)} participants, {len(d.items)} steps)")
    else:
        sys.stdout.write(text)
    return 0
