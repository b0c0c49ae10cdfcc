"""Fault control of a running ``kgroup serve``: from Python (:class:`FaultControl`) and over the wire
(:class:`ControlChannel`, used by ``kgroup ctl`` through :class:`client.control.ControlClient`).

What a test can do to a live server while real clients are connected:

=========================  ============================================================================
``stop_broker(b)``         crash a broker: listener and connections closed, leaderships move (``start_broker``)
``move_coordinator(g, b)`` make broker *b* the leader of group *g*'s ``__consumer_offsets`` partition (a
                           controlled leader election: the old coordinator unloads the group, parked requests get
                           ``NOT_COORDINATOR``, the new one loads it from the log)
``expire_member(g, m)``    the member's session expires now (``GroupCoordinator.onExpireHeartbeat``); all
                           members of *g* when *m* is omitted
``drop_heartbeats``        Heartbeat requests of matching members never reach the coordinator: the connection
                           they arrived on is closed, as a network failure between member and coordinator
``drop_member_requests``   every group request of matching members is dropped that way (a partition between
                           member and coordinator; needed when the member commits offsets, since an OffsetCommit
                           extends the session on Kafka as a Heartbeat does)
``delay_heartbeats``       ... reach it ``delay_ms`` later (the connection is held meanwhile, as a slow network)
``fail_next(api, n, err)`` the next *n* requests of an API (optionally of one group) are answered with an error
                           code and not processed (``AbstractRequest.getErrorResponse``)
``freeze_clock()``         stop the coordinator's clock: no session, rebalance or retention timer fires;
                           ``advance_clock(ms)`` moves it forward (firing what falls due), ``thaw_clock()``
                           lets it run again from where it stood -- a virtual coordinator clock under real clients
``clear(rule_id)``         remove one rule (or all rules)
=========================  ============================================================================

Members are matched by ``group`` and ``member``: the member id, or a prefix of it (Kafka member ids are the
client id, ``-`` and a UUID, so a client's ``client.id`` selects it).

Fault control acts on the server only through its public operations (``stop_broker``, ``start_broker``,
``move_coordinator``, ``expire_sessions``, ``freeze_clock`` / ``advance_clock`` / ``thaw_clock``) and its rule set
(``server.fault_rules``, :class:`broker.faultrules.FaultRules`), which the server's request path consults.

The wire channel: a private API key (``protocol.api.CONTROL_API_KEY`` = 32123) on every broker port, never advertised in
ApiVersions. The request is a request header v1 followed by a UTF-8 JSON object ``{"op": ..., args...}``; the
response is the correlation id followed by a UTF-8 JSON object (``{"ok": true, "result": ...}`` or
``{"ok": false, "error": "..."}``). It is **unauthenticated**: it is accepted only from loopback peers (and the
server binds loopback by default), a request from any other address closes the connection.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import struct
from typing import Any

from protocol.api import APIS, ApiKey
from protocol.errors import ErrorCode

from coordinator.cluster import NO_LEADER, OFFSETS_TOPIC

from broker.faultrules import FaultRule

E = ErrorCode
log = logging.getLogger("kgroup.faults")


def api_key(api: int | str) -> int:
    """An API by name (``Heartbeat``, ``offset-commit``) or key; ValueError naming the accepted values."""
    if isinstance(api, int) or (isinstance(api, str) and api.lstrip("-").isdigit()):
        k = int(api)
        if k not in APIS:
            raise ValueError(f"unknown API key {k} (known: {', '.join(str(int(x)) for x in sorted(APIS))})")
        return k
    norm = str(api).replace("_", "").replace("-", "").lower()
    for k, a in APIS.items():
        if a.name.lower() == norm:
            return int(k)
    raise ValueError(f"unknown API {api!r} (known: {', '.join(a.name for a in APIS.values())})")


def error_code(err: int | str) -> int:
    """An error by Kafka name (``REBALANCE_IN_PROGRESS``) or code; ValueError if Kafka has no such error."""
    if isinstance(err, int) or (isinstance(err, str) and err.lstrip("-").isdigit()):
        try:
            return int(ErrorCode(int(err)))
        except ValueError:
            raise ValueError(f"unknown error code {err} (Kafka's codes: -1 to {max(ErrorCode)})") from None
    try:
        return int(ErrorCode[str(err).upper()])
    except KeyError:
        raise ValueError(f"unknown error {err!r} (a Kafka error name such as REBALANCE_IN_PROGRESS or "
                         "NOT_COORDINATOR, or its code)") from None


def _positive_count(count: int | None) -> int | None:
    if count is not None and int(count) < 1:
        raise ValueError(f"count must be >= 1 (got {count})")
    return None if count is None else int(count)


class FaultControl:
    """Fault injection and clock control of one :class:`broker.server.KGroupServer` (``server.faults``)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.svc = server.svc
        self.rules = server.fault_rules

    # --- brokers and coordinators ----------------------------------------------------------------------------

    async def stop_broker(self, broker_id: int) -> dict[str, Any]:
        self._check_broker(broker_id)
        out = await self.server.stop_broker(broker_id)
        return {"leadership_changes": len(out.leadership)}

    async def start_broker(self, broker_id: int) -> dict[str, Any]:
        self._check_broker(broker_id)
        out = await self.server.start_broker(broker_id)
        return {"leadership_changes": len(out.leadership)}

    def _check_broker(self, broker_id: int) -> None:
        if broker_id not in self.server.cluster.brokers:
            raise ValueError(f"no broker {broker_id}")

    def coordinator_of(self, group: str) -> int:
        return self.svc.coordinator_of(group)

    def move_coordinator(self, group: str, broker_id: int) -> dict[str, Any]:
        """Elect ``broker_id`` leader of the group's offsets partition (adding it to the replicas if needed)."""
        cluster = self.server.cluster
        partition = self.svc.partition_for(group)
        ps = cluster.partition(OFFSETS_TOPIC, partition)
        old = ps.leader if ps is not None else NO_LEADER
        self.server.move_coordinator(group, broker_id)  # ValueError (ClusterError) if it cannot
        return {"group": group, "partition": partition, "from": old, "to": broker_id}

    # --- members ---------------------------------------------------------------------------------------------

    def members(self, group: str) -> list[str]:
        """The member ids of a classic or a KIP-848 consumer group."""
        g = self.svc.group(group)
        if g is None:
            g = self.svc.consumer_group(group)
        return [] if g is None else sorted(g.members)

    def describe(self, group: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"brokers": {b: self.server.cluster.is_alive(b) for b in self.server.cluster.brokers},
                               "clock_ms": self.server.now_ms(), "frozen": self.server.clock.frozen,
                               "rules": [r.as_dict() for r in self.rules]}
        if group is not None:
            g = self.svc.group(group)
            cg = self.svc.consumer_group(group) if g is None else None
            out["group"] = {"group": group, "coordinator": self.coordinator_of(group),
                            "state": str(g.state) if g is not None else str(cg.state) if cg is not None else None,
                            "generation": getattr(g, "generation_id", None) if g is not None else None,
                            "members": self.members(group)}
            if cg is not None:  # a KIP-848 consumer group: its epochs instead of a generation
                out["group"].update(type="consumer", group_epoch=cg.group_epoch,
                                    assignment_epoch=cg.assignment_epoch)
        return out

    def _match_members(self, group: str, member: str | None) -> list[str]:
        ms = self.members(group)
        if member is None:
            return ms
        return [m for m in ms if m.startswith(member)]  # the member id, or a prefix of it (the client id)

    def expire_member(self, group: str, member: str | None = None) -> list[str]:
        """Expire the session of matching members now (``onExpireHeartbeat``); returns the member ids."""
        if self.svc.shard_for(group) is None:
            raise ValueError(f"group {group!r} is not loaded on a live coordinator")
        if self.svc.group(group) is None and self.svc.consumer_group(group) is None:
            raise ValueError(f"group {group!r} does not exist")
        ids = self._match_members(group, member)
        if not ids:
            raise ValueError(f"no member of {group!r} matches {member!r}")
        self.server.expire_sessions(group, ids)
        return ids

    # --- request rules ---------------------------------------------------------------------------------------

    def drop_heartbeats(self, group: str, member: str | None = None, count: int | None = None) -> int:
        return self.rules.add(FaultRule("drop", api=int(ApiKey.HEARTBEAT), group=group, member=member,
                                        count=_positive_count(count)))

    def drop_member_requests(self, group: str, member: str, count: int | None = None) -> int:
        """Every group request carrying a matching member id (Heartbeat, JoinGroup, SyncGroup, OffsetCommit, ...)
        is dropped: a network partition between the member and its coordinator. Unlike ``drop_heartbeats`` this
        also stops offset commits, which extend a member's session on Kafka as heartbeats do."""
        if not member:
            raise ValueError("drop_member_requests needs a member id or prefix")
        return self.rules.add(FaultRule("drop", group=group, member=member, count=_positive_count(count)))

    def delay_heartbeats(self, group: str, member: str | None, delay_ms: int, count: int | None = None) -> int:
        if not 0 <= int(delay_ms) <= 2**31 - 1:  # a Kafka millisecond setting is an int
            raise ValueError(f"delay_ms must be in 0..2147483647 (got {delay_ms})")
        return self.rules.add(FaultRule("delay", api=int(ApiKey.HEARTBEAT), group=group, member=member,
                                        count=_positive_count(count), delay_ms=int(delay_ms)))

    def fail_next(self, api: int | str, count: int, error: int | str, group: str | None = None) -> int:
        code = error_code(error)
        return self.rules.add(FaultRule("fail", api=api_key(api), group=group, count=_positive_count(count),
                                        error=code))

    def clear(self, rule_id: int | None = None) -> int:
        """Remove one rule, or all; returns how many were removed. Raises ValueError for a rule that does not
        exist (a typo must not pass for success)."""
        if rule_id is not None and all(r.rule_id != int(rule_id) for r in self.rules):
            active = ", ".join(str(r.rule_id) for r in self.rules) or "none"
            raise ValueError(f"no fault rule {rule_id} (active rules: {active})")
        return self.rules.clear(None if rule_id is None else int(rule_id))

    # --- the coordinator clock -------------------------------------------------------------------------------

    def freeze_clock(self) -> int:
        """Stop the coordinator's clock (returns its time in ms). Requests are handled at the frozen time."""
        return self.server.freeze_clock()

    def advance_clock(self, ms: int) -> int:
        """Move the coordinator's clock forward by ``ms``, firing every timer that falls due."""
        return self.server.advance_clock(ms)

    def thaw_clock(self) -> int:
        """Let the clock run again from the frozen time."""
        return self.server.thaw_clock()

    # --- the JSON command set (ControlChannel, kgroup ctl) ---------------------------------------------------

    async def command(self, cmd: dict[str, Any]) -> Any:
        op = cmd.get("op")
        a = {k: v for k, v in cmd.items() if k != "op"}
        if op == "stop_broker":
            return await self.stop_broker(int(a["broker"]))
        if op == "start_broker":
            return await self.start_broker(int(a["broker"]))
        if op == "move_coordinator":
            return self.move_coordinator(a["group"], int(a["broker"]))
        if op == "coordinator":
            return self.coordinator_of(a["group"])
        if op == "expire_member":
            return self.expire_member(a["group"], a.get("member"))
        if op == "drop_heartbeats":
            return self.drop_heartbeats(a["group"], a.get("member"), a.get("count"))
        if op == "drop_member_requests":
            return self.drop_member_requests(a["group"], a["member"], a.get("count"))
        if op == "delay_heartbeats":
            return self.delay_heartbeats(a["group"], a.get("member"), int(a["delay_ms"]), a.get("count"))
        if op == "fail_next":
            return self.fail_next(a["api"], int(a.get("count", 1)), a["error"], a.get("group"))
        if op == "clear":
            return self.clear(a.get("rule"))
        if op == "freeze_clock":
            return self.freeze_clock()
        if op == "advance_clock":
            return self.advance_clock(int(a["ms"]))
        if op == "thaw_clock":
            return self.thaw_clock()
        if op == "describe":
            return self.describe(a.get("group"))
        raise ValueError(f"unknown op {op!r}")


def _is_loopback(peer: str) -> bool:
    host = peer.rsplit(":", 1)[0].strip("[]")
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ControlChannel:
    """The server side of the private control API (see the module docstring)."""

    def __init__(self, server: Any) -> None:
        self.server = server

    async def handle(self, conn: Any, header: Any, data: bytes, pos: int) -> bytes | None:
        if not _is_loopback(conn.peer):
            log.warning("%s: control request from a non-loopback peer refused; closing", conn)
            return None
        try:
            cmd = json.loads(bytes(data[pos:]).decode("utf-8"))
            if not isinstance(cmd, dict):
                raise ValueError("the command must be a JSON object")
            result = await self.server.faults.command(cmd)
            reply = {"ok": True, "result": result}
        except Exception as e:  # noqa: BLE001 - a bad command is answered, never fatal
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        payload = struct.pack(">i", header.correlation_id) + json.dumps(reply, default=str).encode()
        return struct.pack(">i", len(payload)) + payload
