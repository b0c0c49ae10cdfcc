"""Benchmark kgroup's Spark analysis (issue 7, item 6).

1. ``kgroup analyze`` on 1M and 10M synthetic events on local[2]: wall time and events/s. The events are made
   by Spark from a template: one *unit* is the hand-made run ``A`` of tests/analysis/hand_logs.py (two groups,
   eager and cooperative, three rebalances each: joins, a session expiry, partitions moving) plus offset
   commits, ~100 records; unit ``i`` renames its groups ``g<i>-eager`` / ``g<i>-coop``. 10M events = 100,000
   units = 200,000 groups, 600,000 rebalances, all in one run. Timed: reading the JSON lines (explicit schema),
   every table, collecting the report data and writing Parquet + CSV + report.html (the events Parquet export
   is left out: it is a plain copy).
2. A seed sweep on local[2] against the same seeds run sequentially in one process: speed-up of the task phase
   (``run_one`` for every seed, with events), and the whole sweep including the Spark analysis of the runs.

    .venv/bin/python bench/analysis.py                       # 1M, 10M, 200-seed sweep
    .venv/bin/python bench/analysis.py --events 1M --seeds 50  # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "analysis"))

SIZES = {"1M": 1_000_000, "10M": 10_000_000}
COMMITS_PER_UNIT = 50


def template_lines() -> list[str]:
    """One unit: run A of hand_logs + offset commits of both groups spread over its 5 s."""
    import hand_logs
    from coordinator import records as R
    log = hand_logs.run_a()
    for i in range(COMMITS_PER_UNIT):
        g, lp = ("eager", 0) if i % 2 == 0 else ("coop", 1)
        log.add(200 + i * 90, R.OffsetCommit(group_id=g, topic="t" if g == "eager" else "u", partition=i % 2,
                                             offset=i, commit_timestamp_ms=200 + i * 90), lp)
    return [json.dumps(e.to_dict(), sort_keys=True) for e in log.entries]


def make_events(spark, n_events: int, path: Path) -> int:
    """Write ~n_events synthetic JSON lines with Spark (native string ops, no Python per row)."""
    from pyspark.sql import functions as F
    lines = template_lines()
    units = max(1, n_events // len(lines))
    tpl = spark.createDataFrame([(i, line) for i, line in enumerate(lines)], "k int, line string")
    df = (spark.range(units).withColumnRenamed("id", "unit").crossJoin(F.broadcast(tpl))
          .select(F.regexp_replace(
              F.regexp_replace(F.col("line"), '"group_id": "(eager|coop)"',
                               F.concat(F.lit('"group_id": "g'), F.col("unit").cast("string"), F.lit('-$1"'))),
              '"log_offset": ([0-9]+)',
              F.concat(F.lit('"log_offset": '), F.col("unit").cast("string"), F.lit("00$1"))).alias("value")))
    if path.exists():
        shutil.rmtree(path)
    df.write.text(str(path))
    return units * len(lines)


def bench_analyze(spark, label: str, n: int, work: Path) -> dict:
    from analysis.analyze import run_analysis
    src = work / f"events-{label}"
    t0 = time.perf_counter()
    actual = make_events(spark, n, src)
    gen_s = time.perf_counter() - t0
    run_dir = work / f"run-{label}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True)
    for f in sorted(src.glob("part-*")):
        os.link(f, run_dir / (f.name + ".jsonl"))
    out = work / f"out-{label}"
    t0 = time.perf_counter()
    res = run_analysis([str(run_dir)], out, spark=spark, export_events=False)
    wall = time.perf_counter() - t0
    spark.catalog.clearCache()
    s = res.summary
    row = {"events": actual, "generate_s": round(gen_s, 1), "analyze_s": round(wall, 1),
           "events_per_s": round(actual / wall), "groups": s["groups"], "rebalances": s["rebalances"]}
    print(f"analyze {label}: {actual:,} events, {s['groups']:,} groups, {s['rebalances']:,} rebalances in "
          f"{wall:.1f} s = {actual / wall:,.0f} events/s (generation {gen_s:.1f} s)", flush=True)
    return row


def bench_sweep(spark, scenario: Path, seeds: int) -> dict:
    from analysis.sweep import run_one, run_tasks, sweep
    seed_list = list(range(1, seeds + 1))
    # warm the in-process imports so the sequential side does not pay them inside the timing
    run_one(scenario, 0, {})
    t0 = time.perf_counter()
    seq = [run_one(scenario, s, {}) for s in seed_list]
    seq_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    rdd = run_tasks(spark, scenario, seed_list, [{}])
    par = rdd.map(lambda r: (r["seed"], r["events_sha256"])).collect()
    tasks_s = time.perf_counter() - t0
    rdd.unpersist()
    assert sorted(par) == sorted((r["seed"], r["events_sha256"]) for r in seq), "sweep differs from sequential"
    t0 = time.perf_counter()
    rep = sweep(spark, scenario, seed_list)
    full_s = time.perf_counter() - t0
    row = {"scenario": scenario.name, "seeds": seeds, "sequential_s": round(seq_s, 1),
           "spark_tasks_s": round(tasks_s, 1), "speedup_tasks": round(seq_s / tasks_s, 2),
           "spark_sweep_with_analysis_s": round(full_s, 1), "speedup_with_analysis": round(seq_s / full_s, 2),
           "ok_runs": sum(r["ok"] for r in rep["runs"])}
    print(f"sweep {scenario.name} x {seeds} seeds: sequential {seq_s:.1f} s; Spark local[2] tasks {tasks_s:.1f} s "
          f"({seq_s / tasks_s:.2f}x); whole sweep with the analysis {full_s:.1f} s ({seq_s / full_s:.2f}x)",
          flush=True)
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", nargs="*", default=["1M", "10M"], choices=sorted(SIZES))
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--scenario", default=str(ROOT / "scenarios" / "library" / "rolling-deploy.toml"))
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--work", default="/tmp/kgroup-bench-analysis")
    ap.add_argument("--driver-memory", default="4g", help="the local JVM's heap (Spark's default is 1g)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    from analysis.session import get_spark
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    spark = get_spark(args.master, extra={"spark.driver.memory": args.driver_memory})
    spark.range(1).count()
    start_s = time.perf_counter() - t0
    print(f"SparkSession {args.master} started in {start_s:.1f} s", flush=True)
    results = {"master": args.master, "session_start_s": round(start_s, 1), "analyze": {}, "sweep": None}
    for label in args.events:
        results["analyze"][label] = bench_analyze(spark, label, SIZES[label], work)
    if args.seeds > 0:
        results["sweep"] = bench_sweep(spark, Path(args.scenario), args.seeds)
    if args.json:
        print(json.dumps(results, indent=2))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
