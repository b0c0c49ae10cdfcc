"""`kgroup analyze LOGS... [--master local[*]] [--out DIR] [--json]`: rebalance metrics with Spark.

LOGS are run directories of `kgroup run` (events.jsonl + summary.json), events.jsonl files, or coordinator
log directories (__consumer_offsets-<p>.jsonl). Writes Parquet and CSV tables (rebalances, members, partitions,
assignors, ownership intervals), the events as Parquet, and report.html to DIR (default kgroup-analysis).
Exit codes: 0 done; 1 Spark or Java failed; 2 a LOG does not exist (nothing ran). See docs/analysis.md.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("analyze", help="rebalance metrics, assignor comparison and an HTML report (PySpark)",
                       description="Analyze rebalance logs (docs/events.md schema) with Spark DataFrames: per "
                                   "rebalance, per member, per partition and per assignor. See docs/analysis.md.")
    p.add_argument("logs", nargs="+", metavar="LOGS", help="run directories, events.jsonl files or log dirs")
    p.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    p.add_argument("--out", default="kgroup-analysis", help="output directory (default kgroup-analysis)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.analyze import analyze, format_summary
    from analysis.load import discover
    try:
        discover(args.logs)
    except FileNotFoundError as exc:
        print(f"kgroup analyze: {exc}", file=sys.stderr)
        return 2
    try:
        summary = analyze(args.logs, args.out, args.master)
    except RuntimeError as exc:
        print(f"kgroup analyze: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2, sort_keys=True, default=str) if args.json else format_summary(summary))
    return 0
