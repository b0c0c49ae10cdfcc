"""Schemas of the data-path APIs (Metadata, ListOffsets, Fetch, Produce, InitProducerId, OffsetForLeaderEpoch).

kgroup is a coordination emulator, but real clients will not join a group before they have seen Metadata, and a
consumer fetches, lists offsets and (for the demo's producers) produces; so these APIs are spoken in full for the
versions advertised.

Each mirrors Kafka's ``clients/src/main/resources/common/message/<Name>{Request,Response}.json``: field order,
version ranges, nullable versions, defaults and tags are Kafka's; names are snake_case and nested structs get short
names (``Topic``, ``Partition``). Fields that only exist above the range kgroup implements (Fetch's topic ids from
v13, Produce's leader hints from v10, ...) are left out. Version notes from the specs are kept as comments because
they explain what each version changed on the wire.
"""

from protocol.api import define_api
from protocol.schema import F

_NO_OPERATIONS = -2147483648  # Integer.MIN_VALUE: "authorized operations not requested"

# Metadata: v0 asks for all topics with an empty array, v1+ with a null one; v1 rack/controller/is_internal; v2
# cluster id; v3 throttle time; v4 allow_auto_topic_creation; v5 offline replicas; v7 leader epoch; v8 authorized
# operations; v9 flexible; v10 topic ids (not implemented by brokers for lookups until v12); v11 drops the cluster
# authorized operations (KIP-700, now in DescribeCluster); v12 lookups by topic id (name nullable in the
# response); v13 a top-level error code (KIP-1102, e.g. REBOOTSTRAP_REQUIRED).
Metadata = define_api(3, "Metadata", "0-13", "9+", [
    F("topics", "[]Topic", "0+", nullable="1+", fields=[
        F("topic_id", "uuid", "10+"),
        F("name", "string", "0+", nullable="10+"),
    ]),
    F("allow_auto_topic_creation", "bool", "4+", default=True),
    F("include_cluster_authorized_operations", "bool", "8-10"),
    F("include_topic_authorized_operations", "bool", "8+"),
], [
    F("throttle_time_ms", "int32", "3+"),
    F("brokers", "[]Broker", "0+", fields=[
        F("node_id", "int32", "0+"),
        F("host", "string", "0+"),
        F("port", "int32", "0+"),
        F("rack", "string", "1+", nullable="1+", default=None),
    ]),
    F("cluster_id", "string", "2+", nullable="2+", default=None),
    F("controller_id", "int32", "1+", default=-1),
    F("topics", "[]Topic", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("name", "string", "0+", nullable="12+"),
        F("topic_id", "uuid", "10+"),
        F("is_internal", "bool", "1+", default=False),
        F("partitions", "[]Partition", "0+", fields=[
            F("error_code", "int16", "0+"),
            F("partition_index", "int32", "0+"),
            F("leader_id", "int32", "0+"),
            F("leader_epoch", "int32", "7+", default=-1),
            F("replica_nodes", "[]int32", "0+"),
            F("isr_nodes", "[]int32", "0+"),
            F("offline_replicas", "[]int32", "5+"),
        ]),
        F("topic_authorized_operations", "int32", "8+", default=_NO_OPERATIONS),
    ]),
    F("cluster_authorized_operations", "int32", "8-10", default=_NO_OPERATIONS),
    F("error_code", "int16", "13+"),
])

# ListOffsets: v0 was removed in Kafka 4.0 but aiokafka and old clients still use it, so kgroup keeps it. v1
# returns a single offset plus its timestamp instead of v0's offsets array (and drops max_num_offsets); v2
# isolation level and throttle time; v4 current/returned leader epoch (KIP-320); v5 OFFSET_NOT_AVAILABLE; v6
# flexible; v7 the MAX_TIMESTAMP (-3) query (KIP-734).
ListOffsets = define_api(2, "ListOffsets", "0-7", "6+", [
    F("replica_id", "int32", "0+"),
    F("isolation_level", "int8", "2+"),
    F("topics", "[]Topic", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]Partition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("current_leader_epoch", "int32", "4+", default=-1),
            F("timestamp", "int64", "0+"),
            F("max_num_offsets", "int32", "0", default=1),
        ]),
    ]),
], [
    F("throttle_time_ms", "int32", "2+"),
    F("topics", "[]Topic", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]Partition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("old_style_offsets", "[]int64", "0"),
            F("timestamp", "int64", "1+", default=-1),
            F("offset", "int64", "1+", default=-1),
            F("leader_epoch", "int32", "4+", default=-1),
        ]),
    ]),
])

# Fetch: v0-3 were removed in Kafka 4.0; v4 (isolation level, aborted transactions, record batch v2) is the
# baseline. v5 log start offset; v7 incremental fetch sessions (KIP-227); v9 current leader epoch (KIP-320); v10
# zstd; v11 rack id and preferred read replica (KIP-392); v12 flexible, with last_fetched_epoch and the tagged
# diverging_epoch/current_leader/snapshot_id (KIP-595) and the tagged cluster_id. Topic names become topic ids in
# v13 and ReplicaState (tag 1) arrives in v15, both above kgroup's range.
Fetch = define_api(1, "Fetch", "4-12", "12+", [
    F("cluster_id", "string", "12+", nullable="12+", default=None, tag=0),
    F("replica_id", "int32", "0-14", default=-1),
    F("max_wait_ms", "int32", "0+"),
    F("min_bytes", "int32", "0+"),
    F("max_bytes", "int32", "3+", default=0x7FFFFFFF),
    F("isolation_level", "int8", "4+", default=0),
    F("session_id", "int32", "7+", default=0),
    F("session_epoch", "int32", "7+", default=-1),
    F("topics", "[]Topic", "0+", fields=[
        F("topic", "string", "0-12"),
        F("partitions", "[]Partition", "0+", fields=[
            F("partition", "int32", "0+"),
            F("current_leader_epoch", "int32", "9+", default=-1),
            F("fetch_offset", "int64", "0+"),
            F("last_fetched_epoch", "int32", "12+", default=-1),
            F("log_start_offset", "int64", "5+", default=-1),
            F("partition_max_bytes", "int32", "0+"),
        ]),
    ]),
    F("forgotten_topics_data", "[]ForgottenTopic", "7+", fields=[
        F("topic", "string", "7-12"),
        F("partitions", "[]int32", "7+"),
    ]),
    F("rack_id", "string", "11+", default=""),
], [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16", "7+"),
    F("session_id", "int32", "7+", default=0),
    F("responses", "[]Topic", "0+", fields=[
        F("topic", "string", "0-12"),
        F("partitions", "[]Partition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("high_watermark", "int64", "0+"),
            F("last_stable_offset", "int64", "4+", default=-1),
            F("log_start_offset", "int64", "5+", default=-1),
            F("diverging_epoch", "EpochEndOffset", "12+", tag=0, fields=[
                F("epoch", "int32", "12+", default=-1),
                F("end_offset", "int64", "12+", default=-1),
            ]),
            F("current_leader", "LeaderIdAndEpoch", "12+", tag=1, fields=[
                F("leader_id", "int32", "12+", default=-1),
                F("leader_epoch", "int32", "12+", default=-1),
            ]),
            F("snapshot_id", "SnapshotId", "12+", tag=2, fields=[
                F("end_offset", "int64", "0+", default=-1),
                F("epoch", "int32", "0+", default=-1),
            ]),
            F("aborted_transactions", "[]AbortedTransaction", "4+", nullable="4+", fields=[
                F("producer_id", "int64", "4+"),
                F("first_offset", "int64", "4+"),
            ]),
            F("preferred_read_replica", "int32", "11+", default=-1),
            F("records", "records", "0+", nullable="0+"),
        ]),
    ]),
])

# Produce: v0-2 were removed in Kafka 4.0; v3 (transactional id, record batch v2) is the baseline. v4
# KAFKA_STORAGE_ERROR; v5 log start offset in the response; v7 zstd; v8 per-record errors (KIP-467); v9 flexible.
# v10 adds the tagged leader hints of KIP-951 (current_leader, node_endpoints), above kgroup's range.
Produce = define_api(0, "Produce", "3-9", "9+", [
    F("transactional_id", "string", "3+", nullable="3+", default=None),
    F("acks", "int16", "0+"),
    F("timeout_ms", "int32", "0+"),
    F("topic_data", "[]Topic", "0+", fields=[
        F("name", "string", "0+"),
        F("partition_data", "[]Partition", "0+", fields=[
            F("index", "int32", "0+"),
            F("records", "records", "0+", nullable="0+"),
        ]),
    ]),
], [
    F("responses", "[]Topic", "0+", fields=[
        F("name", "string", "0+"),
        F("partition_responses", "[]Partition", "0+", fields=[
            F("index", "int32", "0+"),
            F("error_code", "int16", "0+"),
            F("base_offset", "int64", "0+"),
            F("log_append_time_ms", "int64", "2+", default=-1),
            F("log_start_offset", "int64", "5+", default=-1),
            F("record_errors", "[]RecordError", "8+", fields=[
                F("batch_index", "int32", "8+"),
                F("batch_index_error_message", "string", "8+", nullable="8+", default=None),
            ]),
            F("error_message", "string", "8+", nullable="8+", default=None),
        ]),
    ]),
    F("throttle_time_ms", "int32", "1+", default=0),
])

# InitProducerId: v1 same as v0 (responses before throttling); v2 flexible; v3 producer id/epoch so a producer can
# resume after INVALID_PRODUCER_EPOCH (KIP-360); v4 PRODUCER_FENCED. kafka-python's idempotent producer sends v4
# with a null transactional id.
InitProducerId = define_api(22, "InitProducerId", "0-4", "2+", [
    F("transactional_id", "string", "0+", nullable="0+"),
    F("transaction_timeout_ms", "int32", "0+"),
    F("producer_id", "int64", "3+", default=-1),
    F("producer_epoch", "int16", "3+", default=-1),
], [
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("producer_id", "int64", "0+", default=-1),
    F("producer_epoch", "int16", "0+"),
])

# OffsetForLeaderEpoch: v0-1 were removed in Kafka 4.0; v2 current leader epoch (KIP-320) and throttle time; v3
# replica id; v4 flexible. Consumers use it to validate their position after a leader change (KIP-320):
# kafka-python 3 retries it forever when it is not advertised, librdkafka skips the validation.
OffsetForLeaderEpoch = define_api(23, "OffsetForLeaderEpoch", "2-4", "4+", [
    F("replica_id", "int32", "3+", default=-2),
    F("topics", "[]Topic", "0+", fields=[
        F("topic", "string", "0+"),
        F("partitions", "[]Partition", "0+", fields=[
            F("partition", "int32", "0+"),
            F("current_leader_epoch", "int32", "2+", default=-1),
            F("leader_epoch", "int32", "0+"),
        ]),
    ]),
], [
    F("throttle_time_ms", "int32", "2+"),
    F("topics", "[]Topic", "0+", fields=[
        F("topic", "string", "0+"),
        F("partitions", "[]Partition", "0+", fields=[
            F("error_code", "int16", "0+"),
            F("partition", "int32", "0+"),
            F("leader_epoch", "int32", "1+", default=-1),
            F("end_offset", "int64", "0+", default=-1),
        ]),
    ]),
])
