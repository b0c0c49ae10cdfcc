"""Coordinator configuration: Kafka's broker settings, under Kafka's names, with Kafka's defaults.

Mirrors ``org.apache.kafka.coordinator.group.GroupCoordinatorConfig`` (Kafka 4.x) for the classic-group and
offsets settings, plus the two replica-placement knobs of ``__consumer_offsets``. Each setting has a Python name
(``group_min_session_timeout_ms``) and Kafka's dotted name (``group.min.session.timeout.ms``); both are accepted.

Settings that are not Kafka's carry the ``kgroup.`` prefix and say so in their description.

Invalid values raise :class:`ConfigError` whose message names the offending setting by its Kafka name, e.g.
``group.max.session.timeout.ms (6000) must be >= group.min.session.timeout.ms (10000)``. Names, validation and the
error explainer come from the settings base shared with the consumer (``protocol.settings``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator

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

    @model_validator(mode="after")
    def _cross_checks(self) -> "CoordinatorConfig":
        if self.group_max_session_timeout_ms < self.group_min_session_timeout_ms:
            raise ValueError(f"group.max.session.timeout.ms ({self.group_max_session_timeout_ms}) must be >= "
                             f"group.min.session.timeout.ms ({self.group_min_session_timeout_ms})")
        return self

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000
