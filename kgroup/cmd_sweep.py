"""`kgroup sweep FILE --seeds N [--set key=v1,v2 ...] [--master URL]`: seeded runs as Spark tasks.

Runs the scenario once per (seed, parameter combination) in Spark tasks (one run per task up to 8 tasks per
core), analyses every run's events, then reports per combination and group the distribution over seeds (whole
group stopped, partitions unowned, rebalances, moves), every violated invariant with the seeds that reproduce it,
and a warning when every seed gave the same result. Progress on stderr: runs done / total with an ETA.
`--set` keys are dotted paths into the scenario TOML (`groups.*.strategy=range,roundrobin`,
`cluster.broker."group.initial.rebalance.delay.ms"=0,3000`). Exit codes: 0 every run held every invariant;
1 a violation (or Spark failed); 2 a bad file or --set (nothing ran). See docs/analysis.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kgroup.cli import one_line


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
    p.add_argument("--out", default=None,
                   help="write report.html, sweep.json and the runs and groups tables (Parquet, CSV) here")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--no-progress", action="store_true", help="no progress display on stderr")
    p.set_defaults(func=run)


RUN_COLUMNS = ["seed", "params", "ok", "rebalances", "virtual_ms", "events", "events_sha256", "wall_s"]
GROUP_COLUMNS = ["params", "seed", "run", "group_id", "protocol", "assignor", "static_members", "rebalances",
                 "rebalances_while_consuming", "group_stopped_ms", "unowned_partition_ms", "unowned_ms_per_partition",
                 "partitions_moved", "partitions_revoked"]


def write_outputs(spark, rep: dict, out: Path) -> None:
    """sweep.json, report.html, and runs / groups as Parquet (Spark's writer) and plain CSV."""
    import csv

    from analysis.report import sweep_html
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.json").write_text(json.dumps(rep, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    for name, cols, rows in (("runs", RUN_COLUMNS, rep["runs"]), ("groups", GROUP_COLUMNS, rep["groups"])):
        with open(out / f"{name}.csv", "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(cols)
            for r in rows:
                w.writerow([r.get(c) for c in cols])
        if rows:
            spark.createDataFrame([tuple(r.get(c) for c in cols) for r in rows], _ddl(cols, rows)) \
                .write.mode("overwrite").parquet(str(out / f"{name}.parquet"))
    (out / "report.html").write_text(sweep_html(rep), encoding="utf-8")
    rep["report"] = str(out / "report.html")


def _ddl(cols: list[str], rows: list[dict]) -> str:
    def typ(c):
        v = next((r.get(c) for r in rows if r.get(c) is not None), None)
        return ("boolean" if isinstance(v, bool) else "long" if isinstance(v, int) else
                "double" if isinstance(v, float) else "string")
    return ", ".join(f"`{c}` {typ(c)}" for c in cols)


def run(args: argparse.Namespace) -> int:
    from analysis.progress import Progress
    from analysis.sweep import apply_overrides, combinations, format_report, parse_sets, sweep
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
        print(f"kgroup sweep: {one_line(str(exc))}", file=sys.stderr)
        return 2
    from analysis.session import SparkUnavailable, get_spark
    seeds = list(range(args.seed_start, args.seed_start + args.seeds))
    try:
        with Progress("sweep", enabled=not args.no_progress) as progress:
            progress.stage("starting Spark", args.master)
            spark = get_spark(args.master)
            progress.spark = lambda: spark.sparkContext
            rep = sweep(spark, args.file, seeds, sets, progress=progress)
            if args.out:
                progress.stage("writing", args.out)
                write_outputs(spark, rep, Path(args.out))
    except SparkUnavailable as exc:
        print(f"kgroup sweep: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(rep, indent=2, sort_keys=True, default=str) if args.json else format_report(rep))
    return 0 if all(r["ok"] for r in rep["runs"]) else 1
