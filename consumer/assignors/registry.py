"""Finding an assignor by name: built-ins, ``package.module:Class`` paths and the ``kgroup.assignors``
entry-point group (mirrors ``partition.assignment.strategy``, which takes Kafka class names)."""

from __future__ import annotations

import importlib
from importlib import metadata
from typing import Callable

from ._types import Assignor
from .range import RangeAssignor
from .roundrobin import RoundRobinAssignor
from .sticky import CooperativeStickyAssignor, StickyAssignor

BUILTIN: dict[str, Callable[[], Assignor]] = {
    "range": RangeAssignor,
    "roundrobin": RoundRobinAssignor,
    "sticky": StickyAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}

# Kafka's class names, so a partition.assignment.strategy value can be used verbatim.
KAFKA_CLASS_NAMES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}

ENTRY_POINT_GROUP = "kgroup.assignors"


class AssignorNotFound(LookupError):
    pass


def _instantiate(obj, spec: str) -> Assignor:
    inst = obj() if isinstance(obj, type) or (callable(obj) and not hasattr(obj, "assign")) else obj
    missing = [a for a in ("name", "assign") if not hasattr(inst, a)]
    if missing:
        raise AssignorNotFound(f"{spec!r} does not look like an assignor (missing {', '.join(missing)})")
    return inst


def get_assignor(spec: str) -> Assignor:
    """A fresh assignor instance for ``spec``.

    ``spec`` is a built-in name (``range``, ``roundrobin``, ``sticky``, ``cooperative-sticky``), a Kafka class
    name (``org.apache.kafka.clients.consumer.StickyAssignor``), a dotted path ``package.module:Class`` (or
    ``package.module.Class``), or the name of an entry point in the ``kgroup.assignors`` group.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise AssignorNotFound(f"assignor name must be a non-empty string, got {spec!r}")
    spec = spec.strip()
    name = KAFKA_CLASS_NAMES.get(spec, spec)
    if name in BUILTIN:
        return BUILTIN[name]()
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name == spec:
            return _instantiate(ep.load(), spec)
    if ":" in spec or "." in spec:
        module_name, _, attr = spec.partition(":") if ":" in spec else spec.rpartition(".")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise AssignorNotFound(f"cannot import module {module_name!r} for assignor {spec!r}: {exc}") from exc
        obj = module
        for part in attr.split("."):
            try:
                obj = getattr(obj, part)
            except AttributeError:
                raise AssignorNotFound(f"module {module_name!r} has no attribute {attr!r}") from None
        return _instantiate(obj, spec)
    known = ", ".join(sorted(BUILTIN))
    raise AssignorNotFound(f"unknown assignor {spec!r}; built-ins are {known}, or give package.module:Class")
