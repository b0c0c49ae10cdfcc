"""Seed sweeps as Spark tasks: every (seed, parameter combination) runs once in a Spark task (one run per task up
to 8 tasks per core, then runs share tasks: ``n_slices``), then the distribution.

The unit of work is :func:`run_one` -- a pure function of (scenario TOML text, seed, overrides) that runs the
scenario with ``scenarios.runner.run_scenario`` and returns a plain dict: invariant results, the runner's
summary figures, a SHA-256 of the events log (byte-identical for the same inputs) and, for the analysis, the
events themselves. The driver sends the scenario *text* (not a path) to the tasks and, on a non-local master,
ships kgroup's packages with ``addPyFile``, so the same command works on ``local[*]`` and on a cluster.

After the tasks, the events of every run go through the same fold as ``kgroup analyze``, in the tasks that hold
them (``analysis.analyze.fold_lines``): one row per run and group, then per parameter combination and group the
distribution over seeds (nearest-rank percentiles) of rebalances, whole group stopped (eager), partitions unowned
and moves, and violations with the seeds that reproduce them (``kgroup run FILE --seed N``).

A seed changes only what the scenario makes random (:func:`randomness`: network jitter, probabilistic message
faults) -- and member ids. When every seed of a combination gave the same result the sweep says so
(``warnings``) and names a knob to vary instead of printing identical percentiles as if they were a distribution.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import sys
import time
import tomllib
import zipfile
import zlib
from pathlib import Path
from typing import Any, Callable, Optional

PACKAGES = ("protocol", "coordinator", "consumer", "broker", "client", "scenarios", "analysis", "kgroup")


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
            text: Optional[str] = None, with_events: bool = True, progress_file: Optional[str] = None
            ) -> dict[str, Any]:
    """Run one (scenario, seed, overrides); a pure function of them (plus ``wall_s``). ``text``: the scenario
    file's content (tasks get the text, not the path). ``progress_file``: a byte is appended to it when the run is
    done (local masters: the driver counts runs as they finish, not only as tasks finish)."""
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
    times = [e.timestamp_ms for e in res.sim.records]
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
        "first_ms": min(times) if times else 0,
        "end_ms": max(times) if times else 0,
        "events": len(lines),
        "events_sha256": hashlib.sha256("".join(line + "\n" for line in lines).encode()).hexdigest(),
        "wall_s": round(res.wall_s, 4),
    }
    if with_events:
        # compressed: the task's result is cached in the JVM and read again by the analysis; ~10x smaller
        out["events_z"] = zlib.compress("\n".join(lines).encode("utf-8"), 1)
    if progress_file:
        try:
            with open(progress_file, "ab") as f:
                f.write(b".")
        except OSError:
            pass
    return out


def events_lines(r: dict[str, Any]) -> list[str]:
    """The events of a ``run_one`` result (JSON lines, in log order)."""
    data = r.get("events_z")
    return zlib.decompress(data).decode("utf-8").split("\n") if data else []


def run_label(r: dict[str, Any]) -> str:
    return f"seed={r['seed']}" + (f" {r['params']}" if r["overrides"] else "")


def randomness(data: dict[str, Any]) -> list[str]:
    """What a seed changes in this scenario (its TOML data after overrides), beyond member ids: the random
    choices of scenarios/world.py that the scenario switches on."""
    out = []
    jitter = (data.get("network") or {}).get("jitter_ms", 0)
    if jitter not in (0, "0", "0ms", "0s", None):
        out.append(f"network jitter (network.jitter_ms = {jitter})")
    for a in data.get("timeline") or []:
        if a.get("action") == "message_fault" and float(a.get("probability", 1.0)) < 1.0:
            out.append(f"message faults with probability {a['probability']} (at {a.get('at')})")
        if a.get("action") == "produce" and not a.get("key_format"):
            # keyless records: the sticky partitioner (KIP-480) picks each batch's partition at random, so the
            # consumers' work, and their timing, differ by seed
            out.append(f"keyless records of topic {a.get('topic')} (the sticky partitioner's random partitions)")
    return out


NO_RANDOMNESS_HINT = ("this scenario declares no randomness (network.jitter_ms = 0, no message_fault with a "
                      "probability below 1, keyed records only), so seeds change only member ids; vary something "
                      "real, e.g. --set network.jitter_ms=0,50")


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


class RunCounter:
    """Runs done / total and an ETA. On a local master every finished run appends a byte to a file (exact, per
    run); on a cluster the runs of finished Spark tasks are counted (tasks hold equal shares of the runs)."""

    def __init__(self, spark, total: int, slices: int, group: str) -> None:
        import tempfile

        from analysis.session import is_local
        self.sc, self.total, self.slices, self.group = spark.sparkContext, total, slices, group
        self.file = None
        if is_local(self.sc.master):
            fd, self.file = tempfile.mkstemp(prefix="kgroup-sweep-progress-")
            os.close(fd)
        self.t0 = time.perf_counter()

    def done(self) -> int:
        if self.file:
            try:
                return min(self.total, os.path.getsize(self.file))
            except OSError:
                return 0
        st = self.sc.statusTracker()
        tasks = 0
        for job in st.getJobIdsForGroup(self.group):
            info = st.getJobInfo(job)
            for sid in (info.stageIds if info else []):
                stage = st.getStageInfo(sid)
                if stage:
                    tasks += stage.numCompletedTasks
        return min(self.total, tasks * self.total // max(1, self.slices))

    def text(self) -> str:
        n = self.done()
        el = time.perf_counter() - self.t0
        from analysis.progress import fmt_duration
        eta = f", ETA {fmt_duration(el / n * (self.total - n))}" if 0 < n < self.total else ""
        return f"runs {n}/{self.total}{eta}"

    def close(self) -> None:
        if self.file:
            try:
                os.unlink(self.file)
            except OSError:
                pass


def n_slices(runs: int, parallelism: int, per_core: int = 8) -> int:
    """Spark tasks for ``runs`` runs: one run per task up to ``per_core`` tasks per core, then runs share tasks.
    A task costs ~50-100 ms of scheduling and result handling on a small machine, which is the price of a whole
    scenario run: 200 one-run tasks on local[2] were no faster than a sequential loop, 16 tasks were 1.5-1.9x."""
    return max(1, min(runs, per_core * max(1, parallelism)))


def run_tasks(spark, scenario: str | Path, seeds: list[int], combos: list[dict[str, Any]], progress=None):
    """Every (seed, combination) as Spark tasks (``n_slices``); returns the cached RDD of ``run_one`` dicts.
    ``progress``: an ``analysis.progress.Progress`` that shows runs done / total and an ETA."""
    text = Path(scenario).read_text(encoding="utf-8")
    source = str(scenario)
    tasks = [(seed, combo) for combo in combos for seed in seeds]
    sc = spark.sparkContext
    ship_code(spark)
    slices = n_slices(len(tasks), sc.defaultParallelism)
    group = f"kgroup-sweep-{os.getpid()}-{time.monotonic_ns()}"
    counter = RunCounter(spark, len(tasks), slices, group)
    pfile = counter.file
    rdd = sc.parallelize(tasks, slices).map(lambda t: run_one(source, t[0], t[1], text=text,
                                                              progress_file=pfile)).cache()
    sc.setJobGroup(group, f"kgroup sweep {Path(source).name}: {len(tasks)} runs")
    try:
        if progress is not None:
            progress.extra = counter.text
            progress.stage("running the scenario", f"{len(tasks)} run(s) in {slices} Spark task(s)")
        rdd.count()
        if progress is not None:
            progress.set_detail(f"{len(tasks)} run(s) done")
            progress.extra = None
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        counter.close()
    return rdd


def _group_rows(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``groups`` rows of one run's events (in its task), with the run's parameters."""
    from analysis.analyze import fold_lines
    from analysis.fold import GROUP_COLUMNS
    rows = fold_lines(events_lines(r), run_label(r), r["scenario"], r["seed"], r["end_ms"])["groups"]
    return [dict(zip(GROUP_COLUMNS, row), params=r["params"]) for row in rows]


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


#: What "the same result" compares, per group of a run.
RESULT_KEYS = ("rebalances", "group_stopped_ms", "unowned_partition_ms", "partitions_moved")


def sweep(spark, scenario: str | Path, seeds: list[int], sets: Optional[dict[str, list[Any]]] = None,
          progress=None, analysis: bool = True) -> dict[str, Any]:
    """Run the sweep and return its report: ``runs`` (one dict per run, without events), ``groups`` (one row per
    run and group, from the analysis), ``distribution`` (per combination and group), ``warnings``."""
    combos = combinations(sets or {})
    t0 = time.perf_counter()
    rdd = run_tasks(spark, scenario, seeds, combos, progress)
    tasks_s = time.perf_counter() - t0
    runs = rdd.map(lambda r: {k: v for k, v in r.items() if k != "events_z"}).collect()
    group_rows: list[dict] = []
    if analysis:
        if progress is not None:
            progress.stage("rebalance metrics per group", f"{sum(r['events'] for r in runs):,} events")
        # one run's records are all in one task: each task folds its runs (the fold of kgroup analyze), no shuffle
        group_rows = rdd.flatMap(_group_rows).collect()
        group_rows.sort(key=lambda d: (d["params"], d["group_id"], d["seed"] or 0))
    rdd.unpersist()
    spark.catalog.clearCache()
    runs.sort(key=lambda r: (r["params"], r["seed"]))
    text = Path(scenario).read_text(encoding="utf-8")
    dist, warnings = distribution(runs, group_rows if analysis else None, combos, tomllib.loads(text))
    return {"scenario": str(scenario), "seeds": len(seeds), "tasks": len(runs), "tasks_wall_s": round(tasks_s, 3),
            "master": spark.sparkContext.master, "runs": runs, "groups": group_rows, "distribution": dist,
            "warnings": warnings}


def distribution(runs: list[dict[str, Any]], group_rows: Optional[list[dict[str, Any]]],
                 combos: list[dict[str, Any]], data: Optional[dict[str, Any]] = None
                 ) -> tuple[list[dict[str, Any]], list[str]]:
    """Per combination: its runs, invariant results with the seeds that reproduce each violation, and per group
    the distribution over seeds (nearest-rank percentiles) of rebalances, whole group stopped, partitions
    unowned and moves. A warning for every combination whose seeds all gave the same result."""
    dist, warnings = [], []
    for combo in combos:
        params = json.dumps(combo, sort_keys=True)
        rs = [r for r in runs if r["params"] == params]
        entry = {
            "params": combo,
            "runs": len(rs),
            "ok": sum(r["ok"] for r in rs),
            "violations": {name: sorted(r["seed"] for r in rs if r["invariants"].get(name))
                           for name in sorted({k for r in rs for k, v in r["invariants"].items() if v})},
            "groups": [],
            "same_result": None,
        }
        if group_rows is not None:
            gs = [g for g in group_rows if g["params"] == params]
            for gid in sorted({g["group_id"] for g in gs}):
                rows = [g for g in gs if g["group_id"] == gid]
                entry["groups"].append({
                    "group_id": gid,
                    "protocol": rows[0]["protocol"], "assignor": rows[0]["assignor"],
                    "static_members": rows[0]["static_members"],
                    "runs": len(rows),
                    "rebalances": percentiles([g["rebalances"] for g in rows]),
                    "group_stopped_ms": (None if rows[0]["protocol"] in ("cooperative", "consumer") else
                                         percentiles([g["group_stopped_ms"] or 0 for g in rows])),
                    # KIP-848 consumer groups: the longest reconciliation of each run
                    "max_reconciliation_ms": (percentiles([g.get("max_reconciliation_ms") or 0 for g in rows])
                                              if rows[0]["protocol"] == "consumer" else None),
                    "unowned_partition_ms": percentiles([g["unowned_partition_ms"] for g in rows]),
                    "unowned_ms_per_partition": percentiles([g["unowned_ms_per_partition"] or 0 for g in rows]),
                    "partitions_moved": percentiles([g["partitions_moved"] for g in rows]),
                    "values": {k: [g.get(k) for g in sorted(rows, key=lambda g: g["seed"] or 0)]
                               for k in ("group_stopped_ms", "unowned_ms_per_partition", "max_reconciliation_ms")},
                })
            results = {}
            for g in gs:
                results.setdefault(g["seed"], []).append(tuple((g["group_id"],) + tuple(g[k] for k in RESULT_KEYS)))
            if len(results) > 1:
                same = len({tuple(sorted(v)) for v in results.values()}) == 1
                entry["same_result"] = same
                if same:
                    label = json.dumps(combo, sort_keys=True) if combo else "the scenario as written"
                    why = randomness(apply_overrides(data, combo)) if data is not None else []
                    warnings.append(f"{label}: all {len(results)} seeds gave the same result"
                                    + (f" (the scenario's randomness: {', '.join(why)}, did not change it)"
                                       if why else f"; {NO_RANDOMNESS_HINT}"))
        dist.append(entry)
    return dist, warnings


def _ms(v: Optional[float]) -> str:
    return "-" if v is None else f"{v / 1000:.2f} s"


def format_report(rep: dict[str, Any]) -> str:
    lines = [f"sweep {rep['scenario']}: {rep['tasks']} run(s) ({rep['seeds']} seed(s) x "
             f"{len(rep['distribution'])} combination(s)) on {rep['master']} in {rep['tasks_wall_s']:.1f} s"]

    def pct(d, f=_ms):
        if not d or d["max"] is None:
            return "-"
        return f"p50 {f(d['p50'])}, p90 {f(d['p90'])}, max {f(d['max'])}"

    def count(v):
        return f"{v:g}"

    for d in rep["distribution"]:
        lines.append(f"  {json.dumps(d['params'], sort_keys=True) if d['params'] else '(scenario as written)'}: "
                     f"{d['ok']}/{d['runs']} runs held every invariant")
        for g in d["groups"]:
            kind = f"{g['protocol']}, {g['assignor']}" + (", static members" if g["static_members"] else "")
            stopped = ("never (cooperative)" if g["group_stopped_ms"] is None else pct(g["group_stopped_ms"]))
            if g["protocol"] == "consumer":
                stopped = "no group-wide barrier (consumer protocol)"
            lines.append(f"    group {g['group_id']} ({kind}), per run:")
            lines.append(f"      rebalances              {pct(g['rebalances'], count)}")
            lines.append(f"      whole group stopped     {stopped}")
            lines.append(f"      unowned per partition   {pct(g['unowned_ms_per_partition'])}")
            if g.get("max_reconciliation_ms"):
                lines.append(f"      longest reconciliation  {pct(g['max_reconciliation_ms'])}")
            lines.append(f"      partitions moved        {pct(g['partitions_moved'], count)}")
        for name, seeds in d["violations"].items():
            shown = ", ".join(map(str, seeds[:20])) + (" ..." if len(seeds) > 20 else "")
            lines.append(f"    VIOLATED {name} with seed(s) {shown} (reproduce: kgroup run FILE --seed N)")
    for w in rep.get("warnings") or ():
        lines.append(f"warning: {w}")
    if rep.get("report"):
        lines.append(f"wrote {rep['report']} and runs/groups tables (Parquet and CSV) in "
                     f"{Path(rep['report']).parent}")
    return "\n".join(lines)
