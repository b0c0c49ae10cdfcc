"""The event record schema v1 (docs/events.md), declared once, exposed as a Spark ``StructType``.

``coordinator/records.py`` writes the records; this module is the reading side's single declaration of them.
Spark never infers a schema from the logs (inference reads the data twice and guesses types differently for
different runs): every read uses ``EVENT_SCHEMA``.

Layout: the envelope (``v``, ``log_partition``, ``log_offset``, ``timestamp_ms``, ``type``, ``durable``) and
``data``, a struct that is the union of the fields of every record type (a field a record does not have is
null). Two fields are polymorphic in the JSON and are read as text, then parsed with an explicit schema:

* ``data.members`` -- member ids (strings) in ``JoinCompleted``, member objects in ``GroupMetadata``. Read as
  ``array<string>``: Spark keeps a nested object as its JSON text, which ``GROUP_MEMBER`` parses.
* ``data.protocols`` -- ``[name, {"hex": ...}]`` pairs: ``array<array<string>>`` (the bytes stay JSON text).

Bytes are ``{"hex": ...}`` objects: ``struct<hex: string>``. Fields a later scenario or consumer record adds
are ignored by this schema until they are declared here (a schema change is one edit, below).

The analysis parses the JSON lines in Python (``analysis.load.event_of``), so this declaration also gives the
check of a parsed line (:func:`record_check`) with the rules Spark's JSON reader applies to this schema in its
PERMISSIVE mode: a field of the wrong type (a string in an ``int`` field, a number out of an ``int``'s range, a
float in a ``long`` field) makes the whole line a corrupt record; a ``string`` field takes any JSON value (a
non-string value becomes its JSON text); unknown fields are ignored. Spark still reads this schema when it
writes ``events.parquet`` and reads it back.
"""

from __future__ import annotations

from typing import Any

#: (name, type) of the envelope, in docs/events.md's order. Types are Spark SQL DDL type strings.
ENVELOPE_FIELDS: tuple[tuple[str, str], ...] = (
    ("v", "int"),
    ("log_partition", "int"),
    ("log_offset", "long"),
    ("timestamp_ms", "long"),
    ("type", "string"),
    ("durable", "boolean"),
)

BYTES = "struct<hex: string>"

#: Fields of one member inside a GroupMetadata value.
GROUP_MEMBER_FIELDS: tuple[tuple[str, str], ...] = (
    ("member_id", "string"),
    ("group_instance_id", "string"),
    ("client_id", "string"),
    ("client_host", "string"),
    ("rebalance_timeout_ms", "int"),
    ("session_timeout_ms", "int"),
    ("subscription", BYTES),
    ("assignment", BYTES),
)

_CG_MEMBER_RECORDS = ("ConsumerGroupMemberMetadata", "ConsumerGroupMemberMetadataTombstone",
                      "ConsumerGroupTargetAssignmentMember", "ConsumerGroupTargetAssignmentMemberTombstone",
                      "ConsumerGroupCurrentMemberAssignment", "ConsumerGroupCurrentMemberAssignmentTombstone")
_TOPIC_PARTITIONS = "struct<topic_id: string, partitions: array<int>>"
_TOPIC_PARTITION_EPOCHS = "struct<topic_id: string, partitions: array<int>, assignment_epochs: array<int>>"

#: The union of the record fields, with the record types that carry each one (docs/events.md).
DATA_FIELDS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("group_id", "string", ("*",)),
    ("member_id", "string", ("MemberJoined", "MemberRejoined", "MemberRemoved", "PendingMemberAdded",
                             "PendingMemberRemoved", "SyncReceived", *_CG_MEMBER_RECORDS)),
    ("group_instance_id", "string", ("MemberJoined", "StaticMemberReplaced", "MemberRemoved")),
    ("client_id", "string", ("MemberJoined", "ConsumerGroupMemberMetadata")),
    ("client_host", "string", ("MemberJoined", "ConsumerGroupMemberMetadata")),
    ("rebalance_timeout_ms", "int", ("MemberJoined", "MemberRejoined", "StaticMemberReplaced",
                                     "ConsumerGroupMemberMetadata")),
    ("session_timeout_ms", "int", ("MemberJoined", "MemberRejoined", "StaticMemberReplaced")),
    ("protocol_type", "string", ("MemberJoined", "GroupMetadata")),
    ("protocols", "array<array<string>>", ("MemberJoined", "MemberRejoined", "StaticMemberReplaced")),
    ("reason", "string", ("MemberJoined", "MemberRejoined", "StaticMemberReplaced", "MemberRemoved",
                          "PendingMemberRemoved", "RebalanceStarted", "GroupTombstone", "OffsetTombstone")),
    ("old_member_id", "string", ("StaticMemberReplaced",)),
    ("new_member_id", "string", ("StaticMemberReplaced",)),
    ("awaiting_join", "boolean", ("StaticMemberReplaced",)),
    ("new_leader", "string", ("MemberRemoved",)),
    ("initial", "boolean", ("RebalanceStarted",)),
    ("generation_id", "int", ("RebalanceStarted", "JoinCompleted", "SyncReceived", "GroupMetadata")),
    ("delay_ms", "int", ("InitialRebalanceExtended",)),
    ("remaining_ms", "int", ("InitialRebalanceExtended",)),
    ("protocol_name", "string", ("JoinCompleted", "GroupMetadata")),
    ("leader", "string", ("JoinCompleted", "GroupMetadata")),
    ("members", "array<string>", ("JoinCompleted", "GroupMetadata")),
    ("current_state_timestamp_ms", "long", ("GroupMetadata",)),
    ("topic", "string", ("OffsetCommit", "OffsetTombstone")),
    ("partition", "int", ("OffsetCommit", "OffsetTombstone", "CoordinatorLoaded")),
    ("offset", "long", ("OffsetCommit",)),
    ("leader_epoch", "int", ("OffsetCommit", "CoordinatorLoaded")),
    ("metadata", "string", ("OffsetCommit",)),
    ("commit_timestamp_ms", "long", ("OffsetCommit",)),
    ("expire_timestamp_ms", "long", ("OffsetCommit",)),
    ("broker_id", "int", ("CoordinatorLoaded",)),
    # KIP-848 consumer groups (Kafka's ConsumerGroup* records)
    ("epoch", "int", ("ConsumerGroupMetadata",)),
    ("metadata_hash", "long", ("ConsumerGroupMetadata",)),
    ("instance_id", "string", ("ConsumerGroupMemberMetadata",)),
    ("rack_id", "string", ("ConsumerGroupMemberMetadata",)),
    ("subscribed_topic_names", "array<string>", ("ConsumerGroupMemberMetadata",)),
    ("subscribed_topic_regex", "string", ("ConsumerGroupMemberMetadata",)),
    ("server_assignor", "string", ("ConsumerGroupMemberMetadata",)),
    ("classic_member_metadata", "struct<session_timeout_ms: int, supported_protocols: array<array<string>>>",
     ("ConsumerGroupMemberMetadata",)),
    ("assignment_epoch", "int", ("ConsumerGroupTargetAssignmentMetadata", "ObservedSnapshot", "ObservedGeneration")),
    ("assignment_timestamp_ms", "long", ("ConsumerGroupTargetAssignmentMetadata",)),
    ("topic_partitions", f"array<{_TOPIC_PARTITIONS}>", ("ConsumerGroupTargetAssignmentMember",)),
    ("member_epoch", "int", ("ConsumerGroupCurrentMemberAssignment",)),
    ("previous_member_epoch", "int", ("ConsumerGroupCurrentMemberAssignment",)),
    ("state", "int", ("ConsumerGroupCurrentMemberAssignment",)),
    ("assigned_partitions", f"array<{_TOPIC_PARTITION_EPOCHS}>", ("ConsumerGroupCurrentMemberAssignment",)),
    ("partitions_pending_revocation", f"array<{_TOPIC_PARTITION_EPOCHS}>",
     ("ConsumerGroupCurrentMemberAssignment",)),
    ("regular_expression", "string", ("ConsumerGroupRegularExpression", "ConsumerGroupRegularExpressionTombstone")),
    ("topics", "array<string>", ("ConsumerGroupRegularExpression",)),
    ("version", "long", ("ConsumerGroupRegularExpression",)),
    ("timestamp_ms", "long", ("ConsumerGroupRegularExpression",)),
    # kgroup watch's observed records (docs/events.md); members, offsets and moves are objects: read as JSON text
    ("previous_poll_ms", "long", ("Observed*",)),
    ("group_state", "string", ("ObservedSnapshot", "ObservedRebalance")),
    ("group_type", "string", ("ObservedSnapshot", "ObservedGeneration")),
    ("coordinator", "int", ("ObservedSnapshot",)),
    ("group_epoch", "int", ("ObservedSnapshot",)),
    ("offsets", "array<string>", ("ObservedSnapshot",)),
    ("moved", "array<string>", ("ObservedGeneration",)),
    ("log_end_offset", "long", ("ObservedCommit",)),
    ("lag", "long", ("ObservedCommit",)),
)

SCHEMA_VERSION = 1

#: Record types analysis understands (the rest are carried along and ignored by the metrics).
RECORD_TYPES = ("GroupMetadata", "GroupTombstone", "OffsetCommit", "OffsetTombstone", "MemberJoined",
                "MemberRejoined", "StaticMemberReplaced", "MemberRemoved", "PendingMemberAdded",
                "PendingMemberRemoved", "RebalanceStarted", "InitialRebalanceExtended", "JoinCompleted",
                "SyncReceived", "CoordinatorLoaded",
                # KIP-848 consumer groups (analysis.fold's consumer-group half reads them: docs/analysis.md)
                "ConsumerGroupMetadata", "ConsumerGroupMetadataTombstone", "ConsumerGroupPartitionMetadataTombstone",
                "ConsumerGroupMemberMetadata", "ConsumerGroupMemberMetadataTombstone",
                "ConsumerGroupTargetAssignmentMetadata", "ConsumerGroupTargetAssignmentMetadataTombstone",
                "ConsumerGroupTargetAssignmentMember", "ConsumerGroupTargetAssignmentMemberTombstone",
                "ConsumerGroupCurrentMemberAssignment", "ConsumerGroupCurrentMemberAssignmentTombstone",
                "ConsumerGroupRegularExpression", "ConsumerGroupRegularExpressionTombstone")

#: ``kgroup watch``'s observed records (not the coordinator's: a watcher's view through Kafka's APIs); the fold
#: reads them as the coordinator records they stand for (``analysis.fold.OBSERVED_AS``).
OBSERVED_RECORD_TYPES = ("ObservedSnapshot", "ObservedRebalance", "ObservedMemberJoined", "ObservedMemberLeft",
                         "ObservedGeneration", "ObservedEmpty", "ObservedGroupGone", "ObservedCommit")


def _struct_ddl(fields) -> str:
    return ", ".join(f"`{name}` {typ}" for name, typ, *_ in fields)


def event_ddl() -> str:
    """The schema as a DDL string (``v int, ..., data struct<...>``), for docs and ``spark.read.schema``."""
    return f"{_struct_ddl(ENVELOPE_FIELDS)}, `data` struct<{_ddl_inner(DATA_FIELDS)}>"


def _ddl_inner(fields) -> str:
    return ", ".join(f"`{name}`: {typ}" for name, typ, *_ in fields)


def group_member_ddl() -> str:
    return f"struct<{_ddl_inner(GROUP_MEMBER_FIELDS)}>"


def spark_type(typ: str):
    """Convert one of the declared type strings (``int``, ``long``, ``string``, ``boolean``, ``array<T>``,
    ``struct<name: T, ...>``) to a Spark ``DataType`` -- without a SparkSession (no JVM needed)."""
    from pyspark.sql import types as T
    typ = typ.strip()
    simple = {"int": T.IntegerType(), "long": T.LongType(), "string": T.StringType(), "boolean": T.BooleanType(),
              "double": T.DoubleType()}
    if typ in simple:
        return simple[typ]
    if typ.startswith("array<") and typ.endswith(">"):
        return T.ArrayType(spark_type(typ[6:-1]), containsNull=True)
    if typ.startswith("struct<") and typ.endswith(">"):
        return T.StructType([T.StructField(name, spark_type(t), nullable=True)
                             for name, t in _split_struct(typ[7:-1])])
    raise ValueError(f"unsupported type in the event schema: {typ!r}")


def _split_struct(body: str) -> list[tuple[str, str]]:
    out, depth, cur = [], 0, ""
    for ch in body + ",":
        if ch == "," and depth == 0:
            name, _, t = cur.partition(":")
            out.append((name.strip().strip("`"), t.strip()))
            cur = ""
            continue
        depth += ch == "<"
        depth -= ch == ">"
        cur += ch
    return out


def _struct(fields):
    from pyspark.sql import types as T
    return T.StructType([T.StructField(name, spark_type(typ), nullable=True) for name, typ, *_ in fields])


def event_schema():
    """The event schema as a ``pyspark.sql.types.StructType``: the envelope plus ``data`` (the union)."""
    from pyspark.sql import types as T
    st = _struct(ENVELOPE_FIELDS)
    return T.StructType(list(st.fields) + [T.StructField("data", _struct(DATA_FIELDS), nullable=True)])


def group_member_schema():
    """One ``GroupMetadata`` member (``data.members`` elements are parsed with this)."""
    return _struct(GROUP_MEMBER_FIELDS)


_RANGES = {"int": (-(1 << 31), (1 << 31) - 1), "long": (-(1 << 63), (1 << 63) - 1)}


def _fits(typ: str):
    """A function telling whether a parsed JSON value can be read as the declared type ``typ`` (Spark's
    ``JacksonParser``: ``int``/``long`` take integer tokens in range, ``boolean`` true/false, arrays and structs
    their JSON counterparts, a ``string`` anything); None where any value fits."""
    typ = typ.strip()
    if typ == "string":
        return None
    if typ in _RANGES:
        lo, hi = _RANGES[typ]
        return lambda v: type(v) is int and lo <= v <= hi
    if typ == "boolean":
        return lambda v: type(v) is bool
    if typ.startswith("array<") and typ.endswith(">"):
        inner = _fits(typ[6:-1])
        if inner is None:
            return lambda v: type(v) is list
        return lambda v: type(v) is list and all(x is None or inner(x) for x in v)
    if typ.startswith("struct<") and typ.endswith(">"):
        fields = [(name, f) for name, t in _split_struct(typ[7:-1]) if (f := _fits(t)) is not None]
        return lambda v: type(v) is dict and all(v.get(k) is None or f(v[k]) for k, f in fields)
    raise ValueError(f"unsupported type in the event schema: {typ!r}")


def record_check():
    """``check(d) -> bool``: whether a parsed JSON line is an event record of schema version ``SCHEMA_VERSION``
    (the envelope present and typed, ``data`` an object, every declared field of ``data`` of its type). A string
    field holding another JSON value is replaced by its JSON text, as Spark reads it."""
    import json
    lo64, hi64 = _RANGES["long"]
    lo32, hi32 = _RANGES["int"]
    # per field: the exact Python type (a dict lookup and a type comparison per field, ~0.6 us a record), and
    # for ints their range, for arrays and structs the check of their content
    spec = {}
    for name, typ, _ in DATA_FIELDS:
        if typ == "string":
            spec[name] = (str, None, None)
        elif typ in _RANGES:
            spec[name] = (int, _RANGES[typ], None)
        elif typ == "boolean":
            spec[name] = (bool, None, None)
        else:
            spec[name] = (list if typ.startswith("array<") else dict, None, _fits(typ))

    def check(d) -> bool:
        if type(d) is not dict:
            return False
        v, typ, data = d.get("v"), d.get("type"), d.get("data")
        ts, lp, lo = d.get("timestamp_ms"), d.get("log_partition"), d.get("log_offset")
        if not (v == SCHEMA_VERSION and type(v) is int and type(typ) is str and type(data) is dict
                and type(ts) is int and type(lp) is int and type(lo) is int
                and lo64 <= ts <= hi64 and lo32 <= lp <= hi32 and lo64 <= lo <= hi64):
            return False
        durable = d.get("durable")
        if durable is not None and type(durable) is not bool:
            return False
        for k, x in data.items():
            s = spec.get(k)
            if s is None or x is None:
                continue
            if type(x) is not s[0]:
                if s[0] is str:
                    data[k] = json.dumps(x, separators=(",", ":"))
                    continue
                return False
            r = s[1]
            if r is not None and not r[0] <= x <= r[1]:
                return False
            if s[2] is not None and not s[2](x):
                return False
        return True
    return check


def field_names() -> dict[str, Any]:
    """The declared names, for checks against coordinator/records.py."""
    return {"envelope": [n for n, _ in ENVELOPE_FIELDS], "data": [n for n, *_ in DATA_FIELDS],
            "member": [n for n, _ in GROUP_MEMBER_FIELDS]}
