"""`kgroup analyze LOGS... [--master local[*]] [--out DIR] [--json]`: rebalance metrics with Spark.

LOGS are run directories of `kgroup run` (events.jsonl + summary.json), directories of run directories, event log
files, `kgroup serve --data-dir` directories (__consumer_offsets-<p>.jsonl), the events.parquet of an earlier
analysis (read without parsing JSON again), or globs of these. Writes groups, rebalances, members, partitions and
ownership tables as Parquet and plain CSV, the events as Parquet, and report.html to DIR (default
kgroup-analysis). Exit codes: 0 done; 1 Spark or Java failed; 2 unusable input (nothing ran, or the input held no
event records). See docs/analysis.md.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("analyze", help="rebalance metrics, group comparison and an HTML report (PySpark)",
                       description="Analyze rebalance logs (docs/events.md schema) with Spark: per group, per "
                                   "rebalance, per member and per partition (per group epoch for KIP-848 "
                                   "consumer groups), eager, cooperative and consumer protocols side by side, "
                                   "and an HTML report. See docs/analysis.md.")
    p.add_argument("logs", nargs="+", metavar="LOGS",
                   help="run directories, event log files, kgroup serve --data-dir directories, an earlier "
                        "analysis' events.parquet, or globs of these")
    p.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    p.add_argument("--out", default="kgroup-analysis", help="output directory (default kgroup-analysis)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--no-events", action="store_true",
                   help="do not write events.parquet (it lets a later analysis skip the JSON parse)")
    p.add_argument("--no-progress", action="store_true", help="no progress display on stderr")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.analyze import analyze, format_summary
    from analysis.load import InputError, discover
    from analysis.progress import Progress
    from analysis.session import SparkUnavailable
    try:
        discover(args.logs)
    except InputError as exc:
        print(f"kgroup analyze: {exc}", file=sys.stderr)
        return 2
    try:
        with Progress("analyze", enabled=not args.no_progress) as progress:
            summary = analyze(args.logs, args.out, args.master, export_events=not args.no_events,
                              progress=progress)
    except InputError as exc:
        print(f"kgroup analyze: {exc}", file=sys.stderr)
        return 2
    except SparkUnavailable as exc:
        print(f"kgroup analyze: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - a Spark/Java failure: one line, not a JVM stack trace
        print(f"kgroup analyze: Spark failed: {_first_line(exc)}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2, sort_keys=True, default=str) if args.json else format_summary(summary))
    return 0


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]
