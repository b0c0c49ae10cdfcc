"""``kgroup analyze``: logs -> one Spark pass per group -> Parquet + CSV tables, report.html, a JSON summary.

The job (docs/analysis.md "How the analysis runs"; figures in docs/benchmarks.md):

1. :func:`analysis.load.discover` resolves the LOGS and refuses unusable ones before Spark starts.
2. Spark parses the JSON lines once, with the declared schema (``analysis.schema``; never inferred), into Parquet:
   ``events.parquet`` of the output, or a scratch copy. Every later pass reads only the columns it needs from it;
   the ``events.parquet`` of an earlier analysis is read directly (no JSON parse).
3. One aggregation per file checks the input (records, lines that are not records, first and last time).
4. The records of each group are shuffled together and sorted (one shuffle), and ``analysis.fold`` computes every
   table in one pass per group inside the Spark tasks. The earlier design, a chain of windows and self-joins over
   the whole log, needed ~15 shuffles.
5. The tables (one cached DataFrame) are written as Parquet and as plain CSV files; the report's rows are collected
   (bounded).

A small log (:data:`SMALL_BYTES`) is collected after step 2, and steps 3-4 run on the driver with the same code:
each would otherwise be a Spark job of its own, and starting Spark's Python workers costs more than the fold.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from analysis import fold, load, report
from analysis.load import InputError

TABLES = ("groups", "rebalances", "members", "partitions", "ownership")


def table_schema(name: str):
    from pyspark.sql import types as T

    from analysis.schema import spark_type
    return T.StructType([T.StructField(c, spark_type(fold.column_type(name, c)), True)
                         for c in fold.COLUMNS[name]])


def _csv_ready(df):
    """CSV cannot hold arrays or structs: render them as JSON text."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    cols = []
    for f in df.schema.fields:
        if isinstance(f.dataType, (T.ArrayType, T.StructType, T.MapType)):
            cols.append(F.to_json(F.col(f.name)).alias(f.name))
        else:
            cols.append(F.col(f.name))
    return df.select(*cols)


def write_csv(df, path: Path) -> None:
    """One plain CSV file (header, RFC 4180 quoting): Spark writes a single part into a scratch directory, which
    is then moved to ``path``."""
    tmp = path.with_name(path.name + ".parts")
    if tmp.exists():
        shutil.rmtree(tmp)
    (_csv_ready(df).coalesce(1).write.mode("overwrite").option("header", True).option("escape", '"')
     .option("emptyValue", "").csv(str(tmp)))
    parts = sorted(tmp.glob("part-*.csv"))
    if path.is_dir():
        shutil.rmtree(path)
    if parts:
        shutil.move(str(parts[0]), str(path))
    else:   # no rows: Spark writes no part file; a header-only CSV
        path.write_text(",".join(df.columns) + "\n", encoding="utf-8")
    shutil.rmtree(tmp, ignore_errors=True)


def write_parquet(df, path: Path) -> None:
    df.write.mode("overwrite").parquet(str(path))


#: Up to this many bytes of JSON logs, the records are collected once and checked, folded and prepared for the lag
#: chart on the driver (~50,000 events); Spark parses them and writes the tables.
SMALL_BYTES = 16 << 20
#: Up to this many event records the output rows (every table together) are collected once and the report data
#: and CSV files are made on the driver: a small analysis then costs a handful of Spark jobs instead of ~20.
LOCAL_EVENTS = 200_000


def collect_small(tables: "Tables", events: int, limit: int = LOCAL_EVENTS) -> Optional[dict[str, list[dict]]]:
    """Every table's rows as dicts (one Spark job) when the log has at most ``limit`` events; else None, and the
    fold's output is materialized in the cache (one job) for the writes that follow."""
    if tables.local is not None:
        return tables.local
    if events > limit:
        tables.union.count()
        return None
    rows = tables.union.collect()
    out: dict[str, list[dict]] = {name: [] for name in TABLES}
    for r in rows:
        t = r["t"]
        out[t].append(dict(zip(fold.COLUMNS[t], r[t])))
    return out


def _csv_value(v: Any) -> Any:
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return "" if v is None else v


def write_tables(tables: "Tables", out: Path, local: Optional[dict[str, list[dict]]] = None,
                 more: Optional[dict[str, tuple]] = None) -> dict[str, list]:
    """Every table as Parquet (Spark's writer; the writes run concurrently: each is a small job whose fixed
    costs overlap) and as one plain CSV file (from the collected rows when the analysis is small, else by
    Spark). ``more``: other DataFrames to write as Parquet alongside, name -> (DataFrame, path)."""
    import csv
    from concurrent.futures import ThreadPoolExecutor
    written = {name: [str(path)] for name, (_, path) in (more or {}).items()}
    with ThreadPoolExecutor(max_workers=len(TABLES) + len(more or ())) as pool:
        futures = [pool.submit(write_parquet, df, out / f"{name}.parquet") for name, df in tables.as_dict().items()]
        futures += [pool.submit(load.export_parquet, df, path) for df, path in (more or {}).values()]
        for name, df in tables.as_dict().items():
            path = out / f"{name}.csv"
            if local is not None:
                if path.is_dir():
                    shutil.rmtree(path)
                with open(path, "w", newline="", encoding="utf-8") as f:
                    w = csv.writer(f)
                    cols = list(fold.COLUMNS[name])
                    w.writerow(cols)
                    for r in local[name]:
                        w.writerow([_csv_value(r[c]) for c in cols])
            else:
                futures.append(pool.submit(write_csv, df, path))
            written[name] = [str(out / f"{name}.parquet"), str(path)]
        for fut in futures:
            fut.result()
    return written


@dataclass
class Tables:
    groups: Any
    rebalances: Any
    members: Any
    partitions: Any
    ownership: Any
    union: Any = None         # the fold's one output DataFrame (column ``table`` + a struct per table)
    local: Optional[dict[str, list[dict]]] = None     # every row, when the fold ran on the driver

    def as_dict(self) -> dict[str, Any]:
        return {n: getattr(self, n) for n in TABLES}


@dataclass
class Checked:
    """What the input check found: per run its time span and size, and the warnings to show."""
    runs: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    events: int = 0
    bad_lines: int = 0


def file_stats(events) -> list[dict]:
    """One aggregation per file (a Spark job): records, lines that are not, first and last time, commits."""
    from pyspark.sql import functions as F
    ok = F.col("_ok")
    return [r.asDict() for r in
            events.groupBy("_file", "run", "scenario", "seed")
            .agg(F.sum(ok.cast("long")).alias("events"), F.sum((~ok).cast("long")).alias("bad"),
                 F.min(F.when(ok, F.col("timestamp_ms"))).alias("first_ms"),
                 F.max(F.when(ok, F.col("timestamp_ms"))).alias("last_ms"),
                 F.sum((ok & F.col("type").isin(*fold.COMMIT_TYPES)).cast("long")).alias("commits"))
            .collect()]


def file_stats_local(records: list[dict]) -> list[dict]:
    """:func:`file_stats` of collected records (a small log)."""
    out: dict[tuple, dict] = {}
    for r in records:
        k = (r["_file"], r["run"], r["scenario"], r["seed"])
        d = out.setdefault(k, {"_file": k[0], "run": k[1], "scenario": k[2], "seed": k[3], "events": 0, "bad": 0,
                               "first_ms": None, "last_ms": None, "commits": 0})
        if not r["_ok"]:
            d["bad"] += 1
            continue
        d["events"] += 1
        ts = r["ts"]
        d["first_ms"] = ts if d["first_ms"] is None else min(d["first_ms"], ts)
        d["last_ms"] = ts if d["last_ms"] is None else max(d["last_ms"], ts)
        d["commits"] += r["type"] in fold.COMMIT_TYPES
    return list(out.values())


def check_input(rows: list[dict], sources: list[load.RunSource]) -> Checked:
    """Refuse a file without event records, count the lines that are not; per run its time span and size."""
    res = Checked()
    seen_files = set()
    for r in rows:
        seen_files.add(r["_file"])
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


def compute_tables(spark, events, runs_info: dict[str, dict[str, Any]], cache: bool = True) -> Tables:
    """Every table: group-scoped records -> one shuffle by (run, group) + sort -> ``analysis.fold`` per group, in
    the Spark tasks."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    d = F.col("data")
    proj = (events.where(F.col("_ok") & ~F.col("type").isin("OffsetCommit", "OffsetTombstone")
                         & d.group_id.isNotNull() & (d.group_id != ""))
            .select("run", d.group_id.alias("group_id"), F.col("timestamp_ms").alias("ts"),
                    F.col("log_partition").alias("lp"), F.col("log_offset").alias("lo"), "type",
                    d.member_id.alias("member_id"), d.group_instance_id.alias("group_instance_id"),
                    d.client_id.alias("client_id"), d.old_member_id.alias("old_member_id"),
                    d.new_member_id.alias("new_member_id"), d.generation_id.alias("generation_id"),
                    d.reason.alias("reason"), d.initial.alias("initial"), _compact_members(),
                    d.protocol_name.alias("protocol_name")))
    assert tuple(proj.columns) == fold.FIELDS
    n = int(spark.conf.get("spark.sql.shuffle.partitions"))
    ordered = proj.repartition(n, "run", "group_id").sortWithinPartitions("run", "group_id", "ts", "lp", "lo")
    runs = {k: (v["end_ms"], v["scenario"], v["seed"]) for k, v in runs_info.items()}
    bc = spark.sparkContext.broadcast(runs)
    names = list(TABLES)

    keys = [str(i) for i in range(len(fold.FIELDS))]

    def task(lines):
        # the records arrive as JSON text with one-character keys (a string per record reaches Python far faster
        # than a Row of 16 fields, and short keys halve it), in the sorted order; the rows leave as JSON text too,
        # which Spark parses with the declared schema (faster than PySpark's conversion of nested tuples)
        import json as _json

        from analysis.fold import fold_sorted
        rows = (tuple(d.get(k) for k in keys) for d in map(_json.loads, lines))
        dumps = _json.dumps
        for table, row in fold_sorted(rows, bc.value):
            yield dumps({"t": table, table: dict(zip(short[table], row))})

    # the output rows too have short keys ("0", "1", ...), renamed to the columns after Spark has parsed them
    short = {nm: [str(i) for i in range(len(fold.COLUMNS[nm]))] for nm in names}
    schema = T.StructType([T.StructField("t", T.StringType(), False)]
                          + [T.StructField(nm, T.StructType([T.StructField(k, f.dataType, True) for k, f in
                                                             zip(short[nm], table_schema(nm).fields)]), True)
                             for nm in names])
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)   # "toJSON will return a DataFrame in future releases"
        lines = ordered.select(*[F.col(f).alias(k) for f, k in zip(fold.FIELDS, keys)]).toJSON()
    big = spark.read.schema(schema).json(lines.mapPartitions(task))
    if cache:
        big = big.cache()
    return Tables(**{nm: big.where(F.col("t") == nm).select(*[F.col(f"{nm}.{k}").alias(c) for k, c in
                                                              zip(short[nm], fold.COLUMNS[nm])])
                     for nm in names}, union=big)


def _compact_members():
    """``data.members`` with each GroupMetadata member cut to what the fold reads (ids and the assignment; the
    subscription bytes and timeouts stay behind in the JVM): less to ship to the Python tasks."""
    from pyspark.sql import functions as F
    m = "get_json_object(m, '$.{}')"
    compact = (f"transform(data.members, m -> to_json(named_struct('member_id', {m.format('member_id')}, "
               f"'group_instance_id', {m.format('group_instance_id')}, 'client_id', {m.format('client_id')}, "
               f"'assignment', named_struct('hex', {m.format('assignment.hex')}))))")
    return F.when(F.col("type") == "GroupMetadata", F.expr(compact)).otherwise(F.col("data.members")).alias("members")


def tables_from_rows(spark, rows) -> Tables:
    """Tables from the fold's ``(table, row)`` pairs computed on the driver (``Tables.local`` holds them as
    dicts); each table is a local DataFrame (no cache needed: its rows are in the plan)."""
    names = list(TABLES)
    by_table: dict[str, list[tuple]] = {nm: [] for nm in names}
    for table, row in rows:
        by_table[table].append(row)
    local = {nm: [dict(zip(fold.COLUMNS[nm], r)) for r in by_table[nm]] for nm in names}
    frames = {nm: spark.createDataFrame(by_table[nm], table_schema(nm), verifySchema=False) for nm in names}
    return Tables(**frames, local=local)


def collect_records(events) -> list[dict]:
    """Every record of a small log on the driver, with the columns the check, the fold and the lag read (one
    Spark job)."""
    from pyspark.sql import functions as F
    d = F.col("data")
    cols = [F.col("run"), F.col("scenario"), F.col("seed"), F.col("_file"), F.col("_ok"),
            F.col("timestamp_ms").alias("ts"), F.col("log_partition").alias("lp"), F.col("log_offset").alias("lo"),
            F.col("type")] + [d[f].alias(f) for f in fold.FIELDS[6:]] + [
            d.group_id.alias("group_id"), d.topic.alias("topic"), d.partition.alias("partition"),
            d.offset.alias("offset")]
    return [r.asDict() for r in events.select(*cols).collect()]


def fold_local(records: list[dict], runs_info: dict[str, dict[str, Any]]):
    """The fold of collected records (the group-scoped ones, sorted as Spark would sort them)."""
    runs = {k: (v["end_ms"], v["scenario"], v["seed"]) for k, v in runs_info.items()}
    recs = [r for r in records if r["_ok"] and r["type"] not in ("OffsetCommit", "OffsetTombstone")
            and r["group_id"]]
    recs.sort(key=lambda r: (r["run"], r["group_id"], r["ts"], r["lp"], r["lo"]))
    return fold.fold_sorted((tuple(r[f] for f in fold.FIELDS) for r in recs), runs)


#: Above this much input (JSON bytes, Parquet counted 4x) the JVM gets its full JIT (analysis.session).
LONG_JOB_BYTES = 64 << 20


def _input_bytes(sources) -> int:
    return sum(_size(f) * (4 if s.kind == "parquet" else 1) for s in sources for f in s.files)


def _size(path: str) -> int:
    p = Path(path)
    return p.stat().st_size if p.is_file() else sum(f.stat().st_size for f in p.rglob("*") if f.is_file())


def balance_splits(spark, total_bytes: int, per_core: int = 4) -> None:
    """Cut the JSON into about ``per_core`` tasks per core (8-128 MB each). Spark's default, 128 MB splits, gives a
    300 MB log 3 tasks on 2 cores: one core idles through the last third of the parse, the longest step."""
    cores = max(1, spark.sparkContext.defaultParallelism)
    split = min(128 << 20, max(8 << 20, total_bytes // (cores * per_core) + 1))
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(split))


@dataclass
class Analysis:
    summary: dict[str, Any]
    data: dict[str, Any]      # what the report shows (collected rows)
    tables: Tables            # the Spark tables (cached until the session's cache is cleared)


def run_analysis(paths: list[str], out: Optional[str | Path] = None, master: str = "local[*]", spark=None,
                 export_events: bool = True, progress=None) -> Analysis:
    """The whole analysis: checks, tables, collected report data, and with ``out`` the files. Raises
    :class:`analysis.load.InputError` for unusable input."""
    from analysis.progress import Progress
    from analysis.session import get_spark
    progress = progress or Progress("analyze", enabled=False)
    sources = load.discover(paths)
    if spark is None:
        progress.stage("starting Spark", master)
        spark = get_spark(master, long_jobs=_input_bytes(sources) > LONG_JOB_BYTES)
    progress.spark = lambda: spark.sparkContext
    links = load.Links()
    scratch = None
    try:
        json_sources = [s for s in sources if s.kind == "json"]
        pq_paths = [f for s in sources if s.kind == "parquet" for f in s.files]
        out = Path(out) if out is not None else None
        json_bytes = sum(os.path.getsize(f) for s in json_sources for f in s.files)
        small = _input_bytes(sources) <= SMALL_BYTES      # Parquet counts 4x: it is ~1/4 of the JSON
        frames, staged = [], None
        if json_sources:
            n_files = sum(len(s.files) for s in json_sources)
            raw = load.read_json(spark, json_sources, links)
            if small:
                progress.stage("reading the logs", f"{len(json_sources)} run(s), {n_files} file(s)")
                frames.append(raw.cache())      # parsed once; events.parquet is written beside the tables
            else:
                # The JSON is parsed once, into Parquet: every later pass (the check, the fold, the lag, a later
                # analysis) reads only the columns it needs from it -- as fast as a cache, and it is events.parquet
                if out is not None and export_events and not pq_paths:
                    staged = out / "events.parquet"
                    out.mkdir(parents=True, exist_ok=True)
                else:
                    scratch = tempfile.mkdtemp(prefix="kgroup-analyze-")
                    staged = Path(scratch) / "events.parquet"
                progress.stage("parsing the logs into Parquet", f"{len(json_sources)} run(s), {n_files} file(s)")
                balance_splits(spark, json_bytes)
                load.export_parquet(raw, staged)
                frames.append(load.read_parquet_runs(spark, str(staged)))
        frames += [load.read_parquet_runs(spark, p) for p in pq_paths]
        events = frames[0]
        for f in frames[1:]:
            events = events.unionByName(f)
        records = None
        if small:
            # a small log: one job brings every record to the driver, where the check, the fold and the lag's
            # commits are computed (each would be a Spark job of its own, and starting the Python workers costs
            # more than the fold); Spark has parsed it and writes the tables
            progress.stage("checking the logs and computing the metrics")
            records = collect_records(events)
            checked = check_input(file_stats_local(records), sources)
        else:
            progress.stage("checking the logs")
            checked = check_input(file_stats(events), sources)
        for w in checked.warnings:
            progress.note(f"warning: {w}")
        if small:
            tables = tables_from_rows(spark, fold_local(records, checked.runs))
            local = tables.local
        else:
            progress.stage("rebalance metrics per group", f"{checked.events:,} events")
            tables = compute_tables(spark, events, checked.runs)
            local = collect_small(tables, checked.events)   # runs the fold (cached); all rows if they are few
        progress.stage("collecting the report data")
        data = report.collect_for_report(tables, checked.runs, sources, events, local=local, records=records)
        data["warnings"] = checked.warnings
        summary = summarize(data, checked)
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            target = out / "events.parquet"
            export = (export_events and staged != target
                      and str(target.resolve()) not in {str(Path(p).resolve()) for p in pq_paths})
            progress.stage("writing tables", ", ".join(TABLES) + (", events.parquet" if export else ""))
            written = write_tables(tables, out, local, {"events": (events, target)} if export else None)
            if staged == target:
                written["events"] = [str(target)]
            summary["written"] = written
            html_path = out / "report.html"
            html_path.write_text(report.render_html(data), encoding="utf-8")
            summary["report"] = str(html_path)
            (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n",
                                              encoding="utf-8")
        return Analysis(summary, data, tables)
    finally:
        links.close()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


def analyze(paths: list[str], out: Optional[str | Path] = None, master: str = "local[*]", spark=None,
            export_events: bool = True, progress=None) -> dict[str, Any]:
    """``kgroup analyze``: returns the JSON summary (with the written paths when ``out`` is given)."""
    res = run_analysis(paths, out, master, spark, export_events, progress)
    res.tables.groups.sparkSession.catalog.clearCache()
    return res.summary


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
