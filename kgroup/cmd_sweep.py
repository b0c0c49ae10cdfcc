"""`kgroup sweep FILE --seeds N [--set key=v1,v2 ...] [--master URL]`: seeded runs as Spark tasks.

Runs the scenario once per (seed, parameter combination) in Spark tasks (one run per task up to 8 tasks per
core), then reports the distribution:
percentiles of stop-the-world time (per rebalance and per run), rebalances per run, partitions moved, and every
violated invariant with the seeds that reproduce it. A progress line on stderr shows tasks done / total.
`--set` keys are dotted paths into the scenario TOML (`groups.*.strategy=range,roundrobin`,
`cluster.broker."group.initial.rebalance.delay.ms"=0,3000`). Exit codes: 0 every run held every invariant;
1 a violation (or Spark failed); 2 a bad file or --set (nothing ran). See docs/analysis.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sweep", help="run a scenario over many seeds (and parameters) as Spark tasks",
                       description="Run a scenario once per (seed, --set combination) as Spark tasks and report "
                                   "the distribution of rebalance metrics and invariant results. "
                                   "See docs/analysis.md.")
    p.add_argument("file", help="scenario file (TOML)")
    p.add_argument("--seeds", type=int, required=True, help="number of seeds")
    p.add_argument("--seed-start", type=int, default=1, help="first seed (default 1): seeds S..S+N-1")
    p.add_argument("--set", action="append", default=[], metavar="KEY=V1,V2",
                   help="a scenario parameter and its values (repeatable; the product of all is swept)")
    p.add_argument("--master", default="local[*]", help="Spark master URL (default local[*])")
    p.add_argument("--out", default=None, help="write sweep.json and runs.csv here")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress line")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.sweep import apply_overrides, combinations, format_report, parse_sets, print_progress, sweep
    from scenarios.model import ScenarioError, load_scenario, parse_scenario
    import tomllib

    if args.seeds < 1:
        print("kgroup sweep: --seeds must be at least 1", file=sys.stderr)
        return 2
    try:
        load_scenario(args.file)
        sets = parse_sets(args.set)
        data = tomllib.loads(Path(args.file).read_text(encoding="utf-8"))
        for combo in combinations(sets):
            parse_scenario(apply_overrides(data, combo), f"{args.file} with {combo}")
    except (ScenarioError, ValueError) as exc:
        print(f"kgroup sweep: {exc}", file=sys.stderr)
        return 2
    from analysis.session import get_spark
    try:
        spark = get_spark(args.master)
    except RuntimeError as exc:
        print(f"kgroup sweep: {exc}", file=sys.stderr)
        return 1
    seeds = list(range(args.seed_start, args.seed_start + args.seeds))
    rep = sweep(spark, args.file, seeds, sets, progress=None if args.no_progress else print_progress)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "sweep.json").write_text(json.dumps(rep, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        cols = ["seed", "params", "ok", "rebalances", "completed_rebalances", "stw_total_ms", "stw_max_ms",
                "partitions_moved", "virtual_ms", "events", "events_sha256", "wall_s"]
        import csv
        with open(out / "runs.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(cols)
            for r in rep["runs"]:
                w.writerow([r.get(c) for c in cols])
    print(json.dumps(rep, indent=2, sort_keys=True) if args.json else format_report(rep))
    return 0 if all(r["ok"] for r in rep["runs"]) else 1
