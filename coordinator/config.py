"""Coordinator configuration: Kafka's broker settings, under Kafka's names, with Kafka's defaults.

Mirrors ``org.apache.kafka.coordinator.group.GroupCoordinatorConfig`` (Kafka 4.x) for the classic-group and
offsets settings, plus the two replica-placement knobs of ``__consumer_offsets``. Each setting has a Python name
(``group_min_session_timeout_ms``) and Kafka's dotted name (``group.min.session.timeout.ms``); both are accepted.

Settings that are not Kafka's carry the ``kgroup.`` prefix and say so in their description.

Invalid values raise :class:`ConfigError` whose message names the offending setting by its Kafka name, e.g.
``group.max.session.timeout.ms (6000) must be >= group.min.session.timeout.ms (10000)``.
"""

from __future__ import annotations

from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

INT32_MAX = 2**31 - 1

#: Kafka hard-codes this (GroupCoordinatorConfig.CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS): a new member's
#: JoinGroup is expired after 5 minutes if the rebalance has not completed (KAFKA-9232).
CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


class ConfigError(ValueError):
    """An invalid coordinator setting; the message starts with the setting's Kafka name."""


def _f(default: Any, kafka_name: str, doc: str, **kw: Any) -> Any:
    return Field(default, alias=kafka_name, description=doc, **kw)


class CoordinatorConfig(BaseModel):
    """Group coordinator and offsets-topic settings (Kafka 4.x names and defaults)."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True, strict=False)

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
    # --- kgroup-only settings ----------------------------------------------------------------------------------
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

    @classmethod
    def create(cls, settings: Mapping[str, Any] | None = None, **kwargs: Any) -> "CoordinatorConfig":
        """Build from Kafka names and/or Python names; raises :class:`ConfigError` naming the bad setting."""
        data = dict(settings or {})
        data.update(kwargs)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_explain(exc)) from None

    @property
    def offsets_retention_ms(self) -> int:
        return self.offsets_retention_minutes * 60_000

    def kafka_settings(self) -> dict[str, Any]:
        """All settings keyed by their Kafka names."""
        return self.model_dump(by_alias=True)


def _kafka_name(loc: tuple) -> str:
    if not loc:
        return "config"
    name = str(loc[0])
    field = CoordinatorConfig.model_fields.get(name)
    if field is not None and field.alias:
        return field.alias
    return name


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if err["loc"]:
            name = _kafka_name(err["loc"])
            if err["type"] == "extra_forbidden":
                parts.append(f"{name}: unknown setting")
            else:
                parts.append(f"{name}: {msg} (got {err.get('input')!r})")
        else:
            parts.append(msg)
    return "; ".join(parts)
