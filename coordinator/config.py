"""Coordinator configuration: Kafka's broker settings, under Kafka's names, with Kafka's defaults.

Mirrors ``org.apache.kafka.coordinator.group.GroupCoordinatorConfig`` (Kafka 4.4) for the classic-group, KIP-848
consumer-group and offsets settings, plus the two replica-placement knobs of ``__consumer_offsets``. Each setting has a Python name
(``group_min_session_timeout_ms``) and Kafka's dotted name (``group.min.session.timeout.ms``); both are accepted.

Settings that are not Kafka's carry the ``kgroup.`` prefix and say so in their description.

Invalid values raise :class:`ConfigError` whose message names the offending setting by its Kafka name, e.g.
``group.max.session.timeout.ms (6000) must be >= group.min.session.timeout.ms (10000)``. Names, validation and the
error explainer come from the settings base shared with the consumer (``protocol.settings``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import field_validator, model_validator

from protocol.settings import INT32_MAX, ConfigError, KafkaSettings
from protocol.settings import setting as _f

__all__ = ["CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS", "ConfigError", "CoordinatorConfig", "INT32_MAX"]

#: Kafka hard-codes this (GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS): a new member's
#: JoinGroup is expired after 5 minutes if the rebalance has not completed (KAFKA-9232).
CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


class CoordinatorConfig(KafkaSettings):
    """Group coordinator and offsets-topic settings (Kafka 4.x names and defaults)."""

    group_min_session_timeout_ms: int = _f(6000, "group.min.session.timeout.ms",
                                           "Lowest session timeout a JoinGroup may ask for (inclusive).", ge=0)
    group_max_session_timeout_ms: int = _f(1_800_000, "group.max.session.timeout.ms",
                                           "Highest session timeout a JoinGroup may ask for (inclusive).", ge=0)
    group_initial_rebalance_delay_ms: int = _f(3000, "group.initial.rebalance.delay.ms",
                                               "Initial-join delay window of a group that was Empty.", ge=0)
    group_max_size: int = _f(INT32_MAX, "group.max.size", "Maximum members of a classic group.", ge=1)
    offsets_topic_num_partitions: int = _f(50, "offsets.topic.num.partitions",
                                           "Partitions of __consumer_offsets (coordinator shards).", ge=1)
    offsets_topic_replication_factor: int = _f(3, "offsets.topic.replication.factor",
                                               "Replication factor of __consumer_offsets; the topic is only created "
                                               "once the cluster has at least this many brokers.", ge=1)
    offsets_retention_minutes: int = _f(10080, "offsets.retention.minutes",
                                        "Retention of committed offsets of empty groups (KIP-211).", ge=1)
    offsets_retention_check_interval_ms: int = _f(600_000, "offsets.retention.check.interval.ms",
                                                  "Period of the offset-expiry sweep.", ge=1)
    offset_metadata_max_bytes: int = _f(4096, "offset.metadata.max.bytes",
                                        "Longest committed metadata string.", ge=0)
    log_cleaner_min_cleanable_ratio: float = _f(0.5, "log.cleaner.min.cleanable.ratio",
                                                "An offsets partition's log is compacted once its dirty part is at "
                                                "least this fraction of it (coordinator/log.py).", ge=0, le=1)
    log_cleaner_delete_retention_ms: int = _f(86_400_000, "log.cleaner.delete.retention.ms",
                                              "How long a compacted log keeps tombstones.", ge=0)
    # --- KIP-848 consumer groups (GroupCoordinatorConfig, Kafka 4.4) -------------------------------------------
    group_consumer_session_timeout_ms: int = _f(45000, "group.consumer.session.timeout.ms",
                                                "The timeout to detect client failures when using the consumer "
                                                "group protocol.", ge=1)
    group_consumer_min_session_timeout_ms: int = _f(45000, "group.consumer.min.session.timeout.ms",
                                                    "The minimum allowed session timeout for registered consumers.",
                                                    ge=1)
    group_consumer_max_session_timeout_ms: int = _f(60000, "group.consumer.max.session.timeout.ms",
                                                    "The maximum allowed session timeout for registered consumers.",
                                                    ge=1)
    group_consumer_heartbeat_interval_ms: int = _f(5000, "group.consumer.heartbeat.interval.ms",
                                                   "The heartbeat interval given to the members of a consumer group.",
                                                   ge=1)
    group_consumer_min_heartbeat_interval_ms: int = _f(5000, "group.consumer.min.heartbeat.interval.ms",
                                                       "The minimum heartbeat interval for registered consumers.",
                                                       ge=1)
    group_consumer_max_heartbeat_interval_ms: int = _f(15000, "group.consumer.max.heartbeat.interval.ms",
                                                       "The maximum heartbeat interval for registered consumers.",
                                                       ge=1)
    group_consumer_max_size: int = _f(INT32_MAX, "group.consumer.max.size",
                                      "The maximum number of consumers a consumer group (consumer protocol) can "
                                      "accommodate; classic groups use group.max.size.", ge=1)
    group_consumer_assignors: tuple[str, ...] = _f(
        ("uniform", "range"), "group.consumer.assignors",
        "The server side assignors (names or Kafka class names of the built-in ones); the first is the default "
        "assignor, used when no member names one. Built-in: uniform, range.")
    group_consumer_migration_policy: Literal["bidirectional", "upgrade", "downgrade", "disabled"] = _f(
        "bidirectional", "group.consumer.migration.policy",
        "Whether a non-empty classic group may be converted to a consumer group (upgrade), a consumer group to a "
        "classic one (downgrade), both (bidirectional) or neither (disabled; classic members may then not join a "
        "non-empty consumer group). Empty groups are always converted. Case-insensitive.")
    group_consumer_assignment_interval_ms: int = _f(1000, "group.consumer.assignment.interval.ms",
                                                    "The interval between assignment updates for a consumer group "
                                                    "(KIP-1263, Kafka 4.3+; 0 = every epoch bump at once, the "
                                                    "4.1/4.2 behaviour).", ge=0)
    group_consumer_min_assignment_interval_ms: int = _f(0, "group.consumer.min.assignment.interval.ms",
                                                        "The minimum interval between assignment updates for a "
                                                        "consumer group.", ge=0)
    group_consumer_max_assignment_interval_ms: int = _f(15000, "group.consumer.max.assignment.interval.ms",
                                                        "The maximum interval between assignment updates for a "
                                                        "consumer group.", ge=0)
    group_consumer_regex_refresh_interval_ms: int = _f(600_000, "group.consumer.regex.refresh.interval.ms",
                                                       "Kafka-internal: the interval at which the coordinator "
                                                       "re-resolves the groups' subscribed regular expressions.",
                                                       ge=10_000)
    # --- kgroup-only settings ----------------------------------------------------------------------------------
    offsets_compaction_min_records: int = _f(10_000, "kgroup.offsets.compaction.min.records",
                                             "kgroup only: an offsets partition's log is not compacted before this "
                                             "many records were appended since its last compaction (Kafka never "
                                             "cleans the active segment, offsets.topic.segment.bytes = 100 MiB).",
                                             ge=1)
    coordinator_load_time_ms: int = _f(0, "kgroup.coordinator.load.time.ms",
                                       "kgroup only: how long a broker that becomes leader of an offsets partition "
                                       "stays loading (answering COORDINATOR_LOAD_IN_PROGRESS) before it has "
                                       "replayed the log. Kafka's load time depends on the log size.", ge=0)
    replica_placement: Literal["round-robin", "kafka"] = _f(
        "round-robin", "kgroup.replica.placement",
        "kgroup only: 'round-robin' places partition i on brokers i, i+1, ... mod n (seed 001); 'kafka' is "
        "Kafka's rack-unaware placement with a random start index and replica shift drawn from the seed.")

    @field_validator("group_consumer_migration_policy", mode="before")
    @classmethod
    def _policy_case_insensitive(cls, v):
        # ConfigDef.CaseInsensitiveValidString + ConsumerGroupMigrationPolicy.parse
        return v.lower() if isinstance(v, str) else v

    @field_validator("group_consumer_assignors", mode="before")
    @classmethod
    def _assignors(cls, v):
        # A LIST setting: a comma-separated string or a list; ValidList.anyNonDuplicateValues(false, false): not
        # empty, no duplicates. Kafka also takes custom assignor classes; kgroup has only the built-in two.
        from coordinator.assignors import UnknownAssignorError, get_server_assignor

        items = [x.strip() for x in v.split(",")] if isinstance(v, str) else list(v)
        if not items or any(not x for x in items):
            raise ValueError("must be a non-empty list of assignor names")
        names = []
        for x in items:
            try:
                names.append(get_server_assignor(x).name)
            except UnknownAssignorError as e:
                raise ValueError(str(e)) from None
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate assignors in {items}")
        return tuple(names)

    @model_validator(mode="after")
    def _cross_checks(self) -> "CoordinatorConfig":
        if self.group_max_session_timeout_ms < self.group_min_session_timeout_ms:
            raise ValueError(f"group.max.session.timeout.ms ({self.group_max_session_timeout_ms}) must be >= "
                             f"group.min.session.timeout.ms ({self.group_min_session_timeout_ms})")
        # GroupCoordinatorConfig.verifyConsumerGroupConfigs, in Kafka's order (Kafka's words, with the values).
        ge, le, lt = "greater than or equal to", "less than or equal to", "less than"
        p = "group.consumer."
        checks = [("max.heartbeat.interval.ms", ge, "min.heartbeat.interval.ms"),
                  ("heartbeat.interval.ms", ge, "min.heartbeat.interval.ms"),
                  ("heartbeat.interval.ms", le, "max.heartbeat.interval.ms"),
                  ("max.session.timeout.ms", ge, "min.session.timeout.ms"),
                  ("session.timeout.ms", ge, "min.session.timeout.ms"),
                  ("session.timeout.ms", le, "max.session.timeout.ms"),
                  ("heartbeat.interval.ms", lt, "session.timeout.ms"),
                  ("max.assignment.interval.ms", ge, "min.assignment.interval.ms"),
                  ("assignment.interval.ms", ge, "min.assignment.interval.ms"),
                  ("assignment.interval.ms", le, "max.assignment.interval.ms")]
        for a, rel, b in checks:
            x = getattr(self, "group_consumer_" + a.replace(".", "_"))
            y = getattr(self, "group_consumer_" + b.replace(".", "_"))
            if not (x >= y if rel == ge else x <= y if rel == le else x < y):
                raise ValueError(f"{p}{a} ({x}) must be {rel} {p}{b} ({y})")
        return self

    @property
    def default_consumer_group_assignor(self) -> str:
        """The first of ``group.consumer.assignors`` (Kafka's ``defaultConsumerGroupAssignor``)."""
        return self.group_consumer_assignors[0]

    @property
    def upgrade_enabled(self) -> bool:
        """``ConsumerGroupMigrationPolicy.isUpgradeEnabled``."""
        return self.group_consumer_migration_policy in ("bidirectional", "upgrade")

    @property
    def downgrade_enabled(self) -> bool:
        """``ConsumerGroupMigrationPolicy.isDowngradeEnabled``."""
        return self.group_consumer_migration_policy in ("bidirectional", "downgrade")

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000
