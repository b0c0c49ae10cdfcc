"""Finding, checking and reading rebalance logs (the docs/events.md records) into one Spark DataFrame.

A LOG given to ``kgroup analyze`` is one *run* (its records share one time line):

* a run directory of ``kgroup run`` (``events.jsonl``; ``summary.json`` names the scenario and seed;
  ``produce.jsonl``, when there, gives the topics' end offsets over time for the lag chart),
* a directory of run directories (``kgroup run --library --out DIR``): each is a run,
* a ``kgroup serve --data-dir`` directory (``__consumer_offsets-<p>.jsonl``: all partitions together are one run;
  ``topics/<topic>-<p>.log``, the record batches, give the end offsets),
* a directory of ``*.jsonl`` files (for instance the part files Spark writes): one run,
* any JSON-lines file of event records,
* the ``events.parquet`` a previous ``kgroup analyze --events`` wrote (or its output directory): the runs it holds,
  read without parsing JSON again,
* a glob of any of these (``'runs/*'``), expanded here when the shell did not.

Checks before Spark starts (:func:`discover`, one-line :class:`InputError`s naming the file): a path that does
not exist, an empty file, a file whose lines hold no event record (garbage, ``{"a": 1}``, a scenario's
``trace.jsonl``). While reading, lines that are not event records are counted per file and reported with the first
one (:func:`bad_line_example`) instead of being dropped silently.

Spark treats file names that start with ``_`` or ``.`` as hidden (``HadoopFSUtils.shouldFilterOutPathName``), even
when they are named explicitly: ``__consumer_offsets-3.jsonl`` would read as empty. Such files are read through
links with visible names in a temporary directory (:class:`Links`).
"""

from __future__ import annotations

import glob as _glob
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Optional

from analysis.schema import SCHEMA_VERSION, event_schema, record_check

OFFSETS_PATTERN = "__consumer_offsets-*.jsonl"
NOT_EVENTS = ("trace.jsonl", "produce.jsonl")
CORRUPT = "_corrupt_record"
#: How much of a file :func:`discover` reads looking for its first event record before leaving the verdict to
#: Spark's full count.
PRESCAN_BYTES = 8 << 20


class InputError(ValueError):
    """A LOG that cannot be analysed; the message is one line and names the file."""


@dataclass(frozen=True)
class RunSource:
    run: str
    files: tuple[str, ...]
    scenario: str = ""
    seed: Optional[int] = None
    kind: str = "json"                 # "json" or "parquet" (events.parquet of a previous analysis)
    produce: Optional[str] = None      # produce.jsonl of a scenario run
    topics_dir: Optional[str] = None   # topics/ of a kgroup serve data directory


_CHECK = None


def is_event(d: object) -> bool:
    """A parsed JSON line that is an event record of the schema version analysis reads: the envelope present and
    typed, ``data`` an object, every declared field of its declared type (``analysis.schema.record_check``: the
    rules of Spark's JSON reader for that schema). String fields holding other JSON values become their text."""
    global _CHECK
    if _CHECK is None:
        _CHECK = record_check()
    return _CHECK(d)


#: What :func:`event_of` returns for a blank line (skipped, not counted).
BLANK = object()


def event_of(line: bytes | str):
    """The event record a JSON line holds; None for a line that is not one, :data:`BLANK` for a blank line."""
    try:
        d = json.loads(line)
    except ValueError:            # UnicodeDecodeError included
        return BLANK if not line.strip() else None
    return d if is_event(d) else None


def _why_not(line: str) -> str:
    """Why a line is not an event record (for the one-line errors)."""
    try:
        d = json.loads(line)
    except ValueError:
        return "not JSON"
    if not isinstance(d, dict):
        return "not a JSON object"
    if "t" in d and "type" in d and "timestamp_ms" not in d:
        return "a scenario trace line (trace.jsonl): analyze the events.jsonl beside it"
    if isinstance(d.get("v"), int) and d.get("v") != SCHEMA_VERSION:
        return f"schema version {d.get('v')} (this kgroup reads version {SCHEMA_VERSION})"
    missing = [k for k in ("v", "type", "timestamp_ms", "log_partition", "log_offset", "data") if k not in d]
    if missing:
        return "no " + ", ".join(missing)
    return "fields of the wrong type"


def _snippet(line: str, n: int = 80) -> str:
    line = line.strip()
    return repr(line if len(line) <= n else line[:n] + "...")


def _classified(f, limit_bytes: int):
    """``(line number, line, is an event record)`` for the non-blank lines of the open file ``f``, up to
    ``limit_bytes`` read."""
    read = 0
    for no, line in enumerate(f, 1):
        read += len(line)
        if read > limit_bytes:
            return
        if not line.strip():
            continue
        try:
            ok = is_event(json.loads(line))
        except ValueError:
            ok = False
        yield no, line, ok


def prescan(path: str) -> None:
    """Refuse a file that is empty or holds no event record in its first ``PRESCAN_BYTES`` (reads until the first
    event record, so a good file costs one line)."""
    p = Path(path)
    if p.stat().st_size == 0:
        raise InputError(f"{path}: empty file: no event records")
    first_bad = None
    try:
        with open(p, encoding="utf-8") as f:
            for _, line, ok in _classified(f, PRESCAN_BYTES):
                if ok:
                    return
                first_bad = first_bad or line
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text file (event logs are JSON lines, docs/events.md)") from None
    if p.stat().st_size > PRESCAN_BYTES:
        return                    # Spark's count decides (a file this long with no record is unusual)
    if first_bad is None:
        raise InputError(f"{path}: only blank lines: no event records")
    raise InputError(f"{path}: no event records (first line {_snippet(first_bad)}: {_why_not(first_bad)})")


def bad_line_example(path: str, limit_bytes: int = 64 << 20) -> Optional[str]:
    """The first line of ``path`` that is not an event record (None if none within ``limit_bytes``)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for no, line, ok in _classified(f, limit_bytes):
                if not ok:
                    return f"line {no}: {_snippet(line)} ({_why_not(line)})"
    except OSError:
        return None
    return None


def _summary_of(d: Path) -> tuple[str, Optional[int]]:
    s = d / "summary.json"
    if s.is_file():
        try:
            data = json.loads(s.read_text(encoding="utf-8"))
            seed = data.get("seed")
            return str(data.get("scenario") or ""), seed if isinstance(seed, int) else None
        except (ValueError, OSError, AttributeError):
            pass
    return "", None


def _is_parquet_dir(p: Path) -> bool:
    return p.is_dir() and (p.name.endswith(".parquet") or (p / "_SUCCESS").exists()) and any(p.glob("*.parquet"))


def _expand(paths: Iterable[str | Path]) -> list[str]:
    out = []
    for raw in paths:
        raw = str(raw)
        if not Path(raw).exists() and any(ch in raw for ch in "*?["):
            matches = sorted(_glob.glob(raw))
            if not matches:
                raise InputError(f"{raw}: no file or directory matches this pattern")
            out += matches
        else:
            out.append(raw)
    return out


def discover(paths: Iterable[str | Path], check: bool = True) -> list[RunSource]:
    """Resolve ``kgroup analyze`` arguments to runs; raises :class:`InputError` (one line, naming the file) for a
    path that does not exist or holds no event records. ``check``: prescan the JSON files."""
    runs: list[RunSource] = []
    used: set[str] = set()

    def add(label: str, files: list[Path], summary_dir: Optional[Path], kind: str = "json",
            produce: Optional[Path] = None, topics: Optional[Path] = None) -> None:
        scenario, seed = _summary_of(summary_dir) if summary_dir else ("", None)
        base, n = label, 2
        while label in used:
            label, n = f"{base}#{n}", n + 1
        used.add(label)
        runs.append(RunSource(label, tuple(str(f.resolve()) for f in files), scenario, seed, kind,
                              str(produce.resolve()) if produce and produce.is_file() else None,
                              str(topics.resolve()) if topics and topics.is_dir() else None))

    for raw in _expand(paths):
        p = Path(raw)
        label = str(raw).rstrip("/") or str(raw)
        if not p.exists():
            raise InputError(f"{raw}: no such file or directory")
        if p.is_dir():
            if (p / "events.parquet").is_dir():
                add(label, [p / "events.parquet"], None, "parquet")
            elif _is_parquet_dir(p):
                add(label, [p], None, "parquet")
            elif (p / "events.jsonl").is_file():
                f = p / "events.jsonl"
                if check:
                    prescan(str(f))
                add(label, [f], p, produce=p / "produce.jsonl")
            elif list(p.glob(OFFSETS_PATTERN)):
                # kgroup serve --data-dir: the coordinator opens a log per partition it leads, most stay empty
                files = [f for f in sorted(p.glob(OFFSETS_PATTERN)) if f.stat().st_size > 0]
                if not files:
                    raise InputError(f"{raw}: every __consumer_offsets-<p>.jsonl log is empty: no event records")
                if check:
                    _prescan_any(raw, files)
                add(label, files, p, topics=p / "topics")
            elif [f for f in p.glob("*.jsonl") if f.name not in NOT_EVENTS]:
                # JSON-lines files of one log (e.g. the part files Spark writes): one run
                files = sorted(f for f in p.glob("*.jsonl") if f.name not in NOT_EVENTS and f.stat().st_size > 0)
                if not files:
                    raise InputError(f"{raw}: every *.jsonl file here is empty: no event records")
                if check:
                    _prescan_any(raw, files)
                add(label, files, p)
            elif (p / "summary.json").is_file() and (p / "groups.parquet").exists():
                raise InputError(f"{raw}: the output of a kgroup analyze without events.parquet (written only with "
                                 "--events): analyze the logs again, with --events to keep the records")
            else:
                subs = sorted(d for d in p.iterdir() if d.is_dir() and (d / "events.jsonl").is_file())
                if not subs:
                    raise InputError(f"{raw}: no events.jsonl, __consumer_offsets-<p>.jsonl, *.jsonl or run "
                                     "directories here")
                for d in subs:
                    if check:
                        prescan(str(d / "events.jsonl"))
                    add(str(d), [d / "events.jsonl"], d, produce=d / "produce.jsonl")
        elif p.suffix == ".parquet":
            add(label, [p], None, "parquet")
        else:
            if check:
                prescan(str(p))
            add(label, [p], p.parent if p.name == "events.jsonl" else None,
                produce=p.parent / "produce.jsonl" if p.name == "events.jsonl" else None)
    return runs


def _prescan_any(raw: str, files: list[Path]) -> None:
    """A directory of partition logs is refused only when none of them holds an event record."""
    errors = []
    for f in files:
        try:
            prescan(str(f))
            return
        except InputError as exc:
            errors.append(str(exc))
    raise InputError(f"{raw}: no event records in any of its {len(files)} log file(s) ({errors[0]})")


class Links:
    """Visible names for files Spark would hide (``_``/``.`` prefixes): symbolic links in a temporary directory,
    removed by :meth:`close`. ``path(f)`` is what to give Spark; ``original`` maps it back."""

    def __init__(self) -> None:
        self.dir: Optional[str] = None
        self.original: dict[str, str] = {}

    def path(self, f: str) -> str:
        name = os.path.basename(f)
        if not name.startswith(("_", ".")):
            self.original[f] = f
            return f
        if self.dir is None:
            self.dir = tempfile.mkdtemp(prefix="kgroup-analyze-")
        link = os.path.join(self.dir, f"{len(self.original):05d}-{name.lstrip('_.')}")
        try:
            os.symlink(f, link)
        except OSError:
            shutil.copyfile(f, link)
        self.original[link] = f
        return link

    def close(self) -> None:
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None


def byte_ranges(files: list[str], target: int) -> list[list[tuple[int, int, int]]]:
    """The files cut into tasks of about ``target`` bytes: each a list of ``(file index, start, end)`` byte ranges
    (small files share a task; a large one is cut). A range holds the lines that *start* in it (:func:`read_range`),
    so every line is read once."""
    tasks: list[list[tuple[int, int, int]]] = []
    cur: list[tuple[int, int, int]] = []
    size = 0
    for i, f in enumerate(files):
        n = os.path.getsize(f)
        start = 0
        while start < n:
            end = min(n, start + max(1, target - size))
            cur.append((i, start, end))
            size += end - start
            start = end
            if size >= target:
                tasks.append(cur)
                cur, size = [], 0
    if cur:
        tasks.append(cur)
    return tasks


def read_range(path: str, start: int, end: int, block: int = 4 << 20) -> Iterator[str | bytes]:
    """The lines of ``path`` that start in ``[start, end)``, without their newline (the line that starts before
    ``start`` and runs into it belongs to the previous range: Hadoop's ``LineRecordReader`` splits files the same
    way). Read in blocks and decoded as UTF-8 a block at a time; a line that is not UTF-8 comes as its bytes."""
    with open(path, "rb") as f:
        if start:
            f.seek(start - 1)
            f.readline()          # the rest of the line that holds byte start-1 (just "\n" if it ends there)
        pos = f.tell()            # where the first line of this range starts
        rest = b""
        while pos < end:
            chunk = f.read(block)
            buf = rest + chunk if rest else chunk
            if not chunk:         # the end of the file: its last line has no newline
                if buf:
                    yield from _decoded(buf)
                return
            limit = end - pos     # the lines that start before `end` end at the first newline from limit - 1 on
            if len(buf) > limit:
                nl = buf.find(b"\n", limit - 1)
                if nl >= 0:
                    yield from _decoded(buf[:nl])
                    return
                rest = buf        # that line runs on past this block
                continue
            cut = buf.rfind(b"\n") + 1
            if cut == 0:          # one line longer than the block
                rest = buf
                continue
            yield from _decoded(buf[:cut - 1])
            pos += cut
            rest = buf[cut:]


def _decoded(buf: bytes) -> Iterator[str | bytes]:
    try:
        yield from buf.decode("utf-8").split("\n")
    except UnicodeDecodeError:    # find the lines that are not UTF-8 (each is a line that is not a record)
        for line in buf.split(b"\n"):
            try:
                yield line.decode("utf-8")
            except UnicodeDecodeError:
                yield line


def _file_col():
    """``_metadata.file_path`` (a URI such as ``file:/tmp/x.jsonl``) as a plain local path."""
    from pyspark.sql import functions as F
    return F.regexp_replace(F.col("_metadata.file_path"), r"^file:(//)?", "")


def ok_col():
    """An event record of the schema version read here (malformed lines and other JSON are not)."""
    from pyspark.sql import functions as F
    return ((F.col("v") == SCHEMA_VERSION) & F.col("type").isNotNull() & F.col("timestamp_ms").isNotNull()
            & F.col("log_partition").isNotNull() & F.col("log_offset").isNotNull() & F.col("data").isNotNull())


#: The columns of the events DataFrame (and of events.parquet): the run, the event schema, the log file a record
#: came from and whether it is an event record (a line that is not is kept, flagged, to be counted).
EVENT_COLUMNS = ("run", "scenario", "seed", "v", "log_partition", "log_offset", "timestamp_ms", "type", "durable",
                 "data", "_file", "_ok")


def read_json(spark, runs: list[RunSource], links: Optional[Links] = None):
    """The JSON-lines runs as one DataFrame: ``run``, ``scenario``, ``seed``, the event schema, ``_file`` (the log
    file a line came from) and ``_ok`` (an event record; false for a line that is not). Explicit schema, never
    inferred."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T
    links = links or Links()
    mapping = []
    files = []
    for r in runs:
        for f in r.files:
            visible = links.path(f)
            files.append(visible)
            mapping.append((visible, f, r.run, r.scenario, r.seed))
    schema = T.StructType(list(event_schema().fields) + [T.StructField(CORRUPT, T.StringType())])
    raw = (spark.read.schema(schema).option("mode", "PERMISSIVE").option("columnNameOfCorruptRecord", CORRUPT)
           .json(files))
    # file -> (original path, run, scenario, seed) as a literal map: no DataFrame to create, no join
    lookup = F.create_map(*[x for visible, *rest in mapping
                            for x in (F.lit(visible), F.struct(*[F.lit(v) for v in rest]))])
    df = raw.withColumn("_m", lookup[_file_col()])
    return df.select(F.col("_m.col2").alias("run"), F.col("_m.col3").alias("scenario"),
                     F.col("_m.col4").cast("long").alias("seed"),
                     *[c for c in raw.columns if c != CORRUPT],
                     F.col("_m.col1").alias("_file"), (ok_col() & F.col(CORRUPT).isNull()).alias("_ok"))


def read_parquet_runs(spark, path: str):
    """An events Parquet (``kgroup analyze``'s events.parquet, or the staging copy of JSON logs) in the shape of
    :func:`read_json`; raises :class:`InputError` when it is not one."""
    from pyspark.sql import functions as F
    try:
        df = spark.read.parquet(path)
    except Exception as exc:  # noqa: BLE001 - Spark's AnalysisException: not Parquet, or empty
        raise InputError(f"{path}: not a readable Parquet dataset ({str(exc).splitlines()[0][:120]})") from None
    missing = [c for c in ("run", "v", "type", "timestamp_ms", "log_partition", "log_offset", "data")
               if c not in df.columns]
    if missing:
        raise InputError(f"{path}: not the events.parquet of kgroup analyze (no column {missing[0]})")
    for c, t in (("scenario", "string"), ("seed", "long"), ("durable", "boolean")):
        if c not in df.columns:
            df = df.withColumn(c, F.lit(None).cast(t))
    file_col = F.col("_file") if "_file" in df.columns else F.lit(path)
    ok = ok_col() & (F.col("_ok") if "_ok" in df.columns else F.lit(True))
    return df.select(*[c for c in EVENT_COLUMNS if c not in ("_file", "_ok")], file_col.alias("_file"),
                     ok.alias("_ok"))


def events_from_lines(spark, lines_rdd, run: str = "run", scenario: str = "", seed: Optional[int] = None):
    """Events from an RDD (or list) of JSON lines, with the same explicit schema (tests)."""
    from pyspark.sql import functions as F
    if isinstance(lines_rdd, list):
        lines_rdd = spark.sparkContext.parallelize(lines_rdd, 1)
    df = spark.read.schema(event_schema()).json(lines_rdd)
    return df.select(F.lit(run).alias("run"), F.lit(scenario).alias("scenario"), F.lit(seed).cast("long").alias("seed"),
                     *df.columns, F.lit("<lines>").alias("_file"), ok_col().alias("_ok"))


def export_parquet(events, path: str | Path, mode: str = "overwrite") -> None:
    """Write events (the event schema plus ``run``, ``scenario``, ``seed``) as Parquet, with Spark's writer."""
    events.write.mode(mode).parquet(str(path))


def export_jsonl(events, path: str | Path, mode: str = "overwrite") -> None:
    """Write events as JSON lines (a directory of part files), readable back with ``event_schema()``."""
    events.write.mode(mode).json(str(path))


def read_parquet(spark, path: str | Path):
    return spark.read.parquet(str(path))
