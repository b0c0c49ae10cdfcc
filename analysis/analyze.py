"""``kgroup analyze``: logs -> Spark tables -> Parquet + CSV + report.html (+ a JSON summary)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from analysis import load, metrics, report

TABLES = ("rebalances", "members", "partitions", "assignors")


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


def write_tables(tables: metrics.Tables, out: Path, events=None) -> dict[str, str]:
    """Write every table as Parquet and as a single CSV part (``<out>/<name>.parquet``, ``<out>/<name>.csv``)."""
    written = {}
    for name, df in tables.as_dict().items():
        df.write.mode("overwrite").parquet(str(out / f"{name}.parquet"))
        written[f"{name}.parquet"] = str(out / f"{name}.parquet")
        if name in TABLES:
            _csv_ready(df).coalesce(1).write.mode("overwrite").option("header", True).option("escape", '"').csv(str(out / f"{name}.csv"))
            written[f"{name}.csv"] = str(out / f"{name}.csv")
    if events is not None:
        load.export_parquet(events, out / "events.parquet")
        written["events.parquet"] = str(out / "events.parquet")
    return written


def summarize(data: dict[str, Any]) -> dict[str, Any]:
    """The JSON summary, from Spark aggregates over the whole tables (the collected rows are capped)."""
    t = data["totals"]
    return {
        "runs": data["runs"] if len(data["runs"]) == t["runs"] else t["runs"],
        "groups": t["groups"],
        "rebalances": t["rebalances"],
        "completed": t["completed"] or 0,
        "stw_ms": {"total": t["stw_total"] or 0, "max": t["stw_max"], "mean": t["stw_mean"]},
        "partitions_moved": t["moved"] or 0,
        "assignors": data["assignors"],
    }


@dataclass
class Analysis:
    summary: dict[str, Any]
    data: dict[str, Any]      # what the report shows (collected rows)
    tables: metrics.Tables    # the Spark tables (cached until the session's cache is cleared)


def run_analysis(paths: list[str], out: Optional[str | Path] = None, master: str = "local[*]", spark=None,
                 export_events: bool = True) -> Analysis:
    """Run the whole analysis: tables, collected report data, and with ``out`` the files."""
    from analysis.session import get_spark
    runs = load.discover(paths)
    spark = spark or get_spark(master)
    events = load.read_runs(spark, runs)
    tables = metrics.compute(events)
    data = report.collect_for_report(tables)
    summary = summarize(data)
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        summary["written"] = write_tables(tables, out, events if export_events else None)
        html_path = out / "report.html"
        html_path.write_text(report.render_html(data), encoding="utf-8")
        summary["report"] = str(html_path)
        (out / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n",
                                          encoding="utf-8")
    return Analysis(summary, data, tables)


def analyze(paths: list[str], out: Optional[str | Path] = None, master: str = "local[*]", spark=None,
            export_events: bool = True) -> dict[str, Any]:
    """``kgroup analyze``: returns the JSON summary (with the written paths when ``out`` is given)."""
    res = run_analysis(paths, out, master, spark, export_events)
    res.tables.rebalances.sparkSession.catalog.clearCache()
    return res.summary


def format_summary(s: dict[str, Any]) -> str:
    n_runs = len(s["runs"]) if isinstance(s["runs"], list) else s["runs"]
    lines = [f"{n_runs} run(s), {s['groups']} group(s), {s['rebalances']} rebalance(s) "
             f"({s['completed']} completed), {s['partitions_moved']} partition move(s), stop-the-world "
             f"{s['stw_ms']['total']} ms in total"]
    for a in s["assignors"]:
        lines.append(f"  {a['scenario']} / {a['assignor']}: {a['rebalances']} rebalance(s), "
                     f"stop-the-world mean {a['mean_stw_ms']:.1f} ms p95 {a['p95_stw_ms']:.1f} ms, "
                     f"moved {a['partitions_moved']} ({a['mean_moved_per_rebalance']:.2f}/rebalance), "
                     f"balance {a['mean_balance']:.2f}")
    if s.get("report"):
        lines.append(f"wrote {s['report']} and Parquet/CSV tables in {Path(s['report']).parent}")
    return "\n".join(lines)
