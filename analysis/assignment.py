"""Decode Kafka ``ConsumerProtocolAssignment`` bytes inside Spark, with native SQL expressions (no Python UDF).

The layout (every version 0-3): ``int16 version``, ``int32 topic_count``, per topic ``int16 name_length``,
``name`` (UTF-8), ``int32 partition_count``, ``int32 partition`` x count; then ``user_data`` (ignored). The
records carry bytes as hex, so the parse walks the hex string: ``aggregate`` over the topics carries the read
position, ``transform`` reads each topic's partitions. Running in the JVM keeps the Python workers out of the
analysis (they are only needed for sweeps); ``scenarios.invariants.assignment_partitions`` is the reference the
tests compare against.
"""

from __future__ import annotations

TP_TYPE = "array<struct<topic: string, partition: int>>"


def _int(hexcol: str, pos: str, nchars: int) -> str:
    """The big-endian unsigned integer of ``nchars`` hex digits at 0-based hex offset ``pos``."""
    return f"CAST(conv(substr({hexcol}, ({pos}) + 1, {nchars}), 16, 10) AS INT)"


def partitions_expr(hexcol: str) -> str:
    """A SQL expression giving ``array<struct<topic, partition>>`` for the assignment hex in column ``hexcol``
    (empty for null, empty or truncated bytes)."""
    h = f"coalesce({hexcol}, '')"
    name_len = _int(h, "acc.pos", 4)
    name = f"decode(unhex(substr({h}, acc.pos + 5, 2 * {name_len})), 'UTF-8')"
    count_pos = f"acc.pos + 4 + 2 * {name_len}"
    count = _int(h, count_pos, 8)
    parts = (f"transform(array_repeat(0, greatest(coalesce({count}, 0), 0)), (x, j) -> "
             f"named_struct('topic', {name}, 'partition', {_int(h, f'{count_pos} + 8 + 8 * j', 8)}))")
    step = (f"(acc, i) -> named_struct('pos', {count_pos} + 8 + 8 * coalesce({count}, 0), "
            f"'tps', concat(acc.tps, {parts}))")
    topics = _int(h, "4", 8)
    return (f"CASE WHEN length({h}) < 12 THEN CAST(array() AS {TP_TYPE}) ELSE "
            f"aggregate(array_repeat(0, greatest(coalesce({topics}, 0), 0)), "
            f"named_struct('pos', 12, 'tps', CAST(array() AS {TP_TYPE})), {step}, acc -> acc.tps) END")
