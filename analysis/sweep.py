"""Seed sweeps as Spark tasks: every (seed, parameter combination) runs once in a Spark task (one run per task up
to 8 tasks per core, then runs share tasks: ``n_slices``), then the distribution.

The unit of work is :func:`run_one` -- a pure function of (scenario TOML text, seed, overrides) that runs the
scenario with ``scenarios.runner.run_scenario`` and returns a plain dict: invariant results, the runner's
summary figures, a SHA-256 of the events log (byte-identical for the same inputs) and, for the analysis, the
events themselves. The driver sends the scenario *text* (not a path) to the tasks and, on a non-local master,
ships kgroup's packages with ``addPyFile``, so the same command works on ``local[*]`` and on a cluster.

After the tasks, the events of every run go through the same Spark analysis as ``kgroup analyze``
(``analysis.metrics``): percentiles of stop-the-world time per rebalance and per run, rebalance counts, partitions
moved, and violations with the seeds that reproduce them (``kgroup run FILE --seed N``).
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import sys
import threading
import time
import tomllib
import zipfile
import zlib
from pathlib import Path
from typing import Any, Callable, Optional

PACKAGES = ("protocol", "coordinator", "consumer", "scenarios", "analysis", "kgroup")


# ---------------------------------------------------------------------------------------------------------------
# parameters
# ---------------------------------------------------------------------------------------------------------------

def _scalar(text: str) -> Any:
    text = text.strip()
    try:
        return tomllib.loads(f"x = {text}")["x"]
    except tomllib.TOMLDecodeError:
        return text


def parse_sets(items: list[str]) -> dict[str, list[Any]]:
    """``["groups.*.strategy=range,roundrobin", "network.drop=0,0.1"]`` -> ``{key: [values]}``.
    Values are TOML scalars (``10``, ``0.5``, ``true``, ``"a,b"``) or else plain strings."""
    out: dict[str, list[Any]] = {}
    for item in items:
        key, sep, vals = item.partition("=")
        if not sep or not key.strip() or not vals.strip():
            raise ValueError(f"--set {item!r}: expected key=v1,v2,...")
        out[key.strip()] = [_scalar(v) for v in _split_values(vals)]
    return out


def _split_values(vals: str) -> list[str]:
    parts, cur, quote = [], "", None
    for ch in vals:
        if ch in "\"'" and (quote is None or quote == ch):
            quote = None if quote else ch
        if ch == "," and quote is None:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p for p in parts if p.strip()]


def combinations(sets: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """The cartesian product, keys in the order given (``[{}]`` without parameters)."""
    keys = list(sets)
    return [dict(zip(keys, vals)) for vals in itertools.product(*(sets[k] for k in keys))] or [{}]


def _key_parts(key: str) -> list[str]:
    parts, cur, quoted = [], "", False
    for ch in key:
        if ch == '"':
            quoted = not quoted
        elif ch == "." and not quoted:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


def apply_overrides(data: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    """Set dotted keys in the scenario's TOML data: ``scenario.duration_ms``, ``groups.0.strategy``,
    ``groups.*.strategy`` (every group), ``cluster.broker."group.initial.rebalance.delay.ms"``."""
    import copy
    data = copy.deepcopy(data)
    for key, value in overrides.items():
        _set(data, _key_parts(key), value, key)
    return data


def _set(node: Any, parts: list[str], value: Any, key: str) -> None:
    head, rest = parts[0], parts[1:]
    if isinstance(node, list):
        if head == "*":
            targets = list(range(len(node)))
        elif head.isdigit() and int(head) < len(node):
            targets = [int(head)]
        else:
            raise ValueError(f"--set {key}: {head!r} is not an index of a list of {len(node)}")
        for i in targets:
            if rest:
                _set(node[i], rest, value, key)
            else:
                node[i] = value
        return
    if not isinstance(node, dict):
        raise ValueError(f"--set {key}: cannot descend into a {type(node).__name__} at {head!r}")
    if not rest:
        node[head] = value
        return
    _set(node.setdefault(head, {}), rest, value, key)


# ---------------------------------------------------------------------------------------------------------------
# one run
# ---------------------------------------------------------------------------------------------------------------

def run_one(scenario: str | Path, seed: int, overrides: Optional[dict[str, Any]] = None, *,
            text: Optional[str] = None, with_events: bool = True) -> dict[str, Any]:
    """Run one (scenario, seed, overrides); a pure function of them (plus ``wall_s``). ``text``: the scenario
    file's content (tasks get the text, not the path)."""
    from scenarios.model import parse_scenario
    from scenarios.runner import run_scenario

    import logging
    logging.getLogger("kgroup").addHandler(logging.NullHandler())
    logging.getLogger("kgroup").propagate = False
    if text is None:
        text = Path(scenario).read_text(encoding="utf-8")
    overrides = dict(overrides or {})
    data = apply_overrides(tomllib.loads(text), overrides)
    sc = parse_scenario(data, str(scenario))
    res = run_scenario(sc, seed, trace=False, source=str(scenario))
    lines = res.events_lines()
    s = res.summary
    out = {
        "scenario": s["scenario"] or Path(str(scenario)).stem,
        "seed": seed,
        "overrides": overrides,
        "params": json.dumps(overrides, sort_keys=True),
        "ok": bool(s["ok"]),
        "invariants": {k: v["violations"] for k, v in sorted(s["invariants"].items())},
        "violations": [f"{v['invariant']}: {v.get('message', '')}" if isinstance(v, dict) else str(v)
                       for v in s["violations"]][:10],
        "rebalances": sum(g["rebalances"] for g in s["groups"].values()),
        "runner_rebalance_ms": sum(g["total_rebalance_ms"] for g in s["groups"].values()),
        "runner_partitions_moved": sum(g["partitions_moved"] for g in s["groups"].values()),
        "virtual_ms": s["virtual_ms"],
        "events": len(lines),
        "events_sha256": hashlib.sha256("".join(line + "\n" for line in lines).encode()).hexdigest(),
        "wall_s": round(res.wall_s, 4),
    }
    if with_events:
        # compressed: the task's result is cached in the JVM and read again by the analysis; ~10x smaller
        out["events_z"] = zlib.compress("\n".join(lines).encode("utf-8"), 1)
    return out


def events_lines(r: dict[str, Any]) -> list[str]:
    """The events of a ``run_one`` result (JSON lines, in log order)."""
    data = r.get("events_z")
    return zlib.decompress(data).decode("utf-8").split("\n") if data else []


def run_label(r: dict[str, Any]) -> str:
    return f"seed={r['seed']}" + (f" {r['params']}" if r["overrides"] else "")


# ---------------------------------------------------------------------------------------------------------------
# the sweep
# ---------------------------------------------------------------------------------------------------------------

def package_zip() -> bytes:
    """kgroup's packages as a zip for ``addPyFile`` (executors on a cluster do not have the source tree)."""
    root = Path(__file__).resolve().parent.parent
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for pkg in PACKAGES:
            for f in sorted((root / pkg).rglob("*")):
                if f.is_file() and "__pycache__" not in f.parts and f.suffix in (".py", ".toml", ".properties",
                                                                                 ".json"):
                    zf.write(f, f.relative_to(root).as_posix())
    return buf.getvalue()


def ship_code(spark, workdir: Optional[Path] = None) -> Optional[str]:
    """On a non-local master, send the packages to the executors (a zip on the driver, ``addPyFile``)."""
    from analysis.session import is_local
    if is_local(spark.sparkContext.master):
        return None
    import tempfile
    d = Path(workdir or tempfile.mkdtemp(prefix="kgroup-sweep-"))
    path = d / "kgroup_pkgs.zip"
    path.write_bytes(package_zip())
    spark.sparkContext.addPyFile(str(path))
    return str(path)


class Progress:
    """Polls Spark's status tracker for the job group and reports ``done/total`` (a callback per change)."""

    def __init__(self, spark, group: str, total: int, report: Callable[[int, int], None],
                 interval: float = 0.5) -> None:
        self.sc = spark.sparkContext
        self.group, self.total, self.report, self.interval = group, total, report, interval
        self._stop = threading.Event()
        self._last = -1
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def done(self) -> int:
        st = self.sc.statusTracker()
        n = 0
        for job in st.getJobIdsForGroup(self.group):
            info = st.getJobInfo(job)
            for sid in (info.stageIds if info else []):
                stage = st.getStageInfo(sid)
                if stage:
                    n += stage.numCompletedTasks
        return min(n, self.total)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._tick()

    def _tick(self) -> None:
        try:
            n = self.done()
        except Exception:  # noqa: BLE001 - progress must never fail the sweep
            return
        if n != self._last:
            self._last = n
            self.report(n, self.total)

    def __enter__(self) -> "Progress":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def print_progress(done: int, total: int, stream=None) -> None:
    stream = stream or sys.stderr
    stream.write(f"\rsweep: {done}/{total} tasks done")
    if done >= total:
        stream.write("\n")
    stream.flush()


def n_slices(runs: int, parallelism: int, per_core: int = 8) -> int:
    """Spark tasks for ``runs`` runs: one run per task up to ``per_core`` tasks per core, then runs share tasks.
    A task costs ~50-100 ms of scheduling and result handling on a small machine, which is the price of a whole
    scenario run: 200 one-run tasks on local[2] were no faster than a sequential loop, 16 tasks were 1.5-1.9x."""
    return max(1, min(runs, per_core * max(1, parallelism)))


def run_tasks(spark, scenario: str | Path, seeds: list[int], combos: list[dict[str, Any]],
              progress: Optional[Callable[[int, int], None]] = None):
    """Every (seed, combination) as Spark tasks (``n_slices``); returns the cached RDD of ``run_one`` dicts."""
    text = Path(scenario).read_text(encoding="utf-8")
    source = str(scenario)
    tasks = [(seed, combo) for combo in combos for seed in seeds]
    sc = spark.sparkContext
    ship_code(spark)
    slices = n_slices(len(tasks), sc.defaultParallelism)
    rdd = sc.parallelize(tasks, slices).map(lambda t: run_one(source, t[0], t[1], text=text)).cache()
    group = f"kgroup-sweep-{os.getpid()}-{time.monotonic_ns()}"
    sc.setJobGroup(group, f"kgroup sweep {Path(source).name}: {len(tasks)} runs")
    try:
        if progress is not None:
            with Progress(spark, group, slices, progress) as p:
                rdd.count()
                p._tick()
        else:
            rdd.count()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    return rdd


def _events_df(spark, rdd):
    """The events of every run as one DataFrame (``run``/``scenario``/``seed`` injected into each JSON line)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    from analysis.schema import event_schema

    def lines(r):
        extra = json.dumps({"run": run_label(r), "scenario": r["scenario"], "seed": r["seed"]})[1:-1]
        for line in events_lines(r):
            yield line[:-1] + ", " + extra + "}"

    schema = T.StructType(list(event_schema().fields) + [
        T.StructField("run", T.StringType()), T.StructField("scenario", T.StringType()),
        T.StructField("seed", T.LongType())])
    df = spark.read.schema(schema).json(rdd.flatMap(lines))
    return df.select("run", "scenario", "seed", *[c for c in df.columns if c not in ("run", "scenario", "seed")])


def percentiles(values: list[float], ps=(50, 90, 99)) -> dict[str, Optional[float]]:
    """Nearest-rank percentiles (and max), on the driver; also used by tests."""
    vals = sorted(values)
    out: dict[str, Optional[float]] = {}
    for p in ps:
        if not vals:
            out[f"p{p}"] = None
        else:
            k = max(0, min(len(vals) - 1, -(-p * len(vals) // 100) - 1))
            out[f"p{p}"] = vals[k]
    out["max"] = vals[-1] if vals else None
    out["mean"] = (sum(vals) / len(vals)) if vals else None
    return out


def sweep(spark, scenario: str | Path, seeds: list[int], sets: Optional[dict[str, list[Any]]] = None,
          progress: Optional[Callable[[int, int], None]] = None, analysis: bool = True) -> dict[str, Any]:
    """Run the sweep and return its report (``runs``: one dict per run, without events; ``distribution``;
    ``tasks``: the number of runs)."""
    from pyspark.sql import functions as F

    combos = combinations(sets or {})
    t0 = time.perf_counter()
    rdd = run_tasks(spark, scenario, seeds, combos, progress)
    tasks_s = time.perf_counter() - t0
    runs = rdd.map(lambda r: {k: v for k, v in r.items() if k != "events_z"}).collect()
    per_run: dict[str, dict] = {}
    rb_rows: list[dict] = []
    if analysis:
        from analysis import metrics
        tables = metrics.compute(_events_df(spark, rdd))
        rb = tables.rebalances
        rb_rows = [r.asDict() for r in rb.where(F.col("outcome") == "stable")
                   .select("run", "stw_ms", "partitions_moved").collect()]
        for r in rb_rows:
            d = per_run.setdefault(r["run"], {"stw_ms": [], "moved": 0})
            d["stw_ms"].append(r["stw_ms"])
            d["moved"] += r["partitions_moved"] or 0
    rdd.unpersist()
    spark.catalog.clearCache()
    for r in runs:
        d = per_run.get(run_label(r), {"stw_ms": [], "moved": 0})
        r["stw_total_ms"] = sum(d["stw_ms"]) if analysis else None
        r["stw_max_ms"] = max(d["stw_ms"]) if d["stw_ms"] else (0 if analysis else None)
        r["completed_rebalances"] = len(d["stw_ms"]) if analysis else None
        r["partitions_moved"] = d["moved"] if analysis else None
    runs.sort(key=lambda r: (r["params"], r["seed"]))
    return {"scenario": str(scenario), "seeds": len(seeds), "tasks": len(runs), "tasks_wall_s": round(tasks_s, 3),
            "master": spark.sparkContext.master, "runs": runs,
            "distribution": distribution(runs, rb_rows if analysis else None, combos)}


def distribution(runs: list[dict[str, Any]], rb_rows: Optional[list[dict[str, Any]]],
                 combos: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per combination: percentiles over its runs (and over its rebalances, ``rb_rows``: run, stw_ms), and each
    violated invariant with the seeds that reproduce it. ``rb_rows`` None: no analysis figures."""
    analysis = rb_rows is not None
    dist = []
    for combo in combos:
        params = json.dumps(combo, sort_keys=True)
        rs = [r for r in runs if r["params"] == params]
        labels = {run_label(r) for r in rs}
        dist.append({
            "params": combo,
            "runs": len(rs),
            "ok": sum(r["ok"] for r in rs),
            "stw_ms_per_rebalance": percentiles([r["stw_ms"] for r in rb_rows if r["run"] in labels])
            if analysis else None,
            "stw_ms_per_run": percentiles([r["stw_total_ms"] for r in rs]) if analysis else None,
            "rebalances_per_run": percentiles([r["rebalances"] for r in rs]),
            "partitions_moved_per_run": percentiles([r["partitions_moved"] for r in rs]) if analysis else None,
            "violations": {name: sorted(r["seed"] for r in rs if r["invariants"].get(name))
                           for name in sorted({k for r in rs for k, v in r["invariants"].items() if v})},
        })
    return dist


def format_report(rep: dict[str, Any]) -> str:
    lines = [f"sweep {rep['scenario']}: {rep['tasks']} run(s) ({rep['seeds']} seed(s) x "
             f"{len(rep['distribution'])} combination(s)) on {rep['master']} in {rep['tasks_wall_s']:.1f} s"]

    def pct(d):
        if not d or d["max"] is None:
            return "-"
        return f"p50 {d['p50']:g} p90 {d['p90']:g} p99 {d['p99']:g} max {d['max']:g}"

    for d in rep["distribution"]:
        lines.append(f"  {json.dumps(d['params'], sort_keys=True) if d['params'] else '(scenario as written)'}: "
                     f"{d['ok']}/{d['runs']} runs held every invariant")
        lines.append(f"    stop-the-world ms per rebalance: {pct(d['stw_ms_per_rebalance'])}")
        lines.append(f"    stop-the-world ms per run:       {pct(d['stw_ms_per_run'])}")
        lines.append(f"    rebalances per run:              {pct(d['rebalances_per_run'])}")
        lines.append(f"    partitions moved per run:        {pct(d['partitions_moved_per_run'])}")
        for name, seeds in d["violations"].items():
            shown = ", ".join(map(str, seeds[:20])) + (" ..." if len(seeds) > 20 else "")
            lines.append(f"    VIOLATED {name} with seed(s) {shown} (reproduce: kgroup run FILE --seed N)")
    return "\n".join(lines)
