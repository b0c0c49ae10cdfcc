"""Fault control of a running ``kgroup serve``: from Python (:class:`FaultControl`) and over the wire
(:class:`ControlChannel`, used by ``kgroup ctl`` through :class:`client.control.ControlClient`).

What a test can do to a live server while real clients are connected:

=========================  ============================================================================
``stop_broker(b)``         crash a broker: listener and connections closed, leaderships move (``start_broker``)
``move_coordinator(g, b)`` make broker *b* the leader of group *g*'s ``__consumer_offsets`` partition (a
                           controlled leader election: the old coordinator unloads the group, parked requests get
                           ``NOT_COORDINATOR``, the new one loads it from the log)
``expire_member(g, m)``    fire the member's session timer now (``GroupCoordinator.onExpireHeartbeat``); all
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

The wire channel: a private API key (``protocol.api.CONTROL_API_KEY`` = 32123) on every broker port, never advertised in
ApiVersions. The request is a request header v1 followed by a UTF-8 JSON object ``{"op": ..., args...}``; the
response is the correlation id followed by a UTF-8 JSON object (``{"ok": true, "result": ...}`` or
``{"ok": false, "error": "..."}``). It is **unauthenticated**: it is accepted only from loopback peers (and the
server binds loopback by default), a request from any other address closes the connection.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import struct
from dataclasses import dataclass
from typing import Any

from protocol import error_responses
from protocol.api import APIS, ApiKey
from protocol.errors import ErrorCode

from coordinator.cluster import OFFSETS_TOPIC
from coordinator.timers import session_timer

from broker.datapath import NO_RESPONSE

E = ErrorCode
log = logging.getLogger("kgroup.faults")


@dataclass
class Rule:
    rule_id: int
    kind: str                       # "drop", "delay", "fail"
    api: int | None = None
    group: str | None = None
    member: str | None = None
    count: int | None = None        # remaining (None: unlimited)
    error: int = 0
    delay_ms: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.rule_id, "kind": self.kind, "api": APIS[self.api].name if self.api is not None else None,
                "group": self.group, "member": self.member, "remaining": self.count, "error": self.error,
                "delay_ms": self.delay_ms}


def _api_key(api: int | str) -> int:
    if isinstance(api, int) or (isinstance(api, str) and api.lstrip("-").isdigit()):
        k = int(api)
        if k not in APIS:
            raise ValueError(f"unknown API key {k}")
        return k
    norm = str(api).replace("_", "").replace("-", "").lower()
    for k, a in APIS.items():
        if a.name.lower() == norm:
            return int(k)
    raise ValueError(f"unknown API {api!r}")


def _error_code(err: int | str) -> int:
    if isinstance(err, int) or (isinstance(err, str) and err.lstrip("-").isdigit()):
        return int(ErrorCode(int(err)))
    return int(ErrorCode[str(err).upper()])


def _groups_of(body: Any) -> list[str]:
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


class FaultControl:
    """Fault injection and clock control of one :class:`broker.server.KGroupServer` (``server.plane``)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.svc = server.svc
        self.rules: list[Rule] = []
        self._next_rule = 0
        self._frozen: list[int] | None = None

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
        self._check_broker(broker_id)
        if not cluster.is_alive(broker_id):
            raise ValueError(f"broker {broker_id} is stopped")
        ps = cluster.partition(OFFSETS_TOPIC, cluster.offsets_partition_for(group))
        if ps is None:
            raise ValueError("__consumer_offsets does not exist yet")
        old = ps.leader

        def op():
            changes: list = []
            if broker_id not in ps.replicas:  # a reassignment (kafka-reassign-partitions) then an election
                ps.replicas.append(broker_id)
            if broker_id not in ps.isr:
                ps.isr.append(broker_id)
            cluster._set_leader(ps, broker_id, changes)
            return changes

        out = self.svc._leadership_op(self.server.now_ms(), op)
        self.server._apply(out)
        return {"group": group, "partition": ps.partition, "from": old, "to": broker_id}

    # --- members ---------------------------------------------------------------------------------------------

    def members(self, group: str) -> list[str]:
        g = self.svc.group(group)
        return [] if g is None else sorted(g.members)

    def describe(self, group: str | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"brokers": {b: self.server.cluster.is_alive(b) for b in self.server.cluster.brokers},
                               "clock_ms": self.server.now_ms(), "frozen": self._frozen is not None,
                               "rules": [r.as_dict() for r in self.rules]}
        if group is not None:
            g = self.svc.group(group)
            out["group"] = {"group": group, "coordinator": self.coordinator_of(group),
                            "state": str(g.state) if g is not None else None,
                            "generation": getattr(g, "generation_id", None) if g is not None else None,
                            "members": self.members(group)}
        return out

    def _match_members(self, group: str, member: str | None) -> list[str]:
        ms = self.members(group)
        if member is None:
            return ms
        return [m for m in ms if m == member or m.startswith(member)]

    def expire_member(self, group: str, member: str | None = None) -> list[str]:
        """Expire the session of matching members now (``onExpireHeartbeat``); returns the member ids."""
        shard = self.svc.shard_for(group)
        if shard is None:
            raise ValueError(f"group {group!r} is not loaded on a live coordinator")
        if self.svc.group(group) is None:
            raise ValueError(f"group {group!r} does not exist")
        ids = self._match_members(group, member)
        if not ids:
            raise ValueError(f"no member of {group!r} matches {member!r}")
        now = self.server.now_ms()
        for mid in ids:
            key, action = session_timer(group, mid)
            shard.timers.schedule(key, now, action)
        out = self.svc.poll(now)
        self.server._apply(out)
        return ids

    # --- request rules ---------------------------------------------------------------------------------------

    def _add(self, rule: Rule) -> int:
        self._next_rule += 1
        rule.rule_id = self._next_rule
        self.rules.append(rule)
        self.server.fault_active = True
        return rule.rule_id

    def drop_heartbeats(self, group: str, member: str | None = None, count: int | None = None) -> int:
        return self._add(Rule(0, "drop", int(ApiKey.HEARTBEAT), group, member, count))

    def drop_member_requests(self, group: str, member: str, count: int | None = None) -> int:
        """Every group request carrying a matching member id (Heartbeat, JoinGroup, SyncGroup, OffsetCommit, ...)
        is dropped: a network partition between the member and its coordinator. Unlike ``drop_heartbeats`` this
        also stops offset commits, which extend a member's session on Kafka as heartbeats do."""
        if not member:
            raise ValueError("drop_member_requests needs a member id or prefix")
        return self._add(Rule(0, "drop", None, group, member, count))

    def delay_heartbeats(self, group: str, member: str | None, delay_ms: int, count: int | None = None) -> int:
        return self._add(Rule(0, "delay", int(ApiKey.HEARTBEAT), group, member, count, delay_ms=int(delay_ms)))

    def fail_next(self, api: int | str, count: int, error: int | str, group: str | None = None) -> int:
        code = _error_code(error)
        if count < 1:
            raise ValueError("count must be >= 1")
        return self._add(Rule(0, "fail", _api_key(api), group, None, int(count), error=code))

    def clear(self, rule_id: int | None = None) -> int:
        before = len(self.rules)
        self.rules = [r for r in self.rules if rule_id is not None and r.rule_id != rule_id]
        self.server.fault_active = bool(self.rules)
        return before - len(self.rules)

    def _find(self, key: int, body: Any) -> Rule | None:
        for r in self.rules:
            if r.api is not None and r.api != key:
                continue
            if r.group is not None and r.group not in _groups_of(body):
                continue
            if r.member is not None:
                mid = getattr(body, "member_id", None) or ""
                if not (mid == r.member or mid.startswith(r.member)):
                    continue
            return r
        return None

    async def intercept(self, conn: Any, key: int, version: int, body: Any) -> Any:
        """None: handle the request normally; NO_RESPONSE: close the connection; else the response to send."""
        r = self._find(key, body)
        if r is None:
            return None
        if r.count is not None:
            r.count -= 1
            if r.count <= 0:
                self.rules.remove(r)
                self.server.fault_active = bool(self.rules)
        if r.kind == "drop":
            log.info("fault: dropping %s v%d on %s", APIS[key].name, version, conn)
            return NO_RESPONSE
        if r.kind == "delay":
            await asyncio.sleep(r.delay_ms / 1000.0)
            return None
        log.info("fault: failing %s v%d with %s", APIS[key].name, version, ErrorCode(r.error).name)
        return error_response(key, version, body, r.error)

    # --- the coordinator clock -------------------------------------------------------------------------------

    def _reset_timer(self) -> None:
        s = self.server
        if s._timer is not None:
            s._timer.cancel()
        s._timer = None
        s._timer_deadline = None

    def freeze_clock(self) -> int:
        """Stop the coordinator's clock (returns its time in ms). Requests are handled at the frozen time."""
        s = self.server
        if self._frozen is None:
            self._frozen = [s.now_ms()]
            frozen = self._frozen
            s.now_ms = lambda: frozen[0]                 # instance attributes shadow the methods
            s._rearm_timer = lambda: None                 # nothing fires while frozen
            self._reset_timer()
        return self._frozen[0]

    def advance_clock(self, ms: int) -> int:
        """Move the coordinator's clock forward by ``ms``, firing every timer that falls due."""
        if ms < 0:
            raise ValueError("the clock only moves forward")
        s = self.server
        if self._frozen is not None:
            self._frozen[0] += int(ms)
            s._apply(self.svc.poll(self._frozen[0]))
            return self._frozen[0]
        s._anchor_ms += int(ms)
        self._reset_timer()
        s._apply(self.svc.poll(s.now_ms()))
        return s.now_ms()

    def thaw_clock(self) -> int:
        """Let the clock run again from the frozen time."""
        s = self.server
        if self._frozen is None:
            return s.now_ms()
        t = self._frozen[0]
        self._frozen = None
        del s.now_ms
        del s._rearm_timer
        loop = s._loop or asyncio.get_running_loop()
        s._anchor_ms = t - int((loop.time() - s._anchor_loop) * 1000)
        s._last_ms = t
        self._reset_timer()
        s._rearm_timer()
        return s.now_ms()

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


def error_response(key: int, version: int, body: Any, code: int) -> Any:
    """The response Kafka's ``AbstractRequest.getErrorResponse`` builds: ``code`` everywhere a request can fail."""
    return error_responses.error_response(key, version, body, code)


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
