"""The declared schema against coordinator/records.py, the native assignment decoder against the protocol
package, the exports (Parquet and JSON lines written by Spark) and the CLI's output files."""

from __future__ import annotations

import csv
import dataclasses
import json
import typing
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark


def test_schema_declares_every_record_field():
    from analysis import schema
    from coordinator import records as R
    from pyspark.sql import types as T

    declared = {name: typ for name, typ, _ in schema.DATA_FIELDS}
    for rtype in R.RECORD_TYPES.values():
        for f in dataclasses.fields(rtype):
            assert f.name in declared, f"{rtype.TYPE}.{f.name} is not declared in analysis/schema.py"
    assert set(schema.RECORD_TYPES) == set(R.RECORD_TYPES)
    assert [f.name for f in dataclasses.fields(R.MemberMetadata)] == [n for n, _ in schema.GROUP_MEMBER_FIELDS]
    st = schema.event_schema()
    assert isinstance(st, T.StructType)
    assert st.fieldNames() == ["v", "log_partition", "log_offset", "timestamp_ms", "type", "durable", "data"]
    assert st["data"].dataType["members"].dataType == T.ArrayType(T.StringType())
    assert st["data"].dataType["generation_id"].dataType == T.IntegerType()
    assert typing.get_type_hints(R.LogEntry)["timestamp_ms"] is int


def test_native_assignment_decoder(spark):
    from analysis.assignment import partitions_expr
    from protocol.consumer_protocol import ConsumerProtocolAssignment, encode_assignment
    from pyspark.sql import functions as F

    cases = [
        [],
        [("t", [])],
        [("t", [0, 1, 2])],
        [("orders", [5]), ("payments-eu", [0, 7, 300000]), ("x", [2])],
        [("ü-topic", [1])],
    ]
    rows = [(encode_assignment(ConsumerProtocolAssignment(assigned_partitions=c, user_data=b"\x01\x02")).hex(),)
            for c in cases] + [("",), (None,)]
    df = spark.createDataFrame(rows, "h string").select(F.expr(partitions_expr("h")).alias("tps"))
    got = [[(t.topic, t.partition) for t in r.tps] for r in df.collect()]
    want = [[(t, p) for t, ps in c for p in ps] for c in cases] + [[], []]
    assert got == want


def test_outputs_written(analyzed):
    out = Path(analyzed.out)
    for name in ("rebalances", "members", "partitions", "assignors"):
        assert (out / f"{name}.parquet").is_dir() and (out / f"{name}.csv").is_dir()
    csv_files = list((out / "rebalances.csv").glob("part-*.csv"))
    assert len(csv_files) == 1
    with open(csv_files[0], newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(analyzed.data["rebalances"])
    assert json.loads(rows[0]["members"]) is not None    # arrays become JSON text in CSV
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rebalances"] == len(analyzed.data["rebalances"])


def test_events_parquet_and_jsonl_round_trip(spark, analyzed, logs_dir, tmp_path):
    from analysis import load
    from analysis.schema import event_schema

    lines = sum(len(Path(logs_dir[k], "events.jsonl").read_text().splitlines()) for k in ("A", "B", "sticky"))
    ev = load.read_parquet(spark, Path(analyzed.out) / "events.parquet")
    assert ev.count() == lines
    assert ev.schema["data"].dataType == event_schema()["data"].dataType
    load.export_jsonl(ev.where("run like '%/A'").drop("run", "scenario", "seed"), tmp_path / "a.jsonl")
    back = spark.read.schema(event_schema()).json(str(tmp_path / "a.jsonl"))
    original = spark.read.schema(event_schema()).json(str(Path(logs_dir["A"], "events.jsonl")))
    key = ["log_partition", "log_offset"]
    assert [r.asDict(recursive=True) for r in back.orderBy(key).collect()] == \
        [r.asDict(recursive=True) for r in original.orderBy(key).collect()]


def test_discover_rejects_missing_paths(tmp_path):
    from analysis.load import discover
    with pytest.raises(FileNotFoundError):
        discover([str(tmp_path / "nope")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError):
        discover([str(tmp_path / "empty")])


def test_cli_usage_errors(tmp_path, capsys):
    from kgroup.cli import main
    assert main(["analyze", str(tmp_path / "missing")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["sweep", str(tmp_path / "missing.toml"), "--seeds", "2"]) == 2
    lib = Path(__file__).parents[2] / "scenarios" / "library" / "sticky-consumer-leaves.toml"
    assert main(["sweep", str(lib), "--seeds", "1", "--set", "nokey"]) == 2
