"""Input and output: the declared schema against coordinator/records.py, every kind of LOG (run directories, a
`kgroup serve --data-dir`, globs, the events.parquet of an earlier analysis), refusal of unusable input with
one-line errors, counting of lines that are not records, and the files written (Parquet and plain CSV)."""

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


def test_outputs_are_parquet_and_plain_csv(analyzed):
    out = Path(analyzed.out)
    for name in ("groups", "rebalances", "members", "partitions", "ownership"):
        assert (out / f"{name}.parquet").is_dir(), name
        assert (out / f"{name}.csv").is_file(), name          # a plain file, not a Spark part directory
        assert not (out / f"{name}.csv.parts").exists()
    with open(out / "rebalances.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(analyzed.data["rebalances"])
    stable = next(r for r in rows if r["outcome"] == "stable")
    assert isinstance(json.loads(stable["members"]), list)    # arrays become JSON text in CSV
    with open(out / "groups.csv", newline="", encoding="utf-8") as f:
        groups = list(csv.DictReader(f))
    assert {(g["group_id"], g["protocol"], g["assignor"]) for g in groups if g["run"].endswith("/A")} == \
        {("eager", "eager", "range"), ("coop", "cooperative", "cooperative-sticky")}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rebalances"] == len(analyzed.data["rebalances"])
    assert summary["lines_not_records"] == 0 and summary["warnings"] == []


def test_events_parquet_is_analysed_without_json(spark, analyzed, tmp_path):
    """The events.parquet of the first analysis gives the same tables (its run labels included)."""
    from analysis.analyze import run_analysis
    again = run_analysis([str(Path(analyzed.out) / "events.parquet")], tmp_path / "again", spark=spark,
                         export_events=False)
    key = lambda g: (g["run"], g["group_id"])  # noqa: E731
    assert sorted(again.data["groups"], key=key) == sorted(analyzed.data["groups"], key=key)
    # the output directory of an analysis works too
    assert run_analysis([str(analyzed.out)], None, spark=spark).summary["groups"] == len(analyzed.data["groups"])


def test_events_parquet_only_on_request(spark, logs_dir, tmp_path):
    """Without --events no events.parquet is written (it is a second pass over the logs, docs/benchmarks.md), and
    that output directory given back as a LOG is refused in one line that names the option."""
    from analysis.analyze import run_analysis
    from analysis.load import InputError
    from kgroup.cli import build_parser
    out = tmp_path / "out"
    res = run_analysis([str(logs_dir["A"])], out, spark=spark)
    assert "events" not in res.summary["written"] and not (out / "events.parquet").exists()
    assert (out / "groups.parquet").is_dir() and (out / "report.html").is_file()
    with pytest.raises(InputError, match="--events"):
        run_analysis([str(out)], None, spark=spark)
    parse = build_parser().parse_args
    assert parse(["analyze", "x"]).events is False
    assert parse(["analyze", "x", "--events"]).events is True
    assert parse(["analyze", "x", "--no-events"]).events is False


def test_serve_data_dir_is_read(spark, tmp_path):
    """`kgroup serve --data-dir`: __consumer_offsets-<p>.jsonl files (hidden from Spark by their leading '_'),
    most of them empty; wall-clock timestamps give a relative time axis and a wall-clock start."""
    import hand_logs
    from analysis.analyze import run_analysis
    d = hand_logs.write_serve_dir(tmp_path / "data")
    res = run_analysis([str(d)], tmp_path / "out", spark=spark, export_events=False)
    (g,) = res.data["groups"]
    assert (g["group_id"], g["rebalances"], g["members"], g["static_members"]) == ("static", 1, 2, 2)
    assert res.summary["events"] == 11
    (info,) = res.data["runs"].values()
    assert info["wall_clock"] and info["first_ms"] == 1_795_570_900_000
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "wall-clock start 2026-11-25 " in html
    assert ">0 s</text>" in html and "1795570900" not in html


def test_lines_that_are_not_records_are_counted(spark, logs_dir, tmp_path):
    from analysis.analyze import run_analysis
    good = Path(logs_dir["C"], "events.jsonl").read_text(encoding="utf-8").splitlines()
    f = tmp_path / "mixed.jsonl"
    f.write_text("\n".join(good[:3] + ["not json at all", '{"a": 1}'] + good[3:]) + "\n", encoding="utf-8")
    res = run_analysis([str(f)], None, spark=spark)
    assert res.summary["events"] == len(good) and res.summary["lines_not_records"] == 2
    (w,) = res.summary["warnings"]
    assert w.startswith(f"{f}: 2 line(s) are not event records") and "line 4: 'not json at all' (not JSON)" in w


@pytest.mark.parametrize("content,why", [
    (b"", "empty file"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "not a text file"),
    (b'{"a": 1}\n', "no v, type, timestamp_ms"),
    (b'{"t": 0, "type": "start", "consumer": "c-0"}\n', "trace.jsonl"),
    (b"garbage\nmore garbage\n", "not JSON"),
])
def test_unusable_input_is_refused_in_one_line(tmp_path, capsys, content, why):
    from kgroup.cli import main
    f = tmp_path / "log.jsonl"
    f.write_bytes(content)
    assert main(["analyze", str(f), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"kgroup analyze: {f}: ") and why in err, err
    assert not (tmp_path / "out").exists()


def test_discover(tmp_path, logs_dir):
    from analysis.load import InputError, discover
    with pytest.raises(InputError, match="no such file"):
        discover([str(tmp_path / "nope")])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no events.jsonl"):
        discover([str(tmp_path / "empty")])
    serve = tmp_path / "serve"
    serve.mkdir()
    (serve / "__consumer_offsets-0.jsonl").write_text("")
    with pytest.raises(InputError, match="every __consumer_offsets-<p>.jsonl log is empty"):
        discover([str(serve)])
    with pytest.raises(InputError, match="no file or directory matches"):
        discover([str(tmp_path / "x*")])
    # a glob, and a directory of run directories: each run once
    root = Path(logs_dir["A"]).parent
    by_glob = discover([str(root / "[AB]")])
    assert [Path(r.run).name for r in by_glob] == ["A", "B"] and by_glob[0].scenario == "cmp"
    assert {Path(r.run).name for r in discover([str(root)])} >= {"A", "B", "C", "sticky"}


def test_cli_usage_errors(tmp_path, capsys):
    from kgroup.cli import main
    assert main(["analyze", str(tmp_path / "missing")]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main(["sweep", str(tmp_path / "missing.toml"), "--seeds", "2"]) == 2
    lib = Path(__file__).parents[2] / "scenarios" / "library" / "sticky-consumer-leaves.toml"
    assert main(["sweep", str(lib), "--seeds", "1", "--set", "nokey"]) == 2


def test_spark_fold_equals_the_small_log_path(spark, analyzed, logs_dir, tmp_path, monkeypatch):
    """The same logs through the large-log path (the fold in Spark tasks, Spark's CSV writer, bounded collects)
    give the same rows as the small-log path the other tests use."""
    from analysis import analyze as A
    monkeypatch.setattr(A, "SMALL_BYTES", 0)
    monkeypatch.setattr(A, "LOCAL_EVENTS", 0)
    big = A.run_analysis([str(logs_dir[k]) for k in ("A", "B", "C", "sticky")], tmp_path / "big", spark=spark)

    def norm(rows):
        return sorted((tuple(sorted((k, str(v)) for k, v in r.items() if k != "run"))
                       for r in rows), key=str)

    for table in ("groups", "rebalances", "members", "partitions"):
        assert norm(big.data[table]) == norm(analyzed.data[table]), table
    assert norm(big.data["ownership"]) == norm(analyzed.data["ownership"])
    with open(tmp_path / "big" / "groups.csv", newline="", encoding="utf-8") as f:
        assert len(list(csv.DictReader(f))) == len(analyzed.data["groups"])


def test_byte_ranges_read_every_line_once(tmp_path):
    """The tasks' byte ranges (analysis.load.byte_ranges/read_range) give every line of the files exactly once,
    in order, whatever the cut points: lines across a cut, a last line without newline, empty lines, a line
    longer than the read block, and a line that is not UTF-8 (it comes as bytes)."""
    from analysis.load import byte_ranges, read_range
    a = tmp_path / "a.jsonl"
    lines_a = ["x" * (i % 7) + str(i) for i in range(300)] + ["", "y" * 5000, "é" * 3, "last"]
    a.write_bytes("\n".join(lines_a).encode("utf-8"))                   # no final newline
    b = tmp_path / "b.jsonl"
    b.write_bytes(b"one\n\xff\xfe bad\nthree\n")
    expected = {0: lines_a, 1: ["one", b"\xff\xfe bad", "three"]}
    files = [str(a), str(b)]
    for target in (1, 2, 3, 17, 64, 1000, 1 << 20):
        got: dict[int, list] = {0: [], 1: []}
        tasks = byte_ranges(files, target)
        assert sum(e - s for t in tasks for _, s, e in t) == a.stat().st_size + b.stat().st_size
        for task in tasks:
            for i, start, end in task:
                got[i] += list(read_range(files[i], start, end, block=64))
        # a file ending in "\n" has no line after it; Python's split gives a trailing "" that is not a line
        assert got[0] == expected[0], target
        assert [x for x in got[1] if x != ""] == expected[1], target


def test_record_check_agrees_with_sparks_json_reader(spark, tmp_path):
    """The Python check of a parsed line (analysis.schema.record_check) accepts exactly the lines that Spark's
    JSON reader, with the declared schema in PERMISSIVE mode, reads as event records; a non-string value in a
    string field becomes its JSON text in both (Spark keeps its original spacing)."""
    from analysis.load import RunSource, is_event, read_json
    from pyspark.sql import functions as F

    env = '"v": 1, "log_partition": 0, "log_offset": %d, "timestamp_ms": 5, "type": "MemberJoined"'
    datas = ['{"group_id": "g", "generation_id": 3}',
             '{"group_id": "g", "generation_id": "3"}',                  # string in an int field
             '{"group_id": "g", "generation_id": 3000000000}',           # out of an int's range
             '{"group_id": "g", "generation_id": 3.5}',                  # float in an int field
             '{"group_id": 7, "member_id": {"a": [1, 2]}}',              # other JSON in string fields
             '{"group_id": "g", "initial": "yes"}',                      # string in a boolean field
             '{"group_id": "g", "members": ["m1", {"member_id": "m2"}]}',
             '{"group_id": "g", "members": "m1"}',                       # not an array
             '{"group_id": "g", "unknown_field": [1, {"x": 2}]}',
             '{"group_id": "g", "generation_id": null}']
    lines = ['{%s, "data": %s}' % (env % i, d) for i, d in enumerate(datas)]
    lines += ['{"v": 2, "log_partition": 0, "log_offset": 90, "timestamp_ms": 5, "type": "X", "data": {}}',
              '{"v": 1, "log_partition": 0, "log_offset": 91, "timestamp_ms": "5", "type": "X", "data": {}}',
              '{"v": 1, "log_partition": 0, "log_offset": 92, "timestamp_ms": 5, "type": "X", "data": []}',
              '{"v": 1, "log_partition": 0, "log_offset": 93, "timestamp_ms": 5, "type": "X", "data": {}, '
              '"durable": 1}']
    f = tmp_path / "events.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    df = read_json(spark, [RunSource(run="r", kind="json", files=[str(f)])])
    # every column selected: Spark's reader checks only the fields a query reads (column pruning)
    rows = df.select("*", F.col("data.group_id").alias("g"), F.col("data.member_id").alias("m")).collect()
    spark_ok = {r["log_offset"]: (r["g"], r["m"]) for r in rows if r["_ok"]}
    python_ok = {}
    for line in lines:
        d = json.loads(line)
        if is_event(d):
            python_ok[d["log_offset"]] = (d["data"].get("group_id"), d["data"].get("member_id"))
    # Spark keeps a nested value's text as written, Python writes it anew: the same JSON value
    assert json.loads(python_ok.pop(4)[1]) == json.loads(spark_ok.pop(4)[1]) == {"a": [1, 2]}
    assert python_ok == spark_ok
    assert sorted(spark_ok) == [0, 6, 8, 9] and spark_ok[0] == ("g", None)


def test_map_side_keeps_the_commits_of_every_charted_group():
    """A map task (analysis.analyze._keyed) ships offset commits only for groups that can be among the first
    MAX_CHART_GROUPS groups by (run, group) -- those the lag charts show -- whichever groups the task saw."""
    from analysis import analyze as A
    from analysis.report import MAX_CHART_GROUPS

    def rec(g):
        return ("r", ("run", g) + (0,) * 14)

    def commit(g, ts):
        return ("c", ("run", g, ts, "t", 0, ts))

    names = [f"g{i:02d}" for i in range(3 * MAX_CHART_GROUPS)]
    # this task saw records of every other group only, and commits of all of them (and of a group with no records)
    items = [rec(g) for g in names[1::2]] + [commit(g, ts) for g in names + ["a-commits-only"] for ts in (1, 2)]
    shipped = [x for _, (tag, x) in A._keyed(iter(items), {}, 3) if tag == "c"]
    kept = {x[1] for x in shipped}
    # globally the charted groups are names[:MAX_CHART_GROUPS] (the groups table holds groups with records):
    # whichever of them this task saw commits of are shipped, both commits each
    assert set(names[:MAX_CHART_GROUPS]) <= kept
    assert sum(1 for x in shipped if x[1] == names[0]) == 2
    # the task's own MAX_CHART_GROUPS-th group with records bounds what it ships
    last = names[1::2][MAX_CHART_GROUPS - 1]
    assert kept == {g for g in names + ["a-commits-only"] if g <= last}
