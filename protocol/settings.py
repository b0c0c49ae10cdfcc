"""Settings with Kafka's dotted names: the one base of the broker's and the consumer's configuration.

Kafka defines every setting once (``ConfigDef``: name, type, default, validator, documentation) and rejects a bad
value with a ``ConfigException`` that names the setting. kgroup's settings classes
(``coordinator.config.CoordinatorConfig``, ``consumer.config.ConsumerConfig``) are pydantic models built on
:class:`KafkaSettings`:

* each field has a Python name (``session_timeout_ms``) and Kafka's name as its alias (``session.timeout.ms``),
  declared with :func:`setting`; both names are accepted;
* :meth:`KafkaSettings.create` validates and raises :class:`ConfigError` (Kafka's ``ConfigException``) whose
  message names each offending setting by its Kafka name, e.g. ``group.max.size: Input should be greater than or
  equal to 1 (got 0)``; unknown names are refused (``... : unknown setting``);
* :meth:`KafkaSettings.kafka_settings` lists every value under its Kafka name.

Models are frozen: a configuration is a value.
"""

from __future__ import annotations

from typing import Any, Mapping, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

INT32_MAX = 2**31 - 1

_S = TypeVar("_S", bound="KafkaSettings")


class ConfigError(ValueError):
    """An invalid setting (Kafka's ``ConfigException``); the message starts with the setting's Kafka name."""


def setting(default: Any, kafka_name: str, doc: str, **constraints: Any) -> Any:
    """A field with Kafka's name as alias and its documentation (``ConfigDef.define``); ``constraints`` are
    pydantic's (``ge=0``, ``min_length=1``...). ``...`` as default makes the setting required."""
    return Field(default, alias=kafka_name, description=doc, **constraints)


class KafkaSettings(BaseModel):
    """Base of a settings class whose fields are declared with :func:`setting`."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    @classmethod
    def create(cls: type[_S], settings: Mapping[str, Any] | None = None, **kwargs: Any) -> _S:
        """Build from Kafka names and/or Python names; raises :class:`ConfigError` naming the bad setting."""
        data = dict(settings or {})
        data.update(kwargs)
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(explain(cls, exc)) from None

    def kafka_settings(self) -> dict[str, Any]:
        """All settings keyed by their Kafka names."""
        return self.model_dump(by_alias=True)

    @classmethod
    def kafka_name(cls, name: str) -> str:
        """Kafka's name of the field ``name`` (``name`` itself if it is not a field, e.g. a misspelt setting)."""
        field = cls.model_fields.get(name)
        return field.alias if field is not None and field.alias else name


def explain(cls: type[KafkaSettings], exc: ValidationError) -> str:
    """One line naming every offending setting by its Kafka name (the cross-field checks' own messages as is)."""
    parts = []
    for err in exc.errors():
        msg = err["msg"]
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        if not err["loc"]:
            parts.append(msg)
            continue
        name = cls.kafka_name(str(err["loc"][0]))
        if err["type"] == "extra_forbidden":
            parts.append(f"{name}: unknown setting")
        elif err["type"] == "missing":
            parts.append(f"{name}: required setting is missing")
        else:
            parts.append(f"{name}: {msg} (got {err.get('input')!r})")
    return "; ".join(parts)
