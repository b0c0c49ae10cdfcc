"""Schemas of the group-coordination APIs (ApiVersions, FindCoordinator, JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete).

Each mirrors Kafka's ``clients/src/main/resources/common/message/<Name>{Request,Response}.json``: field order,
version ranges, nullable versions, defaults and tags are Kafka's; names are snake_case. Version notes from the
specs are kept as comments because they explain what each version changed on the wire.
"""

from protocol.api import define_api
from protocol.schema import F

# ApiVersions: v1 adds throttle_time_ms; v3 is flexible and adds client software name/version (KIP-511) and the
# feature tags (KIP-584); v4 only allows SupportedFeatures.min_version 0 (KAFKA-17011).
ApiVersions = define_api(18, "ApiVersions", "0-4", "3+", [
    F("client_software_name", "string", "3+"),
    F("client_software_version", "string", "3+"),
], [
    F("error_code", "int16", "0+"),
    F("api_keys", "[]ApiVersion", "0+", fields=[
        F("api_key", "int16", "0+"),
        F("min_version", "int16", "0+"),
        F("max_version", "int16", "0+"),
    ]),
    F("throttle_time_ms", "int32", "1+"),
    F("supported_features", "[]SupportedFeatureKey", "3+", tag=0, fields=[
        F("name", "string", "3+"),
        F("min_version", "int16", "3+"),
        F("max_version", "int16", "3+"),
    ]),
    F("finalized_features_epoch", "int64", "3+", tag=1, default=-1),
    F("finalized_features", "[]FinalizedFeatureKey", "3+", tag=2, fields=[
        F("name", "string", "3+"),
        F("max_version_level", "int16", "3+"),
        F("min_version_level", "int16", "3+"),
    ]),
    F("zk_migration_ready", "bool", "3+", tag=3, default=False),
])

# FindCoordinator: v1 adds key_type (0 group, 1 transaction) and error_message; v3 is flexible; v4 batches
# several keys (KIP-699) and moves the answer into `coordinators`.
FindCoordinator = define_api(10, "FindCoordinator", "0-4", "3+", [
    F("key", "string", "0-3"),
    F("key_type", "int8", "1+", default=0),
    F("coordinator_keys", "[]string", "4+"),
], [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16", "0-3"),
    F("error_message", "string", "1-3", nullable="1-3"),
    F("node_id", "int32", "0-3"),
    F("host", "string", "0-3"),
    F("port", "int32", "0-3"),
    F("coordinators", "[]Coordinator", "4+", fields=[
        F("key", "string", "4+"),
        F("node_id", "int32", "4+"),
        F("host", "string", "4+"),
        F("port", "int32", "4+"),
        F("error_code", "int16", "4+"),
        F("error_message", "string", "4+", nullable="4+"),
    ]),
])

# JoinGroup: v1 adds rebalance_timeout_ms; v2 throttle time; v4 needs a second join with the assigned member id
# (KIP-394, MEMBER_ID_REQUIRED); v5 group_instance_id (KIP-345); v6 flexible; v7 protocol_type in the response
# (KIP-559); v8 reason (KIP-800); v9 skip_assignment for a returning static leader (KIP-814).
JoinGroup = define_api(11, "JoinGroup", "0-9", "6+", [
    F("group_id", "string", "0+"),
    F("session_timeout_ms", "int32", "0+"),
    F("rebalance_timeout_ms", "int32", "1+", default=-1),
    F("member_id", "string", "0+"),
    F("group_instance_id", "string", "5+", nullable="5+", default=None),
    F("protocol_type", "string", "0+"),
    F("protocols", "[]Protocol", "0+", fields=[
        F("name", "string", "0+"),
        F("metadata", "bytes", "0+"),
    ]),
    F("reason", "string", "8+", nullable="8+", default=None),
], [
    F("throttle_time_ms", "int32", "2+"),
    F("error_code", "int16", "0+"),
    F("generation_id", "int32", "0+", default=-1),
    F("protocol_type", "string", "7+", nullable="7+", default=None),
    F("protocol_name", "string", "0+", nullable="7+"),
    F("leader", "string", "0+"),
    F("skip_assignment", "bool", "9+", default=False),
    F("member_id", "string", "0+"),
    F("members", "[]Member", "0+", fields=[
        F("member_id", "string", "0+"),
        F("group_instance_id", "string", "5+", nullable="5+", default=None),
        F("metadata", "bytes", "0+"),
    ]),
])

# SyncGroup: v1 throttle time; v3 group_instance_id; v4 flexible; v5 protocol type/name checked (KIP-559).
SyncGroup = define_api(14, "SyncGroup", "0-5", "4+", [
    F("group_id", "string", "0+"),
    F("generation_id", "int32", "0+"),
    F("member_id", "string", "0+"),
    F("group_instance_id", "string", "3+", nullable="3+", default=None),
    F("protocol_type", "string", "5+", nullable="5+", default=None),
    F("protocol_name", "string", "5+", nullable="5+", default=None),
    F("assignments", "[]Assignment", "0+", fields=[
        F("member_id", "string", "0+"),
        F("assignment", "bytes", "0+"),
    ]),
], [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16", "0+"),
    F("protocol_type", "string", "5+", nullable="5+", default=None),
    F("protocol_name", "string", "5+", nullable="5+", default=None),
    F("assignment", "bytes", "0+"),
])

# Heartbeat: v1 throttle time; v3 group_instance_id; v4 flexible.
Heartbeat = define_api(12, "Heartbeat", "0-4", "4+", [
    F("group_id", "string", "0+"),
    F("generation_id", "int32", "0+"),
    F("member_id", "string", "0+"),
    F("group_instance_id", "string", "3+", nullable="3+", default=None),
], [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16", "0+"),
])

# LeaveGroup: v1 throttle time; v3 batches members (KIP-345); v4 flexible; v5 reason (KIP-800).
LeaveGroup = define_api(13, "LeaveGroup", "0-5", "4+", [
    F("group_id", "string", "0+"),
    F("member_id", "string", "0-2"),
    F("members", "[]MemberIdentity", "3+", fields=[
        F("member_id", "string", "3+"),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
        F("reason", "string", "5+", nullable="5+", default=None),
    ]),
], [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16", "0+"),
    F("members", "[]MemberResponse", "3+", fields=[
        F("member_id", "string", "3+"),
        F("group_instance_id", "string", "3+", nullable="3+"),
        F("error_code", "int16", "3+"),
    ]),
])

# OffsetCommit: v0-1 were removed in Kafka 4.0 (KIP-896), so kgroup starts at v2. v2-4 carry retention_time_ms;
# v3 throttle time; v5 drops retention; v6 committed_leader_epoch (KIP-320); v7 group_instance_id; v8 flexible;
# v9 lets the new consumer protocol commit with its member epoch (KIP-848; same wire as v8); v10 names topics by id
# instead of name (KIP-848; Kafka 4.1+, what the Java consumer sends when every topic has a known id).
OffsetCommit = define_api(8, "OffsetCommit", "2-10", "8+", [
    F("group_id", "string", "0+"),
    F("generation_id_or_member_epoch", "int32", "1+", default=-1),
    F("member_id", "string", "1+"),
    F("group_instance_id", "string", "7+", nullable="7+", default=None),
    F("retention_time_ms", "int64", "2-4", default=-1),
    F("topics", "[]Topic", "0+", fields=[
        F("name", "string", "0-9"),
        F("topic_id", "uuid", "10+"),
        F("partitions", "[]Partition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("committed_offset", "int64", "0+"),
            F("committed_leader_epoch", "int32", "6+", default=-1),
            F("commit_timestamp", "int64", "1", default=-1),
            F("committed_metadata", "string", "0+", nullable="0+"),
        ]),
    ]),
], [
    F("throttle_time_ms", "int32", "3+"),
    F("topics", "[]Topic", "0+", fields=[
        F("name", "string", "0-9"),
        F("topic_id", "uuid", "10+"),
        F("partitions", "[]Partition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
        ]),
    ]),
])

# OffsetFetch: v0 was removed in Kafka 4.0, kgroup starts at v1. v2 allows null topics (all partitions) and a
# top-level error code; v3 throttle time; v5 committed_leader_epoch; v6 flexible; v7 require_stable (KIP-447);
# v8 batches groups (KIP-709); v9 member id/epoch for the new consumer protocol (KIP-848); v10 names topics by id
# instead of name (KIP-848; Kafka 4.1+).
OffsetFetch = define_api(9, "OffsetFetch", "1-10", "6+", [
    F("group_id", "string", "0-7"),
    F("topics", "[]Topic", "0-7", nullable="2-7", fields=[
        F("name", "string", "0-7"),
        F("partition_indexes", "[]int32", "0-7"),
    ]),
    F("groups", "[]Group", "8+", fields=[
        F("group_id", "string", "8+"),
        F("member_id", "string", "9+", nullable="9+", default=None),
        F("member_epoch", "int32", "9+", default=-1),
        F("topics", "[]Topic", "8+", nullable="8+", fields=[
            F("name", "string", "8-9"),
            F("topic_id", "uuid", "10+"),
            F("partition_indexes", "[]int32", "8+"),
        ]),
    ]),
    F("require_stable", "bool", "7+", default=False),
], [
    F("throttle_time_ms", "int32", "3+"),
    F("topics", "[]Topic", "0-7", fields=[
        F("name", "string", "0-7"),
        F("partitions", "[]Partition", "0-7", fields=[
            F("partition_index", "int32", "0-7"),
            F("committed_offset", "int64", "0-7"),
            F("committed_leader_epoch", "int32", "5-7", default=-1),
            F("metadata", "string", "0-7", nullable="0-7"),
            F("error_code", "int16", "0-7"),
        ]),
    ]),
    F("error_code", "int16", "2-7", default=0),
    F("groups", "[]Group", "8+", fields=[
        F("group_id", "string", "8+"),
        F("topics", "[]Topic", "8+", fields=[
            F("name", "string", "8-9"),
            F("topic_id", "uuid", "10+"),
            F("partitions", "[]Partition", "8+", fields=[
                F("partition_index", "int32", "8+"),
                F("committed_offset", "int64", "8+"),
                F("committed_leader_epoch", "int32", "8+", default=-1),
                F("metadata", "string", "8+", nullable="8+"),
                F("error_code", "int16", "8+"),
            ]),
        ]),
        F("error_code", "int16", "8+", default=0),
    ]),
])

# DescribeGroups: v1 throttle time; v3 authorized operations (KIP-430); v4 group_instance_id; v5 flexible; v6 answers
# an unknown group (or one that is not a classic group) with GROUP_ID_NOT_FOUND and an error message (KIP-1043).
DescribeGroups = define_api(15, "DescribeGroups", "0-6", "5+", [
    F("groups", "[]string", "0+"),
    F("include_authorized_operations", "bool", "3+"),
], [
    F("throttle_time_ms", "int32", "1+"),
    F("groups", "[]DescribedGroup", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "6+", nullable="6+", default=None),
        F("group_id", "string", "0+"),
        F("group_state", "string", "0+"),
        F("protocol_type", "string", "0+"),
        F("protocol_data", "string", "0+"),
        F("members", "[]Member", "0+", fields=[
            F("member_id", "string", "0+"),
            F("group_instance_id", "string", "4+", nullable="4+", default=None),
            F("client_id", "string", "0+"),
            F("client_host", "string", "0+"),
            F("member_metadata", "bytes", "0+"),
            F("member_assignment", "bytes", "0+"),
        ]),
        F("authorized_operations", "int32", "3+", default=-2147483648),
    ]),
])

# ListGroups: v1 throttle time; v3 flexible; v4 states filter (KIP-518); v5 types filter (KIP-848).
ListGroups = define_api(16, "ListGroups", "0-5", "3+", [
    F("states_filter", "[]string", "4+"),
    F("types_filter", "[]string", "5+"),
], [
    F("throttle_time_ms", "int32", "1+"),
    F("error_code", "int16", "0+"),
    F("groups", "[]ListedGroup", "0+", fields=[
        F("group_id", "string", "0+"),
        F("protocol_type", "string", "0+"),
        F("group_state", "string", "4+"),
        F("group_type", "string", "5+"),
    ]),
])

# DeleteGroups: v1 same as v0; v2 flexible.
DeleteGroups = define_api(42, "DeleteGroups", "0-2", "2+", [
    F("groups_names", "[]string", "0+"),
], [
    F("throttle_time_ms", "int32", "0+"),
    F("results", "[]DeletableGroupResult", "0+", fields=[
        F("group_id", "string", "0+"),
        F("error_code", "int16", "0+"),
    ]),
])

# OffsetDelete (KIP-496): only v0, not flexible.
OffsetDelete = define_api(47, "OffsetDelete", "0", "none", [
    F("group_id", "string", "0+"),
    F("topics", "[]Topic", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]Partition", "0+", fields=[
            F("partition_index", "int32", "0+"),
        ]),
    ]),
], [
    F("error_code", "int16", "0+"),
    F("throttle_time_ms", "int32", "0+"),
    F("topics", "[]Topic", "0+", fields=[
        F("name", "string", "0+"),
        F("partitions", "[]Partition", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
        ]),
    ]),
])
