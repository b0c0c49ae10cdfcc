"""Benchmark kgroup's Spark analysis against a baseline measured in the same run (issues 7 and 18).

Every row is one fresh Python process (a new JVM: nothing warm is shared) timed from its start:

* **baseline**: a bare SparkSession start + ``spark.read.json`` (schema inferred) + one ``groupBy().count()``
  over the same file -- the least any Spark job over that file costs;
* **analyze**: ``kgroup analyze FILE --out DIR`` as a user runs it (the CLI in a subprocess: session start, the
  JSON read and check, the per-group fold, every table as Parquet and CSV, report.html);
* **analyze --events**: the same, also writing events.parquet (Spark's parse of the logs: what that export costs);
* **analyze parquet**: ``kgroup analyze DIR/events.parquet`` -- the second analysis, which skips the JSON parse.

Each run also reports its stage times (the progress display's stages) and the CPU seconds of its process tree
(the JVM and Spark's Python workers included, from /proc), per stage and in total: on a shared machine the wall
time moves with the load much more than the CPU a run needs.

Sizes: ``small`` is a real scenario log (``rolling-deploy``, seed 1: 1,166 events); ``1M`` and ``10M`` are made
by Spark from a template: one *unit* is the hand-made run ``A`` of tests/analysis/hand_logs.py (two groups, eager
and cooperative, three rebalances each: joins, a session expiry, partitions moving) plus 50 offset commits, ~100
records; unit ``i`` renames its groups ``g<i>-eager`` / ``g<i>-coop``. Goals (issue 18): small <= 1.5x the
baseline, 1M and 10M <= 2x. Printed: seconds, ratios, events/s.

Each size runs ``--repeat`` rounds (default 3; 10M once) of the four, interleaved, and reports the medians: the
machine is shared, and one round's ratio can move by 50% with the load. ``--quick``: the baseline and the default
``analyze`` only (the goal's ratio; for 10M on a busy machine).

A seed sweep on local[2] against the same seeds run sequentially in one process (issue 7): speed-up of the task
phase (``run_one`` for every seed, with events) and of the whole sweep including the Spark analysis of the runs.

    .venv/bin/python bench/analysis.py                                  # small, 1M, 10M, 200-seed sweep
    .venv/bin/python bench/analysis.py --events small 1M --seeds 0     # quicker
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "analysis"))

SIZES = {"small": 0, "1M": 1_000_000, "10M": 10_000_000}
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


def make_events(n_events: int, path: Path, master: str) -> int:
    """Write ~n_events synthetic JSON lines into the directory ``path`` with Spark (native string ops)."""
    from analysis.session import get_spark
    from pyspark.sql import functions as F
    spark = get_spark(master)
    lines = template_lines()
    units = max(1, n_events // len(lines))
    tpl = spark.createDataFrame([(i, line) for i, line in enumerate(lines)], "k int, line string")
    df = (spark.range(units).withColumnRenamed("id", "unit").crossJoin(F.broadcast(tpl))
          .select(F.regexp_replace(
              F.regexp_replace(F.col("line"), '"group_id": "(eager|coop)"',
                               F.concat(F.lit('"group_id": "g'), F.col("unit").cast("string"), F.lit('-$1"'))),
              '"log_offset": ([0-9]+)',
              F.concat(F.lit('"log_offset": '), (F.col("unit") + 1).cast("string"), F.lit("00$1"))).alias("value")))
    tmp = path.with_name(path.name + ".parts")
    if tmp.exists():
        shutil.rmtree(tmp)
    df.write.text(str(tmp))
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    for f in sorted(tmp.glob("part-*")):
        os.replace(f, path / (f.name + ".jsonl"))
    shutil.rmtree(tmp)
    spark.stop()
    return units * len(lines)


def make_small(path: Path) -> int:
    from scenarios.runner import run_scenario
    res = run_scenario(ROOT / "scenarios" / "library" / "rolling-deploy.toml", 1, trace=False)
    if path.exists():
        shutil.rmtree(path)
    res.write(path)
    return len(res.events_lines())


#: CPU seconds (user + system) of this process and every process under it (the JVM, Spark's Python workers; a
#: process that exited counts through its parent's reaped-children times or as a zombie): on a shared machine
#: the wall time moves with the load, the CPU a job needs much less.
TREE_CPU = """
def _tree_cpu():
    import os
    kids, cpu = dict(), dict()
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open("/proc/" + p + "/stat") as f:
                s = f.read()
        except OSError:
            continue
        x = s[s.rfind(")") + 2:].split()
        kids.setdefault(int(x[1]), []).append(int(p))
        cpu[int(p)] = sum(int(v) for v in x[11:15])
    total, todo = 0, [os.getpid()]
    while todo:
        p = todo.pop()
        total += cpu.get(p, 0)
        todo += kids.get(p, [])
    return total / os.sysconf("SC_CLK_TCK")
"""


BASELINE = TREE_CPU + """
import sys, time
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
from analysis.session import get_spark
spark = get_spark({master!r}, extra={extra!r})
n = spark.read.json({path!r}).groupBy().count().collect()[0][0]
print(n, time.perf_counter() - t0, _tree_cpu())
"""


#: ``kgroup analyze`` as the CLI runs it, with the start of each progress stage recorded (``Progress.stage`` is
#: called with the display on or off) and printed as JSON on fd 3's file: the per-stage times of the same run.
ANALYZE = TREE_CPU + """
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, {root!r})
from analysis import progress as P
marks = []
_stage = P.Progress.stage
def stage(self, name, detail=""):
    marks.append((name, time.perf_counter() - t0, _tree_cpu()))
    _stage(self, name, detail)
P.Progress.stage = stage
from kgroup.cli import main
rc = main({argv!r})
marks.append(("done", time.perf_counter() - t0, _tree_cpu()))
marks.append(("cpu", _tree_cpu()))
with open({marks_path!r}, "w") as f:
    json.dump(marks, f)
sys.exit(rc)
"""


def _timed(cmd: list[str], env=None, cwd=None) -> float:
    return _run(cmd, env, cwd)[0]


def _run(cmd: list[str], env=None, cwd=None) -> tuple[float, str]:
    """Wall seconds and stdout of a command."""
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({res.returncode}): {res.stderr.strip()[-800:]}")
    return wall, res.stdout


def _analyze(root: Path, argv: list[str], work: Path, env) -> tuple[float, list]:
    """One ``kgroup analyze`` of the code in ``root`` in a fresh process: wall seconds and its stage marks (the
    last: ``("cpu", seconds)``, see TREE_CPU)."""
    marks_path = work / "stage-marks.json"
    code = ANALYZE.format(root=str(root), argv=argv, marks_path=str(marks_path))
    wall = _timed([sys.executable, "-c", code], env, cwd=str(root))
    marks = json.loads(marks_path.read_text())
    return wall, marks


def stage_times(marks: list, wall: float) -> dict[str, float]:
    """Seconds per stage. Until the first stage: the interpreter, imports and the input's discovery; after
    "done": the summary, the JVM's exit and the interpreter start (the process's wall time minus the marks)."""
    cpu = [m for m in marks if m[0] == "cpu"]
    marks = [m for m in marks if m[0] != "cpu"]
    out = {"python start": marks[0][1] if marks else wall}
    for (name, t, *_), nxt in zip(marks, [m[1] for m in marks[1:]] + [wall]):
        out["exit" if name == "done" else name] = out.get(name, 0.0) + max(0.0, nxt - t)
    if cpu:
        out["cpu"] = cpu[0][1]
        # CPU seconds of each stage (the whole process tree: the JVM, the Python workers)
        for (name, _, c), nxt in zip(marks, [m[2] for m in marks[1:]] + [cpu[0][1]]):
            if name != "done":
                out[f"cpu {name}"] = out.get(f"cpu {name}", 0.0) + max(0.0, nxt - c)
    return out


def bench_size(label: str, n: int, work: Path, master: str, driver_memory: str, repeat: int = 1,
               before: Path | None = None, quick: bool = False, reuse: bool = False) -> dict:
    """``repeat`` rounds of (baseline, analyze, analyze --events, analyze of that events.parquet[, analyze by the
    code in ``before``]), interleaved so that each round's runs share the machine's load; the medians and their
    ratios are reported (and every round, with per-stage times). ``quick``: baseline and analyze only."""
    import statistics
    src = work / f"events-{label}"
    t0 = time.perf_counter()
    made = src / ".events"
    if reuse and label != "small" and made.is_file():
        actual = int(made.read_text())            # the same deterministic lines as a fresh make_events
    else:
        actual = make_small(src) if label == "small" else make_events(n, src, master)
        if label != "small":
            made.write_text(str(actual))
    gen_s = time.perf_counter() - t0
    files = str(src / "events.jsonl") if label == "small" else str(src)
    extra = {"spark.driver.memory": driver_memory}
    py = sys.executable
    out = work / f"out-{label}"
    env = dict(os.environ, PYSPARK_SUBMIT_ARGS=f"--driver-memory {driver_memory} pyspark-shell")
    cli = ["analyze", "--master", master, "--no-progress"]
    rounds, stages = [], {"analyze": [], "events": [], "parquet": [], "before": []}
    cpu = {"baseline": []}
    for _ in range(repeat):
        base_s, text = _run([py, "-c", BASELINE.format(root=str(ROOT), master=master, extra=extra, path=files)])
        base_cpu = float(text.split()[-1])
        cpu["baseline"].append(base_cpu)
        analyze_s, marks = _analyze(ROOT, cli + [files, "--out", str(out)], work, env)
        stages["analyze"].append(stage_times(marks, analyze_s))
        a_cpu = stages["analyze"][-1].get("cpu")
        r = [base_s, analyze_s]
        text = (f"  {label} round: baseline {base_s:.1f} s, analyze {analyze_s:.1f} s ({analyze_s / base_s:.2f}x); "
                f"CPU: baseline {base_cpu:.1f} s, analyze {a_cpu:.1f} s ({a_cpu / base_cpu:.2f}x)")
        if not quick:
            ev_out = work / f"out-{label}-events"
            events_s, marks = _analyze(ROOT, cli + [files, "--out", str(ev_out), "--events"], work, env)
            stages["events"].append(stage_times(marks, events_s))
            parquet_s, marks = _analyze(ROOT, cli + [str(ev_out / "events.parquet"), "--out",
                                                     str(work / f"out-{label}-parquet")], work, env)
            stages["parquet"].append(stage_times(marks, parquet_s))
            r += [events_s, parquet_s]
            text += (f"; analyze --events {events_s:.1f} s ({events_s / base_s:.2f}x, CPU "
                     f"{stages['events'][-1].get('cpu'):.1f} s); from events.parquet {parquet_s:.1f} s "
                     f"({parquet_s / base_s:.2f}x, CPU {stages['parquet'][-1].get('cpu'):.1f} s)")
        if before is not None:
            before_s, marks = _analyze(before, cli + [files, "--out", str(work / f"out-{label}-before")], work, env)
            stages["before"].append(stage_times(marks, before_s))
            r.append(before_s)
            text += f", before {before_s:.1f} s ({before_s / base_s:.2f}x)"
        rounds.append(r)
        print(text, flush=True)
        for kind in ("analyze", "events", "parquet", "before"):
            if stages[kind]:
                print(f"    {kind} stages: " + ", ".join(f"{k} {v:.1f}" for k, v in stages[kind][-1].items()),
                      flush=True)
    med = [statistics.median(x) for x in zip(*rounds)]
    base_s, analyze_s = med[:2]

    def median_stages(kind: str) -> dict[str, float]:
        names = list(dict.fromkeys(k for st in stages[kind] for k in st))
        return {k: round(statistics.median(st.get(k, 0.0) for st in stages[kind]), 1) for k in names}

    def ratio(i: int) -> float:
        return round(statistics.median(r[i] / r[0] for r in rounds), 2)

    row = {"events": actual, "generate_s": round(gen_s, 1), "baseline_s": round(base_s, 1),
           "analyze_s": round(analyze_s, 1), "ratio": ratio(1),
           "ratio_rounds": [round(r[1] / r[0], 2) for r in rounds],
           "events_per_s": round(actual / analyze_s), "stages": median_stages("analyze"),
           "rounds": [[round(x, 1) for x in r] for r in rounds],
           "baseline_cpu_s": round(statistics.median(cpu["baseline"]), 1)}
    row["cpu_ratio"] = round(row["stages"]["cpu"] / row["baseline_cpu_s"], 2)
    text = (f"{label}: {actual:,} events; median of {repeat}: baseline {base_s:.1f} s; analyze {analyze_s:.1f} s, "
            f"ratio {row['ratio']:.2f}x ({actual / analyze_s:,.0f} events/s); CPU seconds: baseline "
            f"{row['baseline_cpu_s']}, analyze {row['stages']['cpu']} ({row['cpu_ratio']:.2f}x)")
    if not quick:
        row.update({"events_s": round(med[2], 1), "ratio_events": ratio(2), "stages_events": median_stages("events"),
                    "analyze_parquet_s": round(med[3], 1), "ratio_parquet": ratio(3),
                    "stages_parquet": median_stages("parquet")})
        text += (f"; analyze --events {med[2]:.1f} s, ratio {row['ratio_events']:.2f}x, CPU "
                 f"{row['stages_events'].get('cpu')} s; from events.parquet {med[3]:.1f} s, ratio "
                 f"{row['ratio_parquet']:.2f}x, CPU {row['stages_parquet'].get('cpu')} s")
    if before is not None:
        row["before_s"] = round(med[-1], 1)
        row["ratio_before"] = ratio(len(rounds[0]) - 1)
        row["stages_before"] = median_stages("before")
        text += f"; before {med[-1]:.1f} s, ratio {row['ratio_before']:.2f}x"
    print(text, flush=True)
    print("  median stages: " + ", ".join(f"{k} {v}" for k, v in row["stages"].items()), flush=True)
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
    ap.add_argument("--events", nargs="*", default=["small", "1M", "10M"], choices=list(SIZES))
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--scenario", default=str(ROOT / "scenarios" / "library" / "rolling-deploy.toml"))
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--work", default="/tmp/kgroup-bench-analysis")
    ap.add_argument("--driver-memory", default="4g", help="the local JVM's heap (Spark's default is 1g)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds per size (medians are reported)")
    ap.add_argument("--before", help="also time kgroup analyze of the code in this directory (e.g. `git archive "
                    "main | tar -x -C DIR`) in every round: before/after under the same load")
    ap.add_argument("--quick", action="store_true", help="time only the baseline and the default analyze")
    ap.add_argument("--reuse", action="store_true", help="keep the 1M/10M logs an earlier run made in --work")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    results = {"master": args.master, "analyze": {}, "sweep": None}
    for label in args.events:
        results["analyze"][label] = bench_size(label, SIZES[label], work, args.master, args.driver_memory,
                                               1 if label == "10M" else args.repeat,
                                               Path(args.before).resolve() if args.before else None, args.quick,
                                               args.reuse)
    if args.seeds > 0:
        from analysis.session import get_spark
        spark = get_spark(args.master, extra={"spark.driver.memory": args.driver_memory})
        results["sweep"] = bench_sweep(spark, Path(args.scenario), args.seeds)
        spark.stop()
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
