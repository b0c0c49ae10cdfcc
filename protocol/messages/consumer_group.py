"""Schemas of KIP-848's consumer group APIs: ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69).

Each mirrors Kafka 4.4's ``clients/src/main/resources/common/message/ConsumerGroup{Heartbeat,Describe}
{Request,Response}.json`` (field order, version ranges, nullability, defaults; both APIs are flexible from v0).
Version notes from the specs are kept as comments because they explain what each version changed.

Topic ids are UUIDs on the wire (``uuid``); kgroup keeps them as :class:`uuid.UUID` in messages and prints them
as Kafka does (``Uuid.toString``: URL-safe base64 without padding).
"""

from protocol.api import define_api
from protocol.schema import F

_NO_OPERATIONS = -2147483648  # Integer.MIN_VALUE: "authorized operations not requested"


def _topic_partitions(name_field: bool) -> list:
    fields = [F("topic_id", "uuid", "0+")]
    if name_field:
        fields.append(F("topic_name", "string", "0+"))
    fields.append(F("partitions", "[]int32", "0+"))
    return fields


# ConsumerGroupHeartbeat: v1 adds SubscribedTopicRegex (KIP-848) and requires the consumer to generate its own
# member id (KIP-1082: a v1 request joining with epoch 0 carries the client's UUID; v0 members get one from the
# coordinator in the response). Nullable fields are null when they did not change since the last heartbeat.
ConsumerGroupHeartbeat = define_api(68, "ConsumerGroupHeartbeat", "0-1", "0+", [
    F("group_id", "string", "0+"),
    F("member_id", "string", "0+"),
    F("member_epoch", "int32", "0+"),
    F("instance_id", "string", "0+", nullable="0+", default=None),
    F("rack_id", "string", "0+", nullable="0+", default=None),
    F("rebalance_timeout_ms", "int32", "0+", default=-1),
    F("subscribed_topic_names", "[]string", "0+", nullable="0+", default=None),
    F("subscribed_topic_regex", "string", "1+", nullable="1+", default=None),
    F("server_assignor", "string", "0+", nullable="0+", default=None),
    F("topic_partitions", "[]TopicPartitions", "0+", nullable="0+", default=None, fields=_topic_partitions(False)),
], [
    F("throttle_time_ms", "int32", "0+"),
    F("error_code", "int16", "0+"),
    F("error_message", "string", "0+", nullable="0+", default=None),
    F("member_id", "string", "0+", nullable="0+", default=None),
    F("member_epoch", "int32", "0+"),
    F("heartbeat_interval_ms", "int32", "0+"),
    F("assignment", "Assignment", "0+", nullable="0+", default=None, fields=[
        F("topic_partitions", "[]TopicPartitions", "0+", fields=_topic_partitions(False)),
    ]),
])

# ConsumerGroupDescribe: v1 adds the member type (KIP-1099: -1 unknown, 0 classic member, 1 consumer member).
ConsumerGroupDescribe = define_api(69, "ConsumerGroupDescribe", "0-1", "0+", [
    F("group_ids", "[]string", "0+"),
    F("include_authorized_operations", "bool", "0+"),
], [
    F("throttle_time_ms", "int32", "0+"),
    F("groups", "[]DescribedGroup", "0+", fields=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+", default=None),
        F("group_id", "string", "0+"),
        F("group_state", "string", "0+"),
        F("group_epoch", "int32", "0+"),
        F("assignment_epoch", "int32", "0+"),
        F("assignor_name", "string", "0+"),
        F("members", "[]Member", "0+", fields=[
            F("member_id", "string", "0+"),
            F("instance_id", "string", "0+", nullable="0+", default=None),
            F("rack_id", "string", "0+", nullable="0+", default=None),
            F("member_epoch", "int32", "0+"),
            F("client_id", "string", "0+"),
            F("client_host", "string", "0+"),
            F("subscribed_topic_names", "[]string", "0+"),
            F("subscribed_topic_regex", "string", "0+", nullable="0+", default=None),
            F("assignment", "Assignment", "0+", fields=[
                F("topic_partitions", "[]TopicPartitions", "0+", fields=_topic_partitions(True)),
            ]),
            F("target_assignment", "Assignment", "0+", fields=[
                F("topic_partitions", "[]TopicPartitions", "0+", fields=_topic_partitions(True)),
            ]),
            F("member_type", "int8", "1+", default=-1),
        ]),
        F("authorized_operations", "int32", "0+", default=_NO_OPERATIONS),
    ]),
])
