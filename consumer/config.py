"""Consumer configuration: the group-management subset of Kafka's consumer settings, under Kafka's names.

Mirrors ``org.apache.kafka.clients.consumer.ConsumerConfig`` / ``CommonClientConfigs`` (Kafka 3.x/4.x defaults)
and the values the Java client derives from them in ``GroupRebalanceConfig`` (``rebalance.timeout`` is
``max.poll.interval.ms``; the heartbeat interval must be below the session timeout, as ``Heartbeat``'s
constructor insists).

Every setting has Kafka's dotted name (``session.timeout.ms``) and a Python name (``session_timeout_ms``); both
are accepted. Invalid values raise :class:`ConfigError` whose message starts with the setting's Kafka name, e.g.
``heartbeat.interval.ms (45000) must be lower than session.timeout.ms (45000)``. Names, validation and the error
explainer come from the settings base shared with the coordinator (``protocol.settings``).

``group.protocol`` picks the membership (KIP-848): ``classic`` (JoinGroup/SyncGroup, the default as in Kafka 4.x)
or ``consumer`` (ConsumerGroupHeartbeat, server-side assignment). As ``ConsumerConfig.checkUnsupportedConfigs
PostProcess`` does, settings that only one protocol uses are refused when set explicitly under the other:
``partition.assignment.strategy``, ``heartbeat.interval.ms`` and ``session.timeout.ms`` under ``consumer`` (the
coordinator owns them: ``group.consumer.*``), ``group.remote.assignor`` under ``classic``.
"""

from __future__ import annotations

import re
from typing import Any, Literal, Optional

from pydantic import field_validator, model_validator

from protocol.settings import INT32_MAX, ConfigError, KafkaSettings
from protocol.settings import setting as _f

#: ConsumerConfig.CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS / CLASSIC_PROTOCOL_UNSUPPORTED_CONFIGS (Kafka's order)
CONSUMER_PROTOCOL_UNSUPPORTED = ("partition_assignment_strategy", "heartbeat_interval_ms", "session_timeout_ms")
CLASSIC_PROTOCOL_UNSUPPORTED = ("group_remote_assignor",)

#: partition.assignment.strategy default since Kafka 3.0 (KIP-726): [RangeAssignor, CooperativeStickyAssignor].
#: Both must be supported by every member for an upgrade to cooperative; the effective protocol is EAGER.
DEFAULT_ASSIGNMENT_STRATEGY = ("range", "cooperative-sticky")

# JoinGroupRequest.validateGroupInstanceId / Topic.validate: legal characters and the 249-character limit.
_LEGAL_INSTANCE_ID = re.compile(r"^[a-zA-Z0-9._-]+$")


class ConsumerConfig(KafkaSettings):
    """The consumer settings the classic group protocol uses (Kafka names and defaults)."""

    group_id: str = _f(..., "group.id", "The consumer group; required for subscribe() (InvalidGroupIdException).",
                       min_length=1)
    client_id: str = _f("", "client.id", "Client id sent in request headers and used as the member-id prefix by "
                                         "the broker; empty means consumer-<group.id>-1 (Kafka numbers them).")
    session_timeout_ms: int = _f(45_000, "session.timeout.ms",
                                 "Session timeout sent in JoinGroup (KIP-735 default 45 s).", gt=0, le=INT32_MAX)
    heartbeat_interval_ms: int = _f(3_000, "heartbeat.interval.ms",
                                    "Interval between heartbeats; must be below session.timeout.ms.", gt=0,
                                    le=INT32_MAX)
    max_poll_interval_ms: int = _f(300_000, "max.poll.interval.ms",
                                   "Longest allowed gap between application polls; also the JoinGroup rebalance "
                                   "timeout.", ge=1, le=INT32_MAX)
    partition_assignment_strategy: tuple[str, ...] = _f(
        DEFAULT_ASSIGNMENT_STRATEGY, "partition.assignment.strategy",
        "Assignors in preference order (built-in names, Kafka class names or package.module:Class); a comma-"
        "separated string is accepted.")
    group_instance_id: Optional[str] = _f(None, "group.instance.id",
                                          "Static membership id (KIP-345); None for a dynamic member.")
    enable_auto_commit: bool = _f(True, "enable.auto.commit", "Commit consumed offsets periodically and before "
                                                              "rebalances.")
    auto_commit_interval_ms: int = _f(5_000, "auto.commit.interval.ms", "Auto-commit period.", ge=0,
                                      le=INT32_MAX)
    auto_offset_reset: Literal["latest", "earliest", "none"] = _f(
        "latest", "auto.offset.reset", "Where to start when a partition has no committed offset.")
    retry_backoff_ms: int = _f(100, "retry.backoff.ms", "Initial backoff after a failed request.", ge=0,
                               le=INT32_MAX)
    retry_backoff_max_ms: int = _f(1_000, "retry.backoff.max.ms",
                                   "Cap of the exponential retry backoff (KIP-580).", ge=0, le=INT32_MAX)
    request_timeout_ms: int = _f(30_000, "request.timeout.ms",
                                 "How long to wait for a response before failing the request (JoinGroup waits "
                                 "at least the rebalance timeout plus 5 s).", ge=0, le=INT32_MAX)
    default_api_timeout_ms: int = _f(60_000, "default.api.timeout.ms",
                                     "Budget of blocking APIs such as commitSync and close.", ge=0, le=INT32_MAX)
    client_rack: Optional[str] = _f(None, "client.rack", "Rack of this consumer (KIP-881 rack-aware assignment).")
    group_protocol: Literal["classic", "consumer"] = _f(
        "classic", "group.protocol", "Rebalance protocol: classic (JoinGroup/SyncGroup) or consumer (KIP-848 "
                                     "ConsumerGroupHeartbeat); case-insensitive as in Kafka.")
    group_remote_assignor: Optional[str] = _f(
        None, "group.remote.assignor", "Server-side assignor the member prefers (group.protocol=consumer only), "
                                       "e.g. uniform or range; None lets the coordinator pick its default.")
    internal_leave_group_on_close: bool = _f(True, "internal.leave.group.on.close",
                                             "Send LeaveGroup on close (dynamic members only).")

    @field_validator("partition_assignment_strategy", mode="before")
    @classmethod
    def _split_strategy(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [part.strip() for part in value.split(",") if part.strip()]
        return value

    @field_validator("partition_assignment_strategy")
    @classmethod
    def _check_strategy(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("partition.assignment.strategy must name at least one assignor")
        if len(set(value)) != len(value):
            raise ValueError("partition.assignment.strategy lists an assignor twice")
        return value

    @field_validator("group_protocol", mode="before")
    @classmethod
    def _lower_protocol(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value  # GroupProtocol.of: case-insensitive

    @field_validator("group_remote_assignor")
    @classmethod
    def _check_remote_assignor(cls, value: Optional[str]) -> Optional[str]:
        return None if value is None or not value.strip() else value  # Utils.isBlank: a blank value is unset

    @field_validator("group_instance_id")
    @classmethod
    def _check_instance_id(cls, value: Optional[str]) -> Optional[str]:
        if value is None:
            return None
        if not value:
            raise ValueError("group.instance.id must not be empty")
        if len(value) > 249:
            raise ValueError("group.instance.id must be at most 249 characters")
        if not _LEGAL_INSTANCE_ID.match(value):
            raise ValueError("group.instance.id may contain only ASCII alphanumerics, '.', '_' and '-'")
        return value

    @model_validator(mode="after")
    def _cross_checks(self) -> "ConsumerConfig":
        # ConsumerConfig.checkUnsupportedConfigsPostProcess: only settings the application set count
        unsupported = CONSUMER_PROTOCOL_UNSUPPORTED if self.group_protocol == "consumer" else \
            CLASSIC_PROTOCOL_UNSUPPORTED
        invalid = [self.kafka_name(n) for n in unsupported
                   if n in self.model_fields_set and getattr(self, n) is not None]
        if invalid:
            raise ValueError(f"{', '.join(invalid)} cannot be set when group.protocol={self.group_protocol.upper()}")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError(f"heartbeat.interval.ms ({self.heartbeat_interval_ms}) must be lower than "
                             f"session.timeout.ms ({self.session_timeout_ms})")
        return self

    # --- derived values (GroupRebalanceConfig) ----------------------------------------------------------------
    @property
    def rebalance_timeout_ms(self) -> int:
        """``GroupRebalanceConfig.rebalanceTimeoutMs``: the consumer uses ``max.poll.interval.ms``."""
        return self.max_poll_interval_ms

    @property
    def effective_client_id(self) -> str:
        return self.client_id or f"consumer-{self.group_id}-1"


__all__ = ["ConsumerConfig", "ConfigError", "DEFAULT_ASSIGNMENT_STRATEGY"]
