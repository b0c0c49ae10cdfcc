"""Kafka error codes (sans-IO).

Mirrors ``org.apache.kafka.common.protocol.Errors`` (Apache Kafka 4.1): every code the broker can put in a
response, under Kafka's own enum name, with

* ``.retriable`` -- true exactly where Kafka's exception class for that code extends
  ``org.apache.kafka.common.errors.RetriableException`` (directly, or through ``RefreshRetriableException`` /
  ``InvalidMetadataException``).  That is the "Retriable" column of Kafka's generated protocol error table;
* ``.message`` -- Kafka's default exception message for the code (``Errors.message()``); ``NONE`` has none
  (Java returns ``null``; we return ``""``);
* :meth:`ErrorCode.from_code` -- ``Errors.forCode(short)``: an unknown number maps to ``UNKNOWN_SERVER_ERROR``
  without raising (Kafka logs a warning and does the same).

Error codes are protocol: numbers never change, names may (Kafka renamed UNKNOWN to UNKNOWN_SERVER_ERROR,
NOT_LEADER_FOR_PARTITION to NOT_LEADER_OR_FOLLOWER, ...); we use the current Kafka names.

Retriable set (Kafka 4.1 class hierarchy):
  RetriableException direct: CORRUPT_MESSAGE, REQUEST_TIMED_OUT (TimeoutException), COORDINATOR_LOAD_IN_PROGRESS,
  NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND, NOT_CONTROLLER, CONCURRENT_TRANSACTIONS,
  FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH, UNKNOWN_LEADER_EPOCH, OFFSET_NOT_AVAILABLE,
  UNSTABLE_OFFSET_COMMIT, THROTTLING_QUOTA_EXCEEDED, FETCH_SESSION_TOPIC_ID_ERROR, SHARE_SESSION_NOT_FOUND,
  INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED;
  RefreshRetriableException (KIP-1050): COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR;
  InvalidMetadataException: UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER,
  REPLICA_NOT_AVAILABLE, NETWORK_EXCEPTION, KAFKA_STORAGE_ERROR, LISTENER_NOT_FOUND, FENCED_LEADER_EPOCH,
  PREFERRED_LEADER_NOT_AVAILABLE, ELIGIBLE_LEADERS_NOT_AVAILABLE, ELECTION_NOT_NEEDED, UNKNOWN_TOPIC_ID,
  INCONSISTENT_TOPIC_ID.
Everything else (notably the group errors ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS,
FENCED_INSTANCE_ID) is not retriable in Kafka's sense: the client must act (rejoin, reset) rather than resend.
"""

from __future__ import annotations

from enum import IntEnum

# code -> (name, retriable, Kafka's default message)
_T, _F = True, False
_ERRORS: tuple[tuple[int, str, bool, str], ...] = (
    (-1, "UNKNOWN_SERVER_ERROR", _F, "The server experienced an unexpected error when processing the request."),
    (0, "NONE", _F, ""),
    (1, "OFFSET_OUT_OF_RANGE", _F, "The requested offset is not within the range of offsets maintained by the server."),
    (2, "CORRUPT_MESSAGE", _T, "This message has failed its CRC checksum, exceeds the valid size, has a null key for "
                               "a compacted topic, or is otherwise corrupt."),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", _T, "This server does not host this topic-partition."),
    (4, "INVALID_FETCH_SIZE", _F, "The requested fetch size is invalid."),
    (5, "LEADER_NOT_AVAILABLE", _T, "There is no leader for this topic-partition as we are in the middle of a "
                                    "leadership election."),
    (6, "NOT_LEADER_OR_FOLLOWER", _T, "For requests intended only for the leader, this error indicates that the broker "
                                      "is not the current leader. For requests intended for any replica, this error "
                                      "indicates that the broker is not a replica of the topic partition."),
    (7, "REQUEST_TIMED_OUT", _T, "The request timed out."),
    (8, "BROKER_NOT_AVAILABLE", _F, "The broker is not available."),
    (9, "REPLICA_NOT_AVAILABLE", _T, "The replica is not available for the requested topic-partition. Produce/Fetch "
                                     "requests and other requests intended only for the leader or follower return "
                                     "NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition."),
    (10, "MESSAGE_TOO_LARGE", _F, "The request included a message larger than the max message size the server will "
                                  "accept."),
    (11, "STALE_CONTROLLER_EPOCH", _F, "The controller moved to another broker."),
    (12, "OFFSET_METADATA_TOO_LARGE", _F, "The metadata field of the offset request was too large."),
    (13, "NETWORK_EXCEPTION", _T, "The server disconnected before a response was received."),
    (14, "COORDINATOR_LOAD_IN_PROGRESS", _T, "The coordinator is loading and hence can't process requests."),
    (15, "COORDINATOR_NOT_AVAILABLE", _T, "The coordinator is not available."),
    (16, "NOT_COORDINATOR", _T, "This is not the correct coordinator."),
    (17, "INVALID_TOPIC_EXCEPTION", _F, "The request attempted to perform an operation on an invalid topic."),
    (18, "RECORD_LIST_TOO_LARGE", _F, "The request included message batch larger than the configured segment size on "
                                      "the server."),
    (19, "NOT_ENOUGH_REPLICAS", _T, "Messages are rejected since there are fewer in-sync replicas than required."),
    (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", _T, "Messages are written to the log, but to fewer in-sync replicas than "
                                                 "required."),
    (21, "INVALID_REQUIRED_ACKS", _F, "Produce request specified an invalid value for required acks."),
    (22, "ILLEGAL_GENERATION", _F, "Specified group generation id is not valid."),
    (23, "INCONSISTENT_GROUP_PROTOCOL", _F, "The group member's supported protocols are incompatible with those of "
                                            "existing members or first group member tried to join with empty "
                                            "protocol type or empty protocol list."),
    (24, "INVALID_GROUP_ID", _F, "The configured groupId is invalid."),
    (25, "UNKNOWN_MEMBER_ID", _F, "The coordinator is not aware of this member."),
    (26, "INVALID_SESSION_TIMEOUT", _F, "The session timeout is not within the range allowed by the broker (as "
                                        "configured by group.min.session.timeout.ms and "
                                        "group.max.session.timeout.ms)."),
    (27, "REBALANCE_IN_PROGRESS", _F, "The group is rebalancing, so a rejoin is needed."),
    (28, "INVALID_COMMIT_OFFSET_SIZE", _F, "The committing offset data size is not valid."),
    (29, "TOPIC_AUTHORIZATION_FAILED", _F, "Topic authorization failed."),
    (30, "GROUP_AUTHORIZATION_FAILED", _F, "Group authorization failed."),
    (31, "CLUSTER_AUTHORIZATION_FAILED", _F, "Cluster authorization failed."),
    (32, "INVALID_TIMESTAMP", _F, "The timestamp of the message is out of acceptable range."),
    (33, "UNSUPPORTED_SASL_MECHANISM", _F, "The broker does not support the requested SASL mechanism."),
    (34, "ILLEGAL_SASL_STATE", _F, "Request is not valid given the current SASL state."),
    (35, "UNSUPPORTED_VERSION", _F, "The version of API is not supported."),
    (36, "TOPIC_ALREADY_EXISTS", _F, "Topic with this name already exists."),
    (37, "INVALID_PARTITIONS", _F, "Number of partitions is below 1."),
    (38, "INVALID_REPLICATION_FACTOR", _F, "Replication factor is below 1 or larger than the number of available "
                                           "brokers."),
    (39, "INVALID_REPLICA_ASSIGNMENT", _F, "Replica assignment is invalid."),
    (40, "INVALID_CONFIG", _F, "Configuration is invalid."),
    (41, "NOT_CONTROLLER", _T, "This is not the correct controller for this cluster."),
    (42, "INVALID_REQUEST", _F, "This most likely occurs because of a request being malformed by the client library "
                                "or the message was sent to an incompatible broker. See the broker logs for more "
                                "details."),
    (43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", _F, "The message format version on the broker does not support the "
                                               "request."),
    (44, "POLICY_VIOLATION", _F, "Request parameters do not satisfy the configured policy."),
    (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", _F, "The broker received an out of order sequence number."),
    (46, "DUPLICATE_SEQUENCE_NUMBER", _F, "The broker received a duplicate sequence number."),
    (47, "INVALID_PRODUCER_EPOCH", _F, "Producer attempted to produce with an old epoch."),
    (48, "INVALID_TXN_STATE", _F, "The producer attempted a transactional operation in an invalid state."),
    (49, "INVALID_PRODUCER_ID_MAPPING", _F, "The producer attempted to use a producer id which is not currently "
                                            "assigned to its transactional id."),
    (50, "INVALID_TRANSACTION_TIMEOUT", _F, "The transaction timeout is larger than the maximum value allowed by the "
                                            "broker (as configured by transaction.max.timeout.ms)."),
    (51, "CONCURRENT_TRANSACTIONS", _T, "The producer attempted to update a transaction while another concurrent "
                                        "operation on the same transaction was ongoing."),
    (52, "TRANSACTION_COORDINATOR_FENCED", _F, "Indicates that the transaction coordinator sending a WriteTxnMarker "
                                               "is no longer the current coordinator for a given producer."),
    (53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", _F, "Transactional Id authorization failed."),
    (54, "SECURITY_DISABLED", _F, "Security features are disabled."),
    (55, "OPERATION_NOT_ATTEMPTED", _F, "The broker did not attempt to execute this operation. This may happen for "
                                        "batched RPCs where some operations in the batch failed, causing the broker "
                                        "to respond without trying the rest."),
    (56, "KAFKA_STORAGE_ERROR", _T, "Disk error when trying to access log file on the disk."),
    (57, "LOG_DIR_NOT_FOUND", _F, "The user-specified log directory is not found in the broker config."),
    (58, "SASL_AUTHENTICATION_FAILED", _F, "SASL Authentication failed."),
    (59, "UNKNOWN_PRODUCER_ID", _F, "This exception is raised by the broker if it could not locate the producer "
                                    "metadata associated with the producerId in question. This could happen if, for "
                                    "instance, the producer's records were deleted because their retention time had "
                                    "elapsed. Once the last records of the producerId are removed, the producer's "
                                    "metadata is removed from the broker, and future appends by the producer will "
                                    "return this exception."),
    (60, "REASSIGNMENT_IN_PROGRESS", _F, "A partition reassignment is in progress."),
    (61, "DELEGATION_TOKEN_AUTH_DISABLED", _F, "Delegation Token feature is not enabled."),
    (62, "DELEGATION_TOKEN_NOT_FOUND", _F, "Delegation Token is not found on server."),
    (63, "DELEGATION_TOKEN_OWNER_MISMATCH", _F, "Specified Principal is not valid Owner/Renewer."),
    (64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", _F, "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL "
                                                     "channels and on delegation token authenticated channels."),
    (65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", _F, "Delegation Token authorization failed."),
    (66, "DELEGATION_TOKEN_EXPIRED", _F, "Delegation Token is expired."),
    (67, "INVALID_PRINCIPAL_TYPE", _F, "Supplied principalType is not supported."),
    (68, "NON_EMPTY_GROUP", _F, "The group is not empty."),
    (69, "GROUP_ID_NOT_FOUND", _F, "The group id does not exist."),
    (70, "FETCH_SESSION_ID_NOT_FOUND", _T, "The fetch session ID was not found."),
    (71, "INVALID_FETCH_SESSION_EPOCH", _T, "The fetch session epoch is invalid."),
    (72, "LISTENER_NOT_FOUND", _T, "There is no listener on the leader broker that matches the listener on which "
                                   "metadata request was processed."),
    (73, "TOPIC_DELETION_DISABLED", _F, "Topic deletion is disabled."),
    (74, "FENCED_LEADER_EPOCH", _T, "The leader epoch in the request is older than the epoch on the broker."),
    (75, "UNKNOWN_LEADER_EPOCH", _T, "The leader epoch in the request is newer than the epoch on the broker."),
    (76, "UNSUPPORTED_COMPRESSION_TYPE", _F, "The requesting client does not support the compression type of given "
                                             "partition."),
    (77, "STALE_BROKER_EPOCH", _F, "Broker epoch has changed."),
    (78, "OFFSET_NOT_AVAILABLE", _T, "The leader high watermark has not caught up from a recent leader election so "
                                     "the offsets cannot be guaranteed to be monotonically increasing."),
    (79, "MEMBER_ID_REQUIRED", _F, "The group member needs to have a valid member id before actually entering a "
                                   "consumer group."),
    (80, "PREFERRED_LEADER_NOT_AVAILABLE", _T, "The preferred leader was not available."),
    (81, "GROUP_MAX_SIZE_REACHED", _F, "The consumer group has reached its max size."),
    (82, "FENCED_INSTANCE_ID", _F, "The broker rejected this static consumer since another consumer with the same "
                                   "group.instance.id has registered with a different member.id."),
    (83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", _T, "Eligible topic partition leaders are not available."),
    (84, "ELECTION_NOT_NEEDED", _T, "Leader election not needed for topic partition."),
    (85, "NO_REASSIGNMENT_IN_PROGRESS", _F, "No partition reassignment is in progress."),
    (86, "GROUP_SUBSCRIBED_TO_TOPIC", _F, "Deleting offsets of a topic is forbidden while the consumer group is "
                                          "actively subscribed to it."),
    (87, "INVALID_RECORD", _F, "This record has failed the validation on broker and hence will be rejected."),
    (88, "UNSTABLE_OFFSET_COMMIT", _T, "There are unstable offsets that need to be cleared."),
    (89, "THROTTLING_QUOTA_EXCEEDED", _T, "The throttling quota has been exceeded."),
    (90, "PRODUCER_FENCED", _F, "There is a newer producer with the same transactionalId which fences the current "
                                "one."),
    (91, "RESOURCE_NOT_FOUND", _F, "A request illegally referred to a resource that does not exist."),
    (92, "DUPLICATE_RESOURCE", _F, "A request illegally referred to the same resource twice."),
    (93, "UNACCEPTABLE_CREDENTIAL", _F, "Requested credential would not meet criteria for acceptability."),
    (94, "INCONSISTENT_VOTER_SET", _F, "Indicates that the either the sender or recipient of a voter-only request is "
                                       "not one of the expected voters"),
    (95, "INVALID_UPDATE_VERSION", _F, "The given update version was invalid."),
    (96, "FEATURE_UPDATE_FAILED", _F, "Unable to update finalized features due to an unexpected server error."),
    (97, "PRINCIPAL_DESERIALIZATION_FAILURE", _F, "Request principal deserialization failed during forwarding. This "
                                                  "indicates an internal error on the broker cluster security setup."),
    (98, "SNAPSHOT_NOT_FOUND", _F, "Requested snapshot was not found"),
    (99, "POSITION_OUT_OF_RANGE", _F, "Requested position is not greater than or equal to zero, and less than the "
                                      "size of the snapshot."),
    (100, "UNKNOWN_TOPIC_ID", _T, "This server does not host this topic ID."),
    (101, "DUPLICATE_BROKER_REGISTRATION", _F, "This broker ID is already in use."),
    (102, "BROKER_ID_NOT_REGISTERED", _F, "The given broker ID was not registered."),
    (103, "INCONSISTENT_TOPIC_ID", _T, "The log's topic ID did not match the topic ID in the request"),
    (104, "INCONSISTENT_CLUSTER_ID", _F, "The clusterId in the request does not match that found on the server"),
    (105, "TRANSACTIONAL_ID_NOT_FOUND", _F, "The transactionalId could not be found"),
    (106, "FETCH_SESSION_TOPIC_ID_ERROR", _T, "The fetch session encountered inconsistent topic ID usage"),
    (107, "INELIGIBLE_REPLICA", _F, "The new ISR contains at least one ineligible replica."),
    (108, "NEW_LEADER_ELECTED", _F, "The AlterPartition request successfully updated the partition state but the "
                                    "leader has changed."),
    (109, "OFFSET_MOVED_TO_TIERED_STORAGE", _F, "The requested offset is moved to tiered storage."),
    (110, "FENCED_MEMBER_EPOCH", _F, "The member epoch is fenced by the group coordinator. The member must abandon "
                                     "all its partitions and rejoin."),
    (111, "UNRELEASED_INSTANCE_ID", _F, "The instance ID is still used by another member in the consumer group. That "
                                        "member must leave first."),
    (112, "UNSUPPORTED_ASSIGNOR", _F, "The assignor or its version range is not supported by the consumer group."),
    (113, "STALE_MEMBER_EPOCH", _F, "The member epoch is stale. The member must retry after receiving its updated "
                                    "member epoch via the ConsumerGroupHeartbeat API."),
    (114, "MISMATCHED_ENDPOINT_TYPE", _F, "The request was sent to an endpoint of the wrong type."),
    (115, "UNSUPPORTED_ENDPOINT_TYPE", _F, "This endpoint type is not supported yet."),
    (116, "UNKNOWN_CONTROLLER_ID", _F, "This controller ID is not known."),
    (117, "UNKNOWN_SUBSCRIPTION_ID", _F, "Client sent a push telemetry request with an invalid or outdated "
                                         "subscription ID."),
    (118, "TELEMETRY_TOO_LARGE", _F, "Client sent a push telemetry request larger than the maximum size the broker "
                                     "will accept."),
    (119, "INVALID_REGISTRATION", _F, "The controller has considered the broker registration to be invalid."),
    (120, "TRANSACTION_ABORTABLE", _F, "The server encountered an error with the transaction. The client can abort "
                                       "the transaction to continue using this transactional ID."),
    (121, "INVALID_RECORD_STATE", _F, "The record state is invalid. The acknowledgement of delivery could not be "
                                      "completed."),
    (122, "SHARE_SESSION_NOT_FOUND", _T, "The share session was not found."),
    (123, "INVALID_SHARE_SESSION_EPOCH", _T, "The share session epoch is invalid."),
    (124, "FENCED_STATE_EPOCH", _F, "The share coordinator rejected the request because the share-group state epoch "
                                    "did not match."),
    (125, "INVALID_VOTER_KEY", _F, "The voter key doesn't match the receiving replica's key."),
    (126, "DUPLICATE_VOTER", _F, "The voter is already part of the set of voters."),
    (127, "VOTER_NOT_FOUND", _F, "The voter is not part of the set of voters."),
    (128, "INVALID_REGULAR_EXPRESSION", _F, "The regular expression is not valid."),
    (129, "REBOOTSTRAP_REQUIRED", _F, "Client metadata is stale. The client should rebootstrap to obtain new "
                                      "metadata."),
    (130, "STREAMS_INVALID_TOPOLOGY", _F, "The supplied topology is invalid."),
    (131, "STREAMS_INVALID_TOPOLOGY_EPOCH", _F, "The supplied topology epoch is invalid."),
    (132, "STREAMS_TOPOLOGY_FENCED", _F, "The supplied topology epoch is outdated."),
    (133, "SHARE_SESSION_LIMIT_REACHED", _T, "The limit of share sessions has been reached."),
)

_RETRIABLE: dict[int, bool] = {code: retriable for code, _, retriable, _ in _ERRORS}
_MESSAGES: dict[int, str] = {code: message for code, _, _, message in _ERRORS}


class ErrorCode(IntEnum):
    """Kafka's error codes (``Errors``): ``ErrorCode.NOT_COORDINATOR == 16``."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    BROKER_NOT_AVAILABLE = 8
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    CLUSTER_AUTHORIZATION_FAILED = 31
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    INVALID_REPLICA_ASSIGNMENT = 39
    INVALID_CONFIG = 40
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    POLICY_VIOLATION = 44
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    INVALID_TRANSACTION_TIMEOUT = 50
    CONCURRENT_TRANSACTIONS = 51
    TRANSACTION_COORDINATOR_FENCED = 52
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
    SECURITY_DISABLED = 54
    OPERATION_NOT_ATTEMPTED = 55
    KAFKA_STORAGE_ERROR = 56
    LOG_DIR_NOT_FOUND = 57
    SASL_AUTHENTICATION_FAILED = 58
    UNKNOWN_PRODUCER_ID = 59
    REASSIGNMENT_IN_PROGRESS = 60
    DELEGATION_TOKEN_AUTH_DISABLED = 61
    DELEGATION_TOKEN_NOT_FOUND = 62
    DELEGATION_TOKEN_OWNER_MISMATCH = 63
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65
    DELEGATION_TOKEN_EXPIRED = 66
    INVALID_PRINCIPAL_TYPE = 67
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    LISTENER_NOT_FOUND = 72
    TOPIC_DELETION_DISABLED = 73
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    STALE_BROKER_EPOCH = 77
    OFFSET_NOT_AVAILABLE = 78
    MEMBER_ID_REQUIRED = 79
    PREFERRED_LEADER_NOT_AVAILABLE = 80
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83
    ELECTION_NOT_NEEDED = 84
    NO_REASSIGNMENT_IN_PROGRESS = 85
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    INVALID_RECORD = 87
    UNSTABLE_OFFSET_COMMIT = 88
    THROTTLING_QUOTA_EXCEEDED = 89
    PRODUCER_FENCED = 90
    RESOURCE_NOT_FOUND = 91
    DUPLICATE_RESOURCE = 92
    UNACCEPTABLE_CREDENTIAL = 93
    INCONSISTENT_VOTER_SET = 94
    INVALID_UPDATE_VERSION = 95
    FEATURE_UPDATE_FAILED = 96
    PRINCIPAL_DESERIALIZATION_FAILURE = 97
    SNAPSHOT_NOT_FOUND = 98
    POSITION_OUT_OF_RANGE = 99
    UNKNOWN_TOPIC_ID = 100
    DUPLICATE_BROKER_REGISTRATION = 101
    BROKER_ID_NOT_REGISTERED = 102
    INCONSISTENT_TOPIC_ID = 103
    INCONSISTENT_CLUSTER_ID = 104
    TRANSACTIONAL_ID_NOT_FOUND = 105
    FETCH_SESSION_TOPIC_ID_ERROR = 106
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108
    OFFSET_MOVED_TO_TIERED_STORAGE = 109
    FENCED_MEMBER_EPOCH = 110
    UNRELEASED_INSTANCE_ID = 111
    UNSUPPORTED_ASSIGNOR = 112
    STALE_MEMBER_EPOCH = 113
    MISMATCHED_ENDPOINT_TYPE = 114
    UNSUPPORTED_ENDPOINT_TYPE = 115
    UNKNOWN_CONTROLLER_ID = 116
    UNKNOWN_SUBSCRIPTION_ID = 117
    TELEMETRY_TOO_LARGE = 118
    INVALID_REGISTRATION = 119
    TRANSACTION_ABORTABLE = 120
    INVALID_RECORD_STATE = 121
    SHARE_SESSION_NOT_FOUND = 122
    INVALID_SHARE_SESSION_EPOCH = 123
    FENCED_STATE_EPOCH = 124
    INVALID_VOTER_KEY = 125
    DUPLICATE_VOTER = 126
    VOTER_NOT_FOUND = 127
    INVALID_REGULAR_EXPRESSION = 128
    REBOOTSTRAP_REQUIRED = 129
    STREAMS_INVALID_TOPOLOGY = 130
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131
    STREAMS_TOPOLOGY_FENCED = 132
    SHARE_SESSION_LIMIT_REACHED = 133

    @property
    def retriable(self) -> bool:
        """True where Kafka's exception for this code extends RetriableException."""
        return _RETRIABLE[self.value]

    @property
    def message(self) -> str:
        """Kafka's default message for this code (``Errors.message()``); empty for NONE."""
        return _MESSAGES[self.value]

    @classmethod
    def from_code(cls, code: int) -> "ErrorCode":
        """``Errors.forCode``: the member for ``code``, or UNKNOWN_SERVER_ERROR for a number we do not know."""
        try:
            return _BY_CODE[code]
        except (KeyError, TypeError):
            return cls.UNKNOWN_SERVER_ERROR


_BY_CODE: dict[int, ErrorCode] = {member.value: member for member in ErrorCode}

# The table and the enum are written out separately (the enum for readers and IDEs); keep them in lock-step.
assert [(c, n) for c, n, _, _ in _ERRORS] == [(m.value, m.name) for m in ErrorCode], "errors table out of sync"
