"""Schemas of the admin APIs users' test fixtures call: CreateTopics, DeleteTopics, CreatePartitions,
DescribeCluster and DescribeConfigs.

Each mirrors Kafka 4.4's ``clients/src/main/resources/common/message/<Name>{Request,Response}.json`` (field order,
version ranges, nullable versions, defaults, tags); names are snake_case and nested structs get short names
(``Topic``, ``Config``, ...). The ranges are Kafka 4's (KIP-896 removed CreateTopics v0-1, DeleteTopics v0 and
DescribeConfigs v0): each still contains a version every client of docs/protocol.md sends (aiokafka 0.14 speaks
CreateTopics v0-3, DeleteTopics v0-3, CreatePartitions v0-1, DescribeConfigs v0-2). Version notes from the specs
are kept as comments because they explain what each version changed on the wire.
"""

from protocol.api import define_api
from protocol.schema import F

_NO_OPERATIONS = -2147483648  # Integer.MIN_VALUE: "authorized operations not requested"

# CreateTopics: v0-1 removed in Kafka 4.0 (v1 added validate_only); v4 makes partitions/replication factor optional
# (-1: the broker's default, KIP-464); v5 flexible, and the response returns the created topic's configs (KIP-525);
# v6 may answer THROTTLING_QUOTA_EXCEEDED (KIP-599); v7 returns the topic id (KIP-516).
CreateTopics = define_api(19, "CreateTopics", "2-7", "5+", [
    F("topics", "[]Topic", "0+", fields=[
        F("name", "string", "0+"),
        F("num_partitions", "int32", "0+"),
        F("replication_factor", "int16", "0+"),
        F("assignments", "[]Assignment", "0+", fields=[
            F("partition_index", "int32", "0+"),
            F("broker_ids", "[]int32", "0+"),
        ]),
        F("configs", "[]Config", "0+", fields=[
            F("name", "string", "0+"),
            F("value", "string", "0+", nullable="0+"),
        ]),
    ]),
    F("timeout_ms", "int32", "0+", default=60000),
    F("validate_only", "bool", "1+", default=False),
], [
    F("throttle_time_ms", "int32", "2+"),
    F("topics", "[]Topic", "0+", fields=[
        F("name", "string", "0+"),
        F("topic_id", "uuid", "7+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "1+", nullable="0+", default=None),
        F("topic_config_error_code", "int16", "5+", tag=0),
        F("num_partitions", "int32", "5+", default=-1),
        F("replication_factor", "int16", "5+", default=-1),
        F("configs", "[]Config", "5+", nullable="5+", fields=[
            F("name", "string", "5+"),
            F("value", "string", "5+", nullable="5+"),
            F("read_only", "bool", "5+"),
            F("config_source", "int8", "5+", default=-1),
            F("is_sensitive", "bool", "5+"),
        ]),
    ]),
])

# DeleteTopics: v0 removed in Kafka 4.0; v1 throttle time; v4 flexible; v5 error messages (and
# THROTTLING_QUOTA_EXCEEDED); v6 topics by name or id (KIP-516: `topics` replaces `topic_names`).
DeleteTopics = define_api(20, "DeleteTopics", "1-6", "4+", [
    F("topics", "[]Topic", "6+", fields=[
        F("name", "string", "6+", nullable="6+", default=None),
        F("topic_id", "uuid", "6+"),
    ]),
    F("topic_names", "[]string", "0-5"),
    F("timeout_ms", "int32", "0+"),
], [
    F("throttle_time_ms", "int32", "1+"),
    F("responses", "[]Response", "0+", fields=[
        F("name", "string", "0+", nullable="6+"),
        F("topic_id", "uuid", "6+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "5+", nullable="5+", default=None),
    ]),
])

# CreatePartitions: v1 is the same as v0 (throttling after the response); v2 flexible; v3 may answer
# THROTTLING_QUOTA_EXCEEDED (KIP-599).
CreatePartitions = define_api(37, "CreatePartitions", "0-3", "2+", [
    F("topics", "[]Topic", "0+", fields=[
        F("name", "string", "0+"),
        F("count", "int32", "0+"),
        F("assignments", "[]Assignment", "0+", nullable="0+", fields=[
            F("broker_ids", "[]int32", "0+"),
        ]),
    ]),
    F("timeout_ms", "int32", "0+"),
    F("validate_only", "bool", "0+"),
], [
    F("throttle_time_ms", "int32", "0+"),
    F("results", "[]Result", "0+", fields=[
        F("name", "string", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
    ]),
])

# DescribeCluster (KIP-700; flexible from v0): v1 endpoint type (KIP-919: 1 brokers, 2 controllers); v2
# include_fenced_brokers and is_fenced (KIP-1073).
DescribeCluster = define_api(60, "DescribeCluster", "0-2", "0+", [
    F("include_cluster_authorized_operations", "bool", "0+"),
    F("endpoint_type", "int8", "1+", default=1),
    F("include_fenced_brokers", "bool", "2+"),
], [
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("endpoint_type", "int8", "1+", default=1),
    F("cluster_id", "string", "0+"),
    F("controller_id", "int32", "0+", default=-1),
    F("brokers", "[]Broker", "0+", fields=[
        F("broker_id", "int32", "0+"),
        F("host", "string", "0+"),
        F("port", "int32", "0+"),
        F("rack", "string", "0+", nullable="0+", default=None),
        F("is_fenced", "bool", "2+"),
    ]),
    F("cluster_authorized_operations", "int32", "0+", default=_NO_OPERATIONS),
])

# DescribeConfigs: v0 removed in Kafka 4.0; v1 include_synonyms, config_source and synonyms replace is_default;
# v2 is the same as v1; v3 config type and documentation (KIP-569); v4 flexible.
DescribeConfigs = define_api(32, "DescribeConfigs", "1-4", "4+", [
    F("resources", "[]Resource", "0+", fields=[
        F("resource_type", "int8", "0+"),
        F("resource_name", "string", "0+"),
        F("configuration_keys", "[]string", "0+", nullable="0+"),
    ]),
    F("include_synonyms", "bool", "1+", default=False),
    F("include_documentation", "bool", "3+", default=False),
], [
    F("throttle_time_ms", "int32", "0+"),
    F("results", "[]Result", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("resource_type", "int8", "0+"),
        F("resource_name", "string", "0+"),
        F("configs", "[]Config", "0+", fields=[
            F("name", "string", "0+"),
            F("value", "string", "0+", nullable="0+"),
            F("read_only", "bool", "0+"),
            F("config_source", "int8", "1+", default=-1),
            F("is_default", "bool", "0"),
            F("is_sensitive", "bool", "0+"),
            F("synonyms", "[]Synonym", "1+", fields=[
                F("name", "string", "1+"),
                F("value", "string", "1+", nullable="0+"),
                F("source", "int8", "1+"),
            ]),
            F("config_type", "int8", "3+", default=0),
            F("documentation", "string", "3+", nullable="0+"),
        ]),
    ]),
])
