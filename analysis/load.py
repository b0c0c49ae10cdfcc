"""Reading rebalance logs into one DataFrame, and exporting events to JSON lines and Parquet (written by Spark).

A *log* given to ``kgroup analyze`` is one run:

* a run directory of ``kgroup run`` (holds ``events.jsonl``, and ``summary.json`` naming the scenario and seed),
* an ``events.jsonl`` file (or any ``*.jsonl`` in the schema),
* a coordinator ``log_dir`` (``__consumer_offsets-<p>.jsonl`` files: all partitions together are one run).

Every row gets ``run`` (a label unique per log), ``scenario`` and ``seed`` (from ``summary.json`` when there is
one; else empty and null). Schema: ``analysis.schema.event_schema()``, never inferred.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from analysis.schema import event_schema


@dataclass(frozen=True)
class RunSource:
    run: str
    files: tuple[str, ...]
    scenario: str = ""
    seed: Optional[int] = None


def discover(paths: Iterable[str | Path]) -> list[RunSource]:
    """Resolve ``kgroup analyze`` arguments to runs; raises ``FileNotFoundError`` naming a bad argument."""
    runs: list[RunSource] = []
    used: set[str] = set()
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            if (p / "events.jsonl").is_file():
                files = [p / "events.jsonl"]
            else:
                files = sorted(p.glob("__consumer_offsets-*.jsonl")) or sorted(p.glob("*.jsonl"))
            summary = p / "summary.json"
        elif p.is_file():
            files = [p]
            summary = p.parent / "summary.json"
        else:
            raise FileNotFoundError(f"{raw}: no such file or directory")
        if not files:
            raise FileNotFoundError(f"{raw}: no events.jsonl or *.jsonl log in this directory")
        scenario, seed = "", None
        if summary.is_file():
            try:
                s = json.loads(summary.read_text(encoding="utf-8"))
                scenario, seed = str(s.get("scenario") or ""), s.get("seed")
            except (ValueError, OSError):
                pass
        label = str(raw).rstrip("/") or str(raw)
        base, n = label, 2
        while label in used:
            label, n = f"{base}#{n}", n + 1
        used.add(label)
        runs.append(RunSource(label, tuple(str(f.resolve()) for f in files), scenario, seed))
    return runs


def _norm_path_col():
    """``_metadata.file_path`` (a URI such as ``file:/tmp/x.jsonl``) as a plain local path."""
    from pyspark.sql import functions as F
    return F.regexp_replace(F.col("_metadata.file_path"), r"^file:(//)?", "")


def read_runs(spark, runs: list[RunSource]):
    """One DataFrame of every run's events with ``run``, ``scenario``, ``seed`` columns (explicit schema)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    files = [f for r in runs for f in r.files]
    mapping = spark.createDataFrame(
        [(f, r.run, r.scenario, r.seed) for r in runs for f in r.files],
        T.StructType([T.StructField("_file", T.StringType()), T.StructField("run", T.StringType()),
                      T.StructField("scenario", T.StringType()), T.StructField("seed", T.LongType())]))
    raw = spark.read.schema(event_schema()).option("mode", "PERMISSIVE").json(files)
    raw = raw.withColumn("_file", _norm_path_col())
    return raw.join(F.broadcast(mapping), "_file").drop("_file")


def events_from_lines(spark, lines_rdd, run: str = "run", scenario: str = "", seed: Optional[int] = None):
    """Events from an RDD (or list) of JSON lines, with the same explicit schema (sweeps, tests)."""
    from pyspark.sql import functions as F
    if isinstance(lines_rdd, list):
        lines_rdd = spark.sparkContext.parallelize(lines_rdd, 1)
    df = spark.read.schema(event_schema()).json(lines_rdd)
    return df.select(F.lit(run).alias("run"), F.lit(scenario).alias("scenario"),
                     F.lit(seed).cast("long").alias("seed"), *df.columns)


def export_parquet(events, path: str | Path, mode: str = "overwrite") -> None:
    """Write events (or any table) as Parquet with Spark's own writer (no pyarrow)."""
    events.write.mode(mode).parquet(str(path))


def export_jsonl(events, path: str | Path, mode: str = "overwrite") -> None:
    """Write events as JSON lines (a directory of part files), readable back with ``event_schema()``."""
    events.write.mode(mode).json(str(path))


def read_parquet(spark, path: str | Path):
    return spark.read.parquet(str(path))
