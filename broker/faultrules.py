"""Fault rules, sans-IO: what to do to a message that matches -- drop it, delay it, duplicate it, hold it back behind
the next one (reorder), or fail it with an error code -- matched by API, group, member, client, broker, direction,
time window, probability, and for KIP-848's ConsumerGroupHeartbeat responses by *phase* and *epoch*: the response
that carries an epoch bump or an assignment, or the one of a given member epoch (the caller says which phases a
message is in).

One model for both places that break the network on purpose:

* **fault control of a running server** (broker/faults.py, ``kgroup ctl``): rules on the requests that reach the
  broker, matched by API, the request's group(s) and member id (or a prefix of it: Kafka member ids are the
  client id, ``-`` and a UUID). The first matching rule applies (:meth:`FaultRules.take`), so rules queued for
  the same requests apply one after the other.
* **the simulator's network** (scenarios/): rules on requests and responses of one consumer (``client``: its
  client id), to some brokers, during a time window, with a probability; every matching rule applies
  (:meth:`FaultRules.all`): delays add up, any drop drops.

A rule with ``count`` applies to that many more messages, then is used up (removed by ``take``; skipped by
``all``). Nothing here reads a clock or draws randomness itself: the caller passes ``now_ms`` and a ``draw``
function (the simulator's seeded stream), so a run stays a pure function of its seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from protocol.api import APIS

#: what a rule does to a matching message
ACTIONS = ("drop", "delay", "duplicate", "fail", "reorder")
#: phases of a ConsumerGroupHeartbeat response a rule can aim at: it raises the member's epoch (a new target
#: assignment epoch reached, or a (re)join answered), or it carries an assignment (a new target to reconcile to)
PHASES = ("epoch_bump", "assignment")


@dataclass(slots=True)
class FaultRule:
    action: str                         # one of ACTIONS
    api: int | None = None              # API key; None: every API
    group: str | None = None            # the request is about this group (server rules)
    member: str | None = None           # the request's member id equals it or starts with it (server rules)
    client: str | None = None           # the message belongs to this client (simulator: the consumer's name)
    brokers: frozenset[int] | None = None  # to/from these brokers; None: every broker
    requests: bool = True               # applies to requests (client -> broker)
    responses: bool = False             # applies to responses (broker -> client)
    until_ms: int | None = None         # applies while now_ms < until_ms; None: until removed
    probability: float = 1.0            # applies to a matching message with this probability
    count: int | None = None            # applies to this many more messages; None: unlimited
    error: int = 0                      # fail: the error code of the answer
    delay_ms: int = 0                   # delay: how much later the message arrives; reorder: the longest hold
    phases: frozenset[str] | None = None  # only messages in one of these phases (PHASES); None: any message
    epoch: int | None = None            # only ConsumerGroupHeartbeat responses of this member epoch
    rule_id: int = 0

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown fault action {self.action!r} (accepted: {', '.join(ACTIONS)})")

    def used_up(self) -> bool:
        return self.count is not None and self.count <= 0

    def as_dict(self) -> dict[str, Any]:
        """The server's view of a rule (``kgroup ctl describe``)."""
        return {"id": self.rule_id, "kind": self.action, "api": APIS[self.api].name if self.api is not None else None,
                "group": self.group, "member": self.member, "remaining": self.count, "error": self.error,
                "delay_ms": self.delay_ms}


def request_groups(body: Any) -> list[str]:
    """The group ids a request is about: its ``group_id``, its ``groups`` (DescribeGroups, DeleteGroups,
    OffsetFetch v8+), or its coordinator keys (FindCoordinator)."""
    gid = getattr(body, "group_id", None)
    if gid:
        return [gid]
    groups = getattr(body, "groups", None)
    if groups:
        return [g if isinstance(g, str) else getattr(g, "group_id", "") for g in groups]
    if type(body).__name__ == "FindCoordinatorRequest":
        keys = getattr(body, "coordinator_keys", None) or []
        return [body.key] + list(keys) if getattr(body, "key", None) else list(keys)
    return []


class FaultRules:
    """An ordered set of rules (oldest first)."""

    def __init__(self) -> None:
        self.rules: list[FaultRule] = []
        self._next_id = 0
        #: set by :meth:`all`: a matching ``reorder`` rule holds the message back up to this long (0: none)
        self.held = 0

    def __bool__(self) -> bool:
        return bool(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def __iter__(self) -> Iterator[FaultRule]:
        return iter(self.rules)

    def add(self, rule: FaultRule) -> int:
        """Add a rule; returns its id (1, 2, ...)."""
        self._next_id += 1
        rule.rule_id = self._next_id
        self.rules.append(rule)
        return rule.rule_id

    def clear(self, rule_id: int | None = None) -> int:
        """Remove one rule (or every rule when ``rule_id`` is None); returns how many were removed."""
        before = len(self.rules)
        self.rules = [r for r in self.rules if rule_id is not None and r.rule_id != rule_id]
        return before - len(self.rules)

    def take(self, api: int, body: Any) -> FaultRule | None:
        """Server rules: the first rule matching a request that reached a broker (by API, group, member id); its
        count is used once, and a used-up rule is removed."""
        groups: list[str] | None = None
        member_id: str | None = None
        for r in self.rules:
            if not r.requests or (r.api is not None and r.api != api):
                continue
            if r.group is not None:
                if groups is None:
                    groups = request_groups(body)
                if r.group not in groups:
                    continue
            if r.member is not None:
                if member_id is None:
                    member_id = getattr(body, "member_id", None) or ""
                if not member_id.startswith(r.member):  # (equal, or a prefix: the client id)
                    continue
            if r.count is not None:
                r.count -= 1
                if r.count <= 0:
                    self.rules.remove(r)
            return r
        return None

    def all(self, api: int, client: str, broker: int, response: bool, now_ms: int,
            draw: Callable[[], float], phases: frozenset = frozenset(),
            epoch: int | None = None) -> tuple[bool, int, bool]:
        """Simulator rules: every rule matching a message of ``client`` to/from ``broker`` applies (a rule with a
        probability below 1 applies when ``draw()`` falls below it; ``draw`` is called only for rules that match
        otherwise, in rule order). ``phases`` and ``epoch`` describe a ConsumerGroupHeartbeat response (rules aimed
        at a phase or an epoch match nothing else). Returns (drop, total delay in ms, duplicate); a matching
        ``reorder`` rule leaves its hold (the longest) in :attr:`held`."""
        drop = False
        delay = 0
        dup = False
        self.held = 0
        for r in self.rules:
            if r.until_ms is not None and r.until_ms <= now_ms:
                continue
            if r.client is not None and r.client != client:
                continue
            if r.brokers is not None and broker not in r.brokers:
                continue
            if r.api is not None and r.api != api:
                continue
            if not (r.responses if response else r.requests):
                continue
            if r.count is not None and r.count <= 0:
                continue
            if r.phases is not None and not (r.phases & phases):
                continue
            if r.epoch is not None and r.epoch != epoch:
                continue
            if r.probability < 1.0 and draw() >= r.probability:
                continue
            if r.count is not None:
                r.count -= 1
            action = r.action
            if action == "drop":
                drop = True
            elif action == "delay":
                delay += r.delay_ms
            elif action == "duplicate":
                dup = True
            elif action == "reorder":
                self.held = max(self.held, r.delay_ms)
        return drop, delay, dup
