"""``kgroup analyze``: logs -> Python tasks on Spark (parse, one shuffle by group, the fold) -> Parquet + CSV tables,
report.html, a JSON summary.

The job (docs/analysis.md "How the analysis runs"; figures in docs/benchmarks.md):

1. :func:`analysis.load.discover` resolves the LOGS and refuses unusable ones before Spark starts.
2. The JSON logs are cut into byte ranges, about four tasks per core (:func:`analysis.load.byte_ranges`). Each Spark
   task reads its ranges and parses every line with Python's ``json`` -- C code that needs no warm-up, where the
   JVM's JSON reader spends most of a short job compiling itself in a fresh JVM -- checks it against the declared
   schema (:func:`analysis.load.is_event`), counts per file (records, lines that are not, first and last time,
   commits) and keys each group-scoped record by its (run, group) (:func:`scan`).
3. One shuffle (PySpark's ``partitionBy``: the JVM moves pickled batches) brings each group's records to one task,
   which sorts them and runs :mod:`analysis.fold` over each of its groups, writes its rows of every table as part
   files (JSON lines for Spark's Parquet writer, CSV) and returns a bounded head of them for the report
   (:func:`analysis.report.head_of`); every task also receives every run's time span, so the fold knows where each
   run ends without a pass of its own.
4. Spark writes each table as Parquet from its JSON parts (the writes run concurrently) and the CSV parts are joined
   into one plain CSV file per table.

A small log (:data:`SMALL_BYTES`) takes the same steps on the driver, with the same functions: a Spark job would
cost more than the work. ``events.parquet`` (on request) is Spark's parse of the logs with the declared schema
(``analysis.schema``); analysing it again reads the columns the analysis needs from it, no JSON.
"""

from __future__ import annotations

import csv
import gc
import heapq
import json
import os
import shutil
import sys
import tempfile
import zlib
from dataclasses import dataclass, field
from itertools import groupby
from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

from analysis import fold, load, report
from analysis.load import InputError
from analysis.schema import RECORD_TYPES

TABLES = ("groups", "rebalances", "members", "partitions", "ownership", "epochs")

#: Up to this many bytes of JSON logs (~50,000 events) the analysis runs on the driver: a Spark job (starting the
#: Python workers alone) would cost more than reading and folding them. Spark writes the Parquet tables.
SMALL_BYTES = 16 << 20
#: An ``events.parquet`` input with at most this many events (and small JSON beside it) is collected to the driver
#: (one Spark job) and analysed there.
LOCAL_EVENTS = 50_000
#: Shuffle partitions: one per this many bytes of JSON (a reduce task holds its groups' records in memory).
REDUCE_BYTES = 48 << 20
#: Above this much input (JSON bytes, Parquet counted 4x) the JVM gets its full JIT (analysis.session).
LONG_JOB_BYTES = 64 << 20


def table_schema(name: str):
    from pyspark.sql import types as T

    from analysis.schema import spark_type
    return T.StructType([T.StructField(c, spark_type(fold.column_type(name, c)), True)
                         for c in fold.COLUMNS[name]])


# --- records -> the fold's tuples ---------------------------------------------------------------------------------

#: The KIP-848 record types whose fields go to the fold (``fold.CG_FIELDS``).
CG_TYPES = frozenset(t for t in RECORD_TYPES if t.startswith("ConsumerGroup"))


def parsed(lines: Iterable[bytes | str]) -> Iterator[Optional[dict]]:
    """The event records of JSON lines (None for a line that is not one; blank lines are skipped)."""
    loads, check = json.loads, load.is_event
    for line in lines:
        try:
            d = loads(line)
        except ValueError:            # not JSON (or not UTF-8)
            if line.strip():
                yield None
            continue
        yield d if check(d) else None


def new_counts() -> list:
    """Per log file: [events, lines that are not records, first ms, last ms, offset commits]."""
    return [0, 0, None, None, 0]


def scan(records: Iterable[Optional[dict]], run: str, counts: list) -> Iterator[tuple[str, tuple]]:
    """Count ``records`` (of one log file of ``run``; None for a line that is not a record) into ``counts`` and yield
    ``("r", record)`` for each group-scoped record, as the tuple of ``fold.FIELDS``, and ``("c", (run, group, ts,
    topic, partition, offset))`` for each offset commit (``fold.COMMIT_TYPES``: the lag chart's input). The
    coordinator's offset commits and tombstones are no part of the membership protocol the fold reads; of a
    GroupMetadata member only what the fold reads is kept (its subscription and timeouts stay behind: less to
    ship through the shuffle)."""
    member_of = fold.group_member
    # one str object per distinct group id and record type: pickle writes a repeated object once per batch (a
    # quarter fewer bytes through the shuffle)
    intern = sys.intern
    commit_types, as_coordinator, cg_fields, cg_types = fold.COMMIT_TYPES, fold.OBSERVED_AS, fold.cg_fields, CG_TYPES
    for d in records:
        if d is None:
            counts[1] += 1
            continue
        counts[0] += 1
        ts = d["timestamp_ms"]
        if counts[2] is None or ts < counts[2]:
            counts[2] = ts
        if counts[3] is None or ts > counts[3]:
            counts[3] = ts
        data = d["data"]
        typ = d["type"]
        g = data.get("group_id")
        if typ in commit_types:
            counts[4] += 1
            if g:
                yield "c", (run, g, ts, data.get("topic"), data.get("partition"), data.get("offset"))
        # a watcher's ObservedCommit is also a record of the group for the fold (as in the log's order), a
        # coordinator's offset commit or tombstone is not
        if g and typ not in ("OffsetCommit", "OffsetTombstone"):
            members = data.get("members")
            if members and as_coordinator.get(typ, typ) == "GroupMetadata":
                members = [m for m in map(member_of, members) if m is not None]
            yield "r", (run, intern(g), ts, d["log_partition"], d["log_offset"], intern(typ), data.get("member_id"),
                        data.get("group_instance_id"), data.get("client_id"), data.get("old_member_id"),
                        data.get("new_member_id"), data.get("generation_id"), data.get("reason"),
                        data.get("initial"), members, data.get("protocol_name"),
                        cg_fields(data) if typ in cg_types else None, data.get("group_type"))


def parquet_records(lines: Iterable[str]) -> Iterator[tuple[tuple, Optional[dict]]]:
    """``(source, record or None)`` of the JSON text of :func:`projected` rows; source = (file, run, scenario,
    seed)."""
    loads = json.loads
    for line in lines:
        d = loads(line)
        src = (d.pop("_file", None), d.pop("run", None), d.pop("scenario", None), d.pop("seed", None))
        yield src, (d if d.pop("_ok", False) else None)


def scan_sources(pairs: Iterable[tuple[tuple, Optional[dict]]], counts: dict) -> Iterator[tuple[str, tuple]]:
    """:func:`scan` of ``(source, record)`` pairs (consecutive ones mostly share their source)."""
    for src, batch in groupby(pairs, key=lambda p: p[0]):
        c = counts.get(src)
        if c is None:
            c = counts[src] = new_counts()
        yield from scan((rec for _, rec in batch), src[1], c)


def projected(events):
    """What the analysis reads of an events DataFrame (``analysis.load.read_parquet_runs``), in the shape of the
    JSON records (envelope + ``data``) plus ``_file``, ``run``, ``scenario``, ``seed`` and ``_ok``."""
    from pyspark.sql import functions as F
    d = F.col("data")
    wanted = ("group_id", "member_id", "group_instance_id", "client_id", "old_member_id", "new_member_id",
              "generation_id", "reason", "initial", "members", "protocol_name", "topic", "partition", "offset",
              "group_type", *fold.CG_FIELDS)
    return events.select("_file", "run", "scenario", "seed", "_ok", "timestamp_ms", "log_partition", "log_offset",
                         "type", F.struct(*[d[f].alias(f) for f in wanted]).alias("data"))


def gather(items: Iterable[tuple[str, tuple]]) -> tuple[dict, dict]:
    """The records by (run, group), and the commits by (run, group) as (ts, topic, partition, offset)."""
    groups: dict[tuple[str, str], list[tuple]] = {}
    commits: dict[tuple[str, str], list[tuple]] = {}
    for tag, x in items:
        k = (x[0], x[1])
        into = groups if tag == "r" else commits
        lst = into.get(k)
        if lst is None:
            lst = into[k] = []
        lst.append(x if tag == "r" else x[2:])
    return groups, commits


def stats_rows(counts: dict[tuple, list]) -> list[dict]:
    """:func:`check_input`'s rows from counts by (file, run, scenario, seed)."""
    return [{"_file": src[0], "run": src[1], "scenario": src[2], "seed": src[3], "events": c[0], "bad": c[1],
             "first_ms": c[2], "last_ms": c[3], "commits": c[4]} for src, c in counts.items()]


def add_counts(into: dict[tuple, list], src: tuple, c: list) -> None:
    cur = into.get(src)
    if cur is None:
        into[src] = list(c)
        return
    cur[0] += c[0]
    cur[1] += c[1]
    cur[4] += c[4]
    for i, pick in ((2, min), (3, max)):
        if c[i] is not None:
            cur[i] = c[i] if cur[i] is None else pick(cur[i], c[i])


def fold_lines(lines: Iterable[bytes | str], run: str, scenario: str = "", seed: Optional[int] = None,
               end_ms: Optional[int] = None) -> dict[str, list[tuple]]:
    """Every table's rows of one run's JSON lines (a sweep's task folds its run with this)."""
    counts = new_counts()
    groups, _ = gather(scan(parsed(lines), run, counts))
    end = max(x for x in (end_ms, counts[3]) if x is not None) if counts[3] is not None else end_ms
    return fold.fold_groups(groups, {run: (end, scenario, seed)})


# --- the input check ----------------------------------------------------------------------------------------------

@dataclass
class Checked:
    """What the input check found: per run its time span and size, and the warnings to show."""
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    events: int = 0
    bad_lines: int = 0


def check_input(rows: list[dict], sources: list[load.RunSource]) -> Checked:
    """Refuse a file without event records, count the lines that are not; per run its time span and size."""
    res = Checked()
    for r in rows:
        res.events += r["events"] or 0
        res.bad_lines += r["bad"] or 0
        if r["bad"]:
            example = load.bad_line_example(r["_file"]) if os.path.isfile(r["_file"]) else None
            res.warnings.append(f"{r['_file']}: {r['bad']} line(s) are not event records and were skipped"
                                + (f"; first: {example}" if example else ""))
        if not r["events"]:
            continue
        info = res.runs.setdefault(r["run"], {"run": r["run"], "scenario": r["scenario"] or "", "seed": r["seed"],
                                              "first_ms": r["first_ms"], "end_ms": r["last_ms"], "events": 0,
                                              "commits": 0, "files": 0})
        info["first_ms"] = min(info["first_ms"], r["first_ms"])
        info["end_ms"] = max(info["end_ms"], r["last_ms"])
        info["events"] += r["events"]
        info["commits"] += r["commits"] or 0
        info["files"] += 1
    by_file = {}
    for r in rows:
        by_file[r["_file"]] = by_file.get(r["_file"], 0) + (r["events"] or 0)
    for src in sources:
        if src.kind != "json":
            continue
        counts = [by_file.get(f, 0) for f in src.files]
        if sum(counts) == 0:
            where = src.files[0] if len(src.files) == 1 else src.run
            bad = next((w for w in res.warnings if w.startswith(src.files[0])), "")
            raise InputError(f"{where}: no event records" + (f" ({bad.split('; first: ', 1)[-1]})"
                                                             if "; first: " in bad else ""))
    if res.events == 0:
        raise InputError(f"{sources[0].files[0]}: no event records")
    for info in res.runs.values():
        info["wall_clock"] = report.is_wall_clock(info["first_ms"])
    return res


def _runs_for_fold(runs_info: dict[str, dict[str, Any]]) -> dict[str, tuple]:
    return {k: (v["end_ms"], v["scenario"], v["seed"]) for k, v in runs_info.items()}


# --- the Spark job ------------------------------------------------------------------------------------------------

def without_gc(items: Iterable) -> Iterator:
    """``items`` with Python's cyclic garbage collector off while they are produced. The tasks allocate millions
    of small tuples, dicts and lists (parsed JSON, records held for the fold) that form no reference cycles, and
    every generation-2 collection walks all of them: off, a task's Python work takes ~40% less CPU at 1M events
    (json.loads ~45%, the reduce side's unpickling ~75% less). Reference counting still frees everything."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield from items
    finally:
        if was:
            gc.enable()


def _partition_of(nparts: int):
    cache: dict[tuple[str, str], int] = {}

    def pid(run: str, group: str) -> int:
        k = (run, group)
        p = cache.get(k)
        if p is None:
            p = cache[k] = zlib.crc32(f"{run}\0{group}".encode("utf-8", "surrogatepass")) % nparts
        return p
    return pid


def _keyed(items: Iterable[tuple[str, tuple]], counts: dict[tuple, list], nparts: int) -> Iterator[tuple[int, tuple]]:
    """The map side: each record and commit to its group's partition; then every run's time span to every
    partition (the fold needs where each run ends) and the counts to partition 0."""
    pid = _partition_of(nparts)
    # Offset commits feed only the lag charts of the first MAX_CHART_GROUPS groups by (run, group). Such a group
    # has fewer than that many groups before it anywhere, so also among the groups this task saw records of: a
    # commit whose group comes after this task's MAX_CHART_GROUPS-th can be no chart's and stays here (at 1M
    # events of the benchmark, half the records)
    commits: list[tuple] = []
    seen: set[tuple[str, str]] = set()
    for tag, x in items:
        if tag == "c":
            commits.append(x)
        else:
            seen.add((x[0], x[1]))
            yield pid(x[0], x[1]), (tag, x)
    first = heapq.nsmallest(report.MAX_CHART_GROUPS, seen)
    last = first[-1] if len(first) == report.MAX_CHART_GROUPS else None
    for x in commits:
        if last is None or (x[0], x[1]) <= last:
            yield pid(x[0], x[1]), ("c", x)
    del commits
    spans: dict[str, list] = {}
    for src, c in counts.items():
        if c[2] is None:
            continue
        s = spans.get(src[1])
        if s is None:
            spans[src[1]] = [src[2], src[3], c[2], c[3]]
        else:
            s[2], s[3] = min(s[2], c[2]), max(s[3], c[3])
    for run, (scenario, seed, first, last) in spans.items():
        for p in range(nparts):
            yield p, ("t", (run, scenario, seed, first, last))
    for src, c in counts.items():
        yield 0, ("s", (src, c))


def map_json(task: list[tuple[int, int, int]], files: list[tuple], nparts: int) -> Iterator[tuple[int, tuple]]:
    """A map task over byte ranges of JSON logs; ``files``: (path, run, scenario, seed) by file index."""
    counts: dict[tuple, list] = {}

    def items():
        for i, start, end in task:
            path, run, scenario, seed = files[i]
            src = (path, run, scenario, seed)
            c = counts.get(src)
            if c is None:
                c = counts[src] = new_counts()
            yield from scan(parsed(load.read_range(path, start, end)), run, c)
    return _keyed(items(), counts, nparts)


def map_parquet(lines: Iterable[str], nparts: int) -> Iterator[tuple[int, tuple]]:
    """A map task over :func:`projected` rows of an events Parquet (as JSON text)."""
    counts: dict[tuple, list] = {}
    return _keyed(scan_sources(parquet_records(lines), counts), counts, nparts)


def reduce_groups(pid: int, items: Iterable[tuple[int, tuple]], parts_dir: Optional[str]) -> Iterator[dict]:
    """A reduce task: its groups' records -> the fold -> part files of every table (when ``parts_dir``) and a
    bounded head for the report; with partition 0's, the input counts."""
    records: list[tuple[str, tuple]] = []
    spans: dict[str, list] = {}
    counts: dict[tuple, list] = {}
    for _, (tag, x) in items:
        if tag == "r" or tag == "c":
            records.append((tag, x))
        elif tag == "t":
            run, scenario, seed, first, last = x
            s = spans.get(run)
            if s is None:
                spans[run] = [scenario or "", seed, first, last]
            else:
                s[2], s[3] = min(s[2], first), max(s[3], last)
        else:
            add_counts(counts, *x)
    groups, commits = gather(records)
    del records
    rows = fold.fold_groups(groups, {run: (s[3], s[0], s[1]) for run, s in spans.items()})
    if parts_dir is not None:
        write_parts(rows, Path(parts_dir), pid)
    head = report.head_of(rows, commits, spans={run: (s[2], s[3]) for run, s in spans.items()})
    yield {"counts": list(counts.items()), "head": head}


def run_job(spark, json_sources: list[load.RunSource], parquet_frames: list, nbytes: int,
            parts_dir: Optional[Path]) -> tuple[list[dict], dict]:
    """The Spark job (steps 2-3): input counts (:func:`check_input`'s rows) and the merged report head; the fold's
    rows are in ``parts_dir`` (when given)."""
    sc = spark.sparkContext
    cores = max(1, sc.defaultParallelism)
    nparts = max(cores, -(-nbytes // REDUCE_BYTES))
    rdds = []
    files = [(f, s.run, s.scenario, s.seed) for s in json_sources for f in s.files]
    if files:
        target = min(128 << 20, max(8 << 20, nbytes // (cores * 4) + 1))
        tasks = load.byte_ranges([f[0] for f in files], target)
        rdds.append(sc.parallelize(tasks, len(tasks)).flatMap(lambda t: without_gc(map_json(t, files, nparts))))
    for df in parquet_frames:
        rdds.append(_json_text(projected(df)).mapPartitions(lambda lines: without_gc(map_parquet(lines, nparts))))
    keyed = rdds[0] if len(rdds) == 1 else sc.union(rdds)
    where = None if parts_dir is None else str(parts_dir)
    results = keyed.partitionBy(nparts, lambda p: p).mapPartitionsWithIndex(
        lambda i, it: without_gc(reduce_groups(i, it, where))).collect()
    counts: dict[tuple, list] = {}
    for r in results:
        for src, c in r["counts"]:
            add_counts(counts, src, c)
    return stats_rows(counts), report.merge_heads([r["head"] for r in results])


def _json_text(df):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # "toJSON will return a DataFrame in future releases"
        return df.toJSON()


# --- writing ------------------------------------------------------------------------------------------------------

def _csv_value(v: Any) -> Any:
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return "" if v is None else v


def write_csv_rows(f, rows: Iterable[tuple]) -> None:
    """Table rows as CSV (RFC 4180 quoting; arrays as JSON text; null as an empty field)."""
    csv.writer(f).writerows([_csv_value(v) for v in r] for r in rows)


def write_parts(rows: dict[str, list[tuple]], parts_dir: Path, pid: int) -> None:
    """One reduce task's rows of every table: ``json/<table>/part-N.json`` (JSON lines, keys "0", "1", ... for the
    columns: Spark reads them with the table's schema) and ``csv/<table>/part-N.csv`` (no header)."""
    dumps = json.dumps
    for name, rs in rows.items():
        if not rs:
            continue
        keys = [str(i) for i in range(len(fold.COLUMNS[name]))]
        jd, cd = parts_dir / "json" / name, parts_dir / "csv" / name
        jd.mkdir(parents=True, exist_ok=True)
        cd.mkdir(parents=True, exist_ok=True)
        with open(jd / f"part-{pid:05d}.json", "w", encoding="utf-8") as f:
            f.writelines([dumps(dict(zip(keys, r))) + "\n" for r in rs])
        with open(cd / f"part-{pid:05d}.csv", "w", newline="", encoding="utf-8") as f:
            write_csv_rows(f, rs)


def _clear(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    elif path.exists():
        path.unlink()


def write_csv(name: str, path: Path, rows: Optional[list[tuple]] = None, parts: Optional[Path] = None) -> None:
    """``<table>.csv``: the header, then ``rows`` or the CSV part files in ``parts`` (in partition order)."""
    _clear(path)
    with open(path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerow(fold.COLUMNS[name])
        if rows is not None:
            write_csv_rows(f, rows)
    if parts is not None and parts.is_dir():
        with open(path, "ab") as out:
            for part in sorted(parts.glob("part-*.csv")):
                with open(part, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)


def write_parquet(spark, name: str, path: Path, rows: Optional[list[tuple]] = None,
                  parts: Optional[Path] = None) -> None:
    """``<table>.parquet`` by Spark's writer, from ``rows`` on the driver or the JSON part files in ``parts``."""
    from pyspark.sql import types as T
    schema = table_schema(name)
    if parts is not None and parts.is_dir() and any(parts.glob("part-*.json")):
        short = T.StructType([T.StructField(str(i), f.dataType, True) for i, f in enumerate(schema.fields)])
        df = spark.read.schema(short).json(str(parts)).toDF(*schema.names)
    else:
        df = spark.createDataFrame(rows or [], schema, verifySchema=False)
    df.write.mode("overwrite").parquet(str(path))


def write_tables(spark, out: Path, rows: Optional[dict[str, list[tuple]]] = None, parts_dir: Optional[Path] = None,
                 events=None) -> dict[str, list[str]]:
    """Every table as Parquet and as one plain CSV file, and ``events`` (a DataFrame) as ``events.parquet``; the
    Spark writes run concurrently (each is a small job whose fixed costs overlap)."""
    from concurrent.futures import ThreadPoolExecutor
    written: dict[str, list[str]] = {}
    with ThreadPoolExecutor(max_workers=len(TABLES) + 1) as pool:
        futures = []
        if events is not None:
            futures.append(pool.submit(load.export_parquet, events, out / "events.parquet"))
            written["events"] = [str(out / "events.parquet")]
        for name in TABLES:
            mine = rows[name] if rows is not None else None
            futures.append(pool.submit(write_parquet, spark, name, out / f"{name}.parquet", mine,
                                       parts_dir / "json" / name if parts_dir else None))
        for name in TABLES:
            write_csv(name, out / f"{name}.csv", rows[name] if rows is not None else None,
                      parts_dir / "csv" / name if parts_dir else None)
            written[name] = [str(out / f"{name}.parquet"), str(out / f"{name}.csv")]
        for fut in futures:
            fut.result()
    return {k: written[k] for k in (*TABLES, "events") if k in written}


# --- the analysis -------------------------------------------------------------------------------------------------

@dataclass
class Analysis:
    summary: dict[str, Any]
    data: dict[str, Any]      # what the report shows


def _input_bytes(sources) -> int:
    return sum(_size(f) * (4 if s.kind == "parquet" else 1) for s in sources for f in s.files)


def _size(path: str) -> int:
    p = Path(path)
    return p.stat().st_size if p.is_file() else sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def _local(json_sources: list[load.RunSource], parquet_lines: list[str]) -> tuple[list[dict], dict, dict]:
    """Steps 2-3 on the driver: input counts, records and commits by group."""
    counts: dict[tuple, list] = {}
    items: list[tuple[str, tuple]] = []
    for s in json_sources:
        for f in s.files:
            c = counts[(f, s.run, s.scenario, s.seed)] = new_counts()
            items += scan(parsed(load.read_range(f, 0, os.path.getsize(f))), s.run, c)
    items += scan_sources(parquet_records(parquet_lines), counts)
    groups, commits = gather(items)
    return stats_rows(counts), groups, commits


def run_analysis(paths: list[str], out: Optional[str | Path] = None, master: str = "local[*]", spark=None,
                 export_events: bool = True, progress=None) -> Analysis:
    """The whole analysis: checks, tables, the report data, and with ``out`` the files (``export_events``: also
    ``events.parquet``). Raises :class:`analysis.load.InputError` for unusable input."""
    from analysis.progress import Progress
    from analysis.session import get_spark
    progress = progress or Progress("analyze", enabled=False)
    sources = load.discover(paths)
    nbytes = _input_bytes(sources)
    if spark is None:
        progress.stage("starting Spark", master)
        spark = get_spark(master, long_jobs=nbytes > LONG_JOB_BYTES)
    progress.spark = lambda: spark.sparkContext
    out = Path(out) if out is not None else None
    json_sources = [s for s in sources if s.kind == "json"]
    pq_paths = [f for s in sources if s.kind == "parquet" for f in s.files]
    pq_frames = [load.read_parquet_runs(spark, p) for p in pq_paths]
    json_bytes = sum(os.path.getsize(f) for s in json_sources for f in s.files)
    n_files = sum(len(s.files) for s in sources)
    what = f"{len(sources)} run(s), {n_files} file(s), {nbytes / 1e6:,.1f} MB"
    small = json_bytes <= SMALL_BYTES and (not pq_frames or sum(df.count() for df in pq_frames) <= LOCAL_EVENTS)
    created = out is not None and not out.exists()
    parts_dir: Optional[Path] = None
    links = load.Links()
    try:
        progress.stage("reading the logs and computing the metrics", what)
        if small:
            pq_lines = [line for df in pq_frames for line in _json_text(projected(df)).collect()]
            rows_, groups, commits = _local(json_sources, pq_lines)
            checked = check_input(rows_, sources)
            rows = fold.fold_groups(groups, _runs_for_fold(checked.runs))
            head = report.head_of(rows, commits)
        else:
            rows = None
            if out is not None:
                out.mkdir(parents=True, exist_ok=True)
                parts_dir = Path(tempfile.mkdtemp(prefix=".kgroup-parts-", dir=out))
            rows_, head = run_job(spark, json_sources, pq_frames, nbytes, parts_dir)
            checked = check_input(rows_, sources)
        for w in checked.warnings:
            progress.note(f"warning: {w}")
        progress.stage("collecting the report data")
        data = report.collect_for_report(head, checked.runs, sources)
        data["warnings"] = checked.warnings
        summary = summarize(data, checked)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            target = (out / "events.parquet").resolve()
            events = None
            if export_events and str(target) not in {str(Path(p).resolve()) for p in pq_paths}:
                events = _events(spark, json_sources, pq_frames, links)
            progress.stage("writing tables", ", ".join(TABLES) + (", events.parquet" if events is not None else ""))
            summary["written"] = write_tables(spark, out, rows, parts_dir, events)
            html_path = out / "report.html"
            html_path.write_text(report.render_html(data), encoding="utf-8")
            summary["report"] = str(html_path)
            (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n",
                                              encoding="utf-8")
        return Analysis(summary, data)
    except InputError:
        if created and out is not None:
            shutil.rmtree(out, ignore_errors=True)
        raise
    finally:
        links.close()
        if parts_dir is not None:
            shutil.rmtree(parts_dir, ignore_errors=True)


def _events(spark, json_sources: list[load.RunSource], pq_frames: list, links: load.Links):
    """The events DataFrame for ``events.parquet``: Spark's parse of the JSON logs with the declared schema (and the
    Parquet inputs)."""
    frames = []
    if json_sources:
        frames.append(load.read_json(spark, json_sources, links))
    frames += pq_frames
    events = frames[0]
    for f in frames[1:]:
        events = events.unionByName(f)
    return events


def analyze(paths: list[str], out: Optional[str | Path] = None, master: str = "local[*]", spark=None,
            export_events: bool = True, progress=None) -> dict[str, Any]:
    """``kgroup analyze``: returns the JSON summary (with the written paths when ``out`` is given)."""
    return run_analysis(paths, out, master, spark, export_events, progress).summary
def summarize(data: dict[str, Any], checked: Checked) -> dict[str, Any]:
    t = data["totals"]
    return {
        "runs": [dict(v) for v in sorted(checked.runs.values(), key=lambda v: v["run"])],
        "events": checked.events,
        "lines_not_records": checked.bad_lines,
        "warnings": checked.warnings,
        "groups": t["groups"],
        "rebalances": t["rebalances"],
        "completed": t["completed"] or 0,
        "partitions_moved": t["moved"] or 0,
        "group_rows": data["groups"][:200],
    }


def _s(ms) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f} s"


def format_summary(s: dict[str, Any]) -> str:
    lines = [f"{len(s['runs'])} run(s), {s['events']:,} event records, {s['groups']} group(s), "
             f"{s['rebalances']} rebalance(s) ({s['completed']} completed), {s['partitions_moved']} partition move(s)"]
    for r in s["runs"]:
        if r.get("wall_clock"):
            lines.append(f"  {r['run']}: starts {report.wall_clock(r['first_ms'])}, "
                         f"{_s(r['end_ms'] - r['first_ms'])} of records")
    for g in s["group_rows"]:
        stopped = ("never stops the whole group (cooperative)" if g["protocol"] == "cooperative"
                   else f"whole group stopped {_s(g['group_stopped_ms'])}")
        if g["protocol"] == "consumer":
            stopped = (f"no group-wide barrier (consumer protocol), {g['group_epochs']} group epoch(s), "
                       f"reconciliation {_s(g['mean_reconciliation_ms'])} mean, "
                       f"{_s(g['max_reconciliation_ms'])} max")
        lines.append(f"  {g['run']} / {g['group_id']} ({g['protocol'] or '?'}, {g['assignor'] or '?'}"
                     f"{', static members' if g['static_members'] else ''}): {g['rebalances']} rebalance(s), "
                     f"{g['rebalances_while_consuming']} while consuming: {stopped}; partitions unowned "
                     f"{_s(g['unowned_partition_ms'])} partition-time "
                     f"({_s(g['unowned_ms_per_partition'])} per partition), {g['partitions_moved']} moved")
    if len(s["group_rows"]) < s["groups"]:
        lines.append(f"  ... {s['groups'] - len(s['group_rows'])} more group(s) in groups.csv")
    for w in s.get("warnings") or ():
        lines.append(f"warning: {w}")
    if s.get("report"):
        lines.append(f"wrote {s['report']} and the tables (Parquet and CSV) in {Path(s['report']).parent}")
    return "\n".join(lines)
