"""The live web view of ``kgroup serve --ui HOST:PORT``: groups, members, partitions, lag and each group's rebalance
timeline as it happens, with fault-control buttons.

Theory of operation
-------------------
* **One loop.** A standard-library HTTP/1.1 server on asyncio streams (``asyncio.start_server``) on the server's
  own event loop: it reads the server's state between two requests, so what it shows is consistent, and it needs no
  thread or lock. Pages and scripts are package data (``kgroup/web/``: plain HTML, CSS, JS and the SVG the server
  draws); nothing is loaded from the network.
* **What it shows.** ``/api/state`` (JSON): the brokers, the coordinator clock, and per group its type, state,
  generation (a KIP-848 group: its group epoch and target assignment epoch), protocol type, assignor (the selected
  protocol, or the server assignor), leader, coordinator and members (client id, host, instance id, partitions; a
  KIP-848 member also its epoch, state, target and partitions pending revocation), and per partition the committed
  offset, the log end offset and the lag -- read from the coordinator service and the data path in this process. ``/api/events`` streams the same JSON (server-sent events)
  whenever it changes (checked every 250 ms). ``/api/timeline?group=G`` is the group's rebalance Gantt, partition
  ownership and lag charts as SVG: **the analysis report's own drawing code** (``analysis.report.group_charts``)
  over **the analysis's own fold** (``analysis.fold.fold_group``) of the group's records so far, from the group's
  first record to now -- so it grows as the group rebalances. A KIP-848 consumer group has no rebalance phase to
  draw: its timeline is the group and target assignment epochs as steps and each member's state lane
  (:func:`epoch_timeline`), from the group's ``ConsumerGroup*`` records.
* **Where the records come from.** A listener (``server.add_listener``) keeps each group's records (the coordinator's
  own, as they are appended; at start the records already in the logs, e.g. after a restart with ``--data-dir``)
  and its offset commits; the log end offsets are sampled once a second for the lag chart.
* **Fault control** (``POST /api/control``, JSON ``{"op": ...}``): expire a member's session, move a group's
  coordinator, freeze / advance / thaw the coordinator clock -- the operations of ``kgroup ctl`` that do not take a
  broker down (``broker.faults.FaultControl``). Accepted only from loopback peers, only as ``application/json``
  (a cross-site form or ``text/plain`` POST is refused) and only when an ``Origin`` header, if any, names this view:
  a web page elsewhere cannot drive it. Everything else is read-only.

Why in ``kgroup/`` and not ``broker/``: the view draws with ``analysis/``'s charts, and ``broker/`` may not import
``analysis/`` (docs/architecture.md); like the CLI it is a face over the server's public operations.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import time
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from analysis import lag as L
from analysis.fold import COLUMNS, fold_group
from analysis.report import group_charts, kind_of
from coordinator.records import LogEntry
from protocol.consumer_protocol import decode_assignment

log = logging.getLogger("kgroup.webview")

RUN = "live"
MAX_RECORDS = 50_000          # per group: the timeline covers at most this many of its latest records
MAX_HEADER = 16 * 1024
MAX_BODY = 64 * 1024
STATIC = {"/": ("index.html", "text/html; charset=utf-8"), "/index.html": ("index.html", "text/html; charset=utf-8"),
          "/app.js": ("app.js", "text/javascript; charset=utf-8"), "/style.css": ("style.css", "text/css; charset=utf-8")}
CONTROL_OPS = ("expire_member", "move_coordinator", "freeze_clock", "advance_clock", "thaw_clock")


def _partitions(assignment: bytes) -> list[list[Any]]:
    if not assignment:
        return []
    try:
        _, a = decode_assignment(assignment)
    except Exception:  # noqa: BLE001 - not ConsumerProtocol bytes
        return []
    return sorted([t, p] for t, ps in a.assigned_partitions for p in ps)


def _topic_names(cluster: Any) -> dict[str, str]:
    """Topic id (the records' base64 form) -> name, for the topics the cluster has."""
    from coordinator.cluster import topic_id
    from protocol.uuids import uuid_to_string
    return {uuid_to_string(topic_id(n)): n for n in cluster.topics}


def _named(parts: Any, names: dict[str, str]) -> list[list[Any]]:
    """{topic id: partitions} -> sorted [topic, partition] pairs (an unknown id stays as it is)."""
    return sorted([names.get(t, t), q] for t, ps in dict(parts).items() for q in ps)


MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 127: "UNKNOWN"}
_STATE_COLOURS = {"STABLE": "#2e7d32", "UNREVOKED_PARTITIONS": "#d95f02", "UNRELEASED_PARTITIONS": "#7570b3",
                  "UNKNOWN": "#999", "LEFT (-2)": "#bbb"}


def epoch_timeline(group: str, rows: list[tuple[int, Any]], now_ms: int, names: dict[str, str]) -> str:
    """A KIP-848 group's epochs over time from its records (there is no stop-the-world phase to draw): an SVG
    with the group epoch and target assignment epoch as steps and one lane per member coloured by its
    ``MemberState`` (labelled with its member epoch), then the events as a table (newest first)."""
    from html import escape

    t0 = rows[0][0]
    span = max(1, now_ms - t0)
    members: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    lanes: dict[str, list[tuple[int, int | None, str, int]]] = {}   # member -> (start, end, state, epoch)
    group_steps: list[tuple[int, int]] = []
    target_steps: list[tuple[int, int]] = []
    events: list[tuple[int, str]] = []

    def close_lane(mid: str, ts: int) -> None:
        lane = lanes.get(mid)
        if lane and lane[-1][1] is None:
            lane[-1] = (lane[-1][0], ts, lane[-1][2], lane[-1][3])

    for ts, r in rows:
        t = r.TYPE
        if t == "ConsumerGroupMetadata":
            group_steps.append((ts, r.epoch))
            events.append((ts, f"group epoch {r.epoch}"))
        elif t == "ConsumerGroupTargetAssignmentMetadata":
            target_steps.append((ts, r.assignment_epoch))
            events.append((ts, f"target assignment epoch {r.assignment_epoch}"))
        elif t == "ConsumerGroupMemberMetadata" and r.member_id not in members:
            members[r.member_id] = {"client_id": r.client_id}
            order.append(r.member_id)
            proto = "classic" if r.classic_member_metadata is not None else "consumer"
            events.append((ts, f"member {r.client_id or r.member_id} ({r.member_id}) joined ({proto} protocol)"))
        elif t == "ConsumerGroupCurrentMemberAssignment" and r.member_id in members:
            state = "LEFT (-2)" if r.member_epoch == -2 else MEMBER_STATES.get(r.state, str(r.state))
            close_lane(r.member_id, ts)
            lanes.setdefault(r.member_id, []).append((ts, None, state, r.member_epoch))
            owned = _named({x.topic_id: x.partitions for x in r.assigned_partitions}, names)
            pending = _named({x.topic_id: x.partitions for x in r.partitions_pending_revocation}, names)
            text = (f"member {members[r.member_id]['client_id'] or r.member_id}: epoch {r.member_epoch} {state}, "
                    f"owns {_pairs(owned)}")
            events.append((ts, text + (f", revoking {_pairs(pending)}" if pending else "")))
        elif t == "ConsumerGroupMemberMetadataTombstone" and r.member_id in members:
            close_lane(r.member_id, ts)
            events.append((ts, f"member {members[r.member_id]['client_id'] or r.member_id} removed"))
            members[r.member_id]["gone"] = True
        elif t == "ConsumerGroupMetadataTombstone":
            events.append((ts, "group deleted"))

    width, left, lane_h = 760, 150, 18
    x = lambda ts: left + (ts - t0) * (width - left - 10) / span  # noqa: E731
    height = 60 + lane_h * len(order) + 20
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
           f'aria-label="epochs of consumer group {escape(group)}" font-family="sans-serif" font-size="11">']
    top_epoch = max([e for _, e in group_steps + target_steps] + [1])

    def steps(pts: list[tuple[int, int]], colour: str, label: str, dy: int) -> None:
        if not pts:
            return
        y = lambda ep: 50 - 40 * ep / top_epoch  # noqa: E731
        d = []
        for i, (ts, ep) in enumerate(pts):
            nxt = pts[i + 1][0] if i + 1 < len(pts) else now_ms
            d.append(f"M{x(ts):.1f},{y(ep):.1f} H{x(nxt):.1f}")
        out.append(f'<path d="{" ".join(d)}" stroke="{colour}" stroke-width="2" fill="none"/>')
        out.append(f'<text x="4" y="{20 + dy}" fill="{colour}">{label} {pts[-1][1]}</text>')

    steps(group_steps, "#1f78b4", "group epoch", 0)
    steps(target_steps, "#33a02c", "target epoch", 14)
    for i, mid in enumerate(order):
        y0 = 60 + i * lane_h
        name = members[mid]["client_id"] or mid[:8]
        out.append(f'<text x="4" y="{y0 + 12}" class="lane">{escape(name)}</text>')
        for start, end, state, epoch in lanes.get(mid, []):
            x0, x1 = x(start), x(end if end is not None else now_ms)
            out.append(f'<rect x="{x0:.1f}" y="{y0}" width="{max(1.0, x1 - x0):.1f}" height="{lane_h - 4}" '
                       f'fill="{_STATE_COLOURS.get(state, "#999")}" data-member="{escape(mid)}" '
                       f'data-state="{state}" data-epoch="{epoch}"><title>{escape(name)}: epoch {epoch} {state}'
                       f'</title></rect>')
    out.append(f'<text x="{left}" y="{height - 4}" fill="#666">0 s</text>'
               f'<text x="{width - 60}" y="{height - 4}" fill="#666">{span / 1000:.1f} s</text></svg>')
    legend = " ".join(f'<span style="color:{c}">&#9632; {s}</span>' for s, c in _STATE_COLOURS.items())
    table = ['<table class="epochs"><thead><tr><th>time (s)</th><th>event</th></tr></thead><tbody>']
    for ts, text in reversed(events[-200:]):
        table.append(f"<tr><td>{(ts - t0) / 1000:.3f}</td><td>{escape(text)}</td></tr>")
    table.append("</tbody></table>")
    return (f'<p class="kind">KIP-848 consumer group: epochs and member states from the coordinator\'s records '
            f'(no stop-the-world phase: members keep what the target lets them keep)</p><p class="kind">{legend}</p>'
            f'<div class="chart">{"".join(out)}</div>' + "".join(table))


def _pairs(parts: list[list[Any]]) -> str:
    by: dict[str, list[int]] = {}
    for t, q in parts:
        by.setdefault(t, []).append(q)
    return " ".join(f"{t}-[{','.join(str(q) for q in sorted(qs))}]" for t, qs in sorted(by.items())) or "(none)"


def _fold_row(e: LogEntry) -> tuple:
    """A record as ``analysis.fold``'s input tuple (``analysis.fold.FIELDS``)."""
    r = e.record
    members = getattr(r, "members", None)
    if members is not None:
        members = [json.dumps({"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                               "client_id": m.client_id, "assignment": {"hex": m.assignment.hex()}})
                   if not isinstance(m, str) else m for m in members]
    return (RUN, r.group_id, e.timestamp_ms, e.partition, e.offset, r.TYPE, getattr(r, "member_id", None),
            getattr(r, "group_instance_id", None), getattr(r, "client_id", None), getattr(r, "old_member_id", None),
            getattr(r, "new_member_id", None), getattr(r, "generation_id", None), getattr(r, "reason", None),
            getattr(r, "initial", None), members, getattr(r, "protocol_name", None))


class WebView:
    """The live view of one :class:`broker.server.KGroupServer` (start it on the server's loop)."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.records: dict[str, list[tuple]] = {}
        #: a KIP-848 consumer group's own records (timestamp, record): its epoch timeline
        self.cg_records: dict[str, list[tuple[int, Any]]] = {}
        self.commits: dict[str, list[tuple[int, str, int, int]]] = {}
        self.ends: dict[tuple[str, int], list[tuple[int, int]]] = {}
        self.version = 0
        self.host = ""
        self.port = 0
        self._srv: asyncio.base_events.Server | None = None
        self._tasks: set[asyncio.Task] = set()
        for lg in server.svc.logs.values():
            for e in lg.entries:
                self._take(e)
        server.add_listener(self._on_output)

    # --- the records ------------------------------------------------------------------------------------------

    def _take(self, e: LogEntry) -> None:
        r = e.record
        gid = getattr(r, "group_id", "")
        if not gid:
            return
        if r.TYPE == "OffsetCommit":
            self.commits.setdefault(gid, []).append((e.timestamp_ms, r.topic, r.partition, r.offset))
            return
        if r.TYPE.startswith("ConsumerGroup"):
            rows = self.cg_records.setdefault(gid, [])
            rows.append((e.timestamp_ms, r))
            if len(rows) > MAX_RECORDS:
                del rows[: len(rows) - MAX_RECORDS]
            return
        if r.TYPE == "OffsetTombstone":
            return
        rows = self.records.setdefault(gid, [])
        rows.append(_fold_row(e))
        if len(rows) > MAX_RECORDS:
            del rows[: len(rows) - MAX_RECORDS]

    def _on_output(self, out: Any) -> None:
        if out.records or out.leadership:
            for e in out.records:
                self._take(e)
            self.version += 1

    def _sample_ends(self) -> None:
        now = self.server.now_ms()
        for (t, p), lg in list(self.server.data.logs.items()):
            pts = self.ends.setdefault((t, p), [])
            if not pts or pts[-1][1] != lg.log_end_offset:
                pts.append((now, lg.log_end_offset))

    # --- views ------------------------------------------------------------------------------------------------

    def _lag(self, group_id: str, members: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Per partition (committed or owned): the committed offset, the log end offset and the lag."""
        srv, cluster = self.server, self.server.cluster
        offsets = srv.svc.committed_offsets(group_id)
        tps = sorted(set(offsets) | {(t, q) for m in members for t, q in m["partitions"]})
        lag = []
        for t, q in tps:
            lg = srv.data.logs.get((t, q))
            end = lg.log_end_offset if lg is not None else (0 if cluster.has_partition(t, q) else None)
            om = offsets.get((t, q))
            off = om.offset if om is not None else None
            lag.append({"topic": t, "partition": q, "committed": off, "log_end": end,
                        "lag": None if off is None or end is None else end - off})
        return lag

    def state(self) -> dict[str, Any]:
        """Every group of the live coordinators. A classic group: state, generation, protocol, leader, members and
        their partitions. A KIP-848 consumer group (``type`` consumer): state, group epoch (also in ``generation``),
        target assignment epoch, the server assignor, and per member its epoch, state (``MemberState``), current
        and target partitions, partitions pending revocation and protocol (consumer, or classic inside a consumer
        group) -- what ConsumerGroupDescribe shows, plus the member state it does not."""
        srv, svc = self.server, self.server.svc
        cluster = srv.cluster
        names = _topic_names(cluster)
        groups = []
        for p, slot in sorted(svc.slots.items()):
            if slot.loaded_at_ms is not None or not cluster.is_alive(slot.broker_id):
                continue
            for g in slot.shard.groups:
                members = [{"member_id": m.member_id, "client_id": m.client_id, "host": m.client_host,
                            "instance_id": m.group_instance_id, "partitions": _partitions(m.assignment),
                            "leader": m.member_id == g.leader_id} for m in g.members.values()]
                groups.append({"group_id": g.group_id, "state": str(g.state), "generation": g.generation_id,
                               "type": "classic", "protocol_type": g.protocol_type, "assignor": g.protocol_name,
                               "leader": g.leader_id, "coordinator": slot.broker_id, "partition": p,
                               "group_epoch": None, "assignment_epoch": None,
                               "members": members, "lag": self._lag(g.group_id, members)})
            for g in slot.shard.consumer_groups:
                members = []
                for m in g.members.values():
                    target = g.target_assignment.get(m.member_id)
                    members.append({
                        "member_id": m.member_id, "client_id": m.client_id, "host": m.client_host,
                        "instance_id": m.instance_id, "leader": False,
                        "partitions": _named(m.assigned_partitions, names),
                        "target": _named(dict(target.partitions) if target is not None else {}, names),
                        "pending_revocation": _named(m.partitions_pending_revocation, names),
                        "member_epoch": m.member_epoch, "member_state": m.state.name,
                        "protocol": "classic" if m.use_classic_protocol else "consumer"})
                groups.append({"group_id": g.group_id, "state": str(g.state), "generation": g.group_epoch,
                               "type": "consumer", "protocol_type": "consumer",
                               "assignor": g.preferred_server_assignor() or svc.config.default_consumer_group_assignor,
                               "leader": None, "coordinator": slot.broker_id, "partition": p,
                               "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch,
                               "members": members, "lag": self._lag(g.group_id, members)})
        groups.sort(key=lambda x: x["group_id"])
        brokers = [{"id": b, "alive": cluster.is_alive(b), "port": srv.ports.get(b)} for b in cluster.broker_ids()]
        return {"version": self.version, "now_ms": srv.now_ms(), "frozen": srv.clock.frozen, "brokers": brokers,
                "groups": groups}

    def timeline(self, group: str) -> str:
        """The group's Gantt, ownership and lag charts (SVG), drawn by the analysis report's code; a KIP-848
        consumer group's epoch timeline (:func:`epoch_timeline`)."""
        cg = self.cg_records.get(group)
        if cg and (not self.records.get(group) or cg[-1][0] >= self.records[group][-1][2]):
            return epoch_timeline(group, cg, max(self.server.now_ms(), cg[-1][0]), _topic_names(self.server.cluster))
        rows = self.records.get(group)
        if not rows:
            return ""
        now = max(self.server.now_ms(), rows[-1][2])
        rows = sorted(rows, key=lambda r: (r[2], r[3], r[4]))
        out = fold_group(RUN, group, rows, now)
        tables = {t: [dict(zip(COLUMNS[t], r)) for r in out[t]] for t in out}
        first = rows[0][2]
        data: dict[str, Any] = {"groups": tables["groups"], "chart_members": tables["members"],
                                "ownership": tables["ownership"], "chart_rebalances": tables["rebalances"],
                                "runs": {RUN: {"first_ms": first, "end_ms": now}}, "lag": {}}
        commits = sorted(self.commits.get(group, []))
        if commits:
            ends = {tp: pts for tp, pts in self.ends.items() if pts}
            pts = L.series(commits, ends)
            if pts:
                data["lag"][(RUN, group)] = pts
        svgs = group_charts(data, RUN, group)
        kind = kind_of(tables["groups"][0]) if tables["groups"] else ""
        return f'<p class="kind">{kind}</p>' + "".join(f'<div class="chart">{s}</div>' for s in svgs)

    async def control(self, cmd: dict[str, Any]) -> Any:
        op = cmd.get("op")
        if op not in CONTROL_OPS:
            raise ValueError(f"unknown or refused op {op!r} (the view offers {', '.join(CONTROL_OPS)})")
        f = self.server.faults
        if op == "expire_member":
            return f.expire_member(str(cmd["group"]), cmd.get("member"))
        if op == "move_coordinator":
            return f.move_coordinator(str(cmd["group"]), int(cmd["broker"]))
        if op == "freeze_clock":
            return f.freeze_clock()
        if op == "advance_clock":
            return f.advance_clock(int(cmd["ms"]))
        return f.thaw_clock()

    # --- the HTTP server ----------------------------------------------------------------------------------------

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> "WebView":
        self._srv = await asyncio.start_server(self._on_client, host, port)
        self.host, self.port = host, self._srv.sockets[0].getsockname()[1]
        self._spawn(self._sampler())
        return self

    @property
    def url(self) -> str:
        host = self.host if self.host not in ("", "0.0.0.0", "::") else "127.0.0.1"
        return f"http://{host}:{self.port}/"

    async def close(self) -> None:
        if self._srv is not None:
            self._srv.close()
        for t in list(self._tasks):
            t.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._srv is not None:
            await self._srv.wait_closed()
            self._srv = None

    def _spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    async def _sampler(self) -> None:
        while True:
            self._sample_ends()
            await asyncio.sleep(1.0)

    async def _on_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        cancelled = False
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.TimeoutError, asyncio.LimitOverrunError):
            pass
        except asyncio.CancelledError:
            cancelled = True
        except Exception:  # noqa: BLE001 - one bad request must not stop the view
            log.exception("web view request failed")
        finally:
            if task is not None:
                self._tasks.discard(task)
            if cancelled:
                writer.transport.abort()
            else:  # Connection: close -- after the response has gone out
                writer.close()
                try:
                    await asyncio.wait_for(writer.wait_closed(), 2)
                except (OSError, asyncio.TimeoutError, asyncio.CancelledError):
                    writer.transport.abort()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        if len(head) > MAX_HEADER:
            return await self._send(writer, 431, b"request header too large", "text/plain")
        lines = head.decode("latin-1").split("\r\n")
        try:
            method, target, _ = lines[0].split(" ", 2)
        except ValueError:
            return await self._send(writer, 400, b"bad request line", "text/plain")
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                headers[k.strip().lower()] = v.strip()
        url = urlsplit(target)
        path, query = url.path, parse_qs(url.query)
        if method == "GET" and path in STATIC:
            name, ctype = STATIC[path]
            body = resources.files("kgroup").joinpath("web", name).read_bytes()
            return await self._send(writer, 200, body, ctype)
        if method == "GET" and path == "/api/state":
            return await self._send(writer, 200, json.dumps(self.state()).encode(), "application/json")
        if method == "GET" and path == "/api/timeline":
            group = (query.get("group") or [""])[0]
            return await self._send(writer, 200, self.timeline(group).encode(), "text/html; charset=utf-8")
        if method == "GET" and path == "/api/events":
            return await self._events(writer)
        if method == "POST" and path == "/api/control":
            return await self._control(reader, writer, headers)
        if path in STATIC or path.startswith("/api/"):
            return await self._send(writer, 405, b"method not allowed", "text/plain")
        return await self._send(writer, 404, b"not found", "text/plain")

    async def _control(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                       headers: dict[str, str]) -> None:
        peer = writer.get_extra_info("peername")
        try:
            loopback = ipaddress.ip_address(peer[0]).is_loopback
        except (ValueError, TypeError, IndexError):
            loopback = False
        origin = headers.get("origin")
        if not loopback:
            return await self._send(writer, 403, b"fault control answers loopback peers only", "text/plain")
        if headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return await self._send(writer, 415, b"fault control takes application/json", "text/plain")
        if origin is not None and origin not in (f"http://{headers.get('host', '')}",):
            return await self._send(writer, 403, b"cross-origin fault control refused", "text/plain")
        try:
            n = int(headers.get("content-length", "0"))
        except ValueError:
            n = -1
        if not 0 <= n <= MAX_BODY:
            return await self._send(writer, 413, b"bad content length", "text/plain")
        body = await asyncio.wait_for(reader.readexactly(n), 10)
        try:
            cmd = json.loads(body or b"{}")
            if not isinstance(cmd, dict):
                raise ValueError("the command must be a JSON object")
            result = await self.control(cmd)
            reply, status = {"ok": True, "result": result}, 200
        except (KeyError, ValueError, TypeError) as e:
            reply, status = {"ok": False, "error": f"{type(e).__name__}: {e}"}, 400
        self.version += 1
        await self._send(writer, status, json.dumps(reply, default=str).encode(), "application/json")

    async def _events(self, writer: asyncio.StreamWriter) -> None:
        """Server-sent events: the state whenever it changed (checked every 250 ms), a comment every 15 s."""
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                     b"Connection: keep-alive\r\n\r\nretry: 1000\n\n")
        await writer.drain()
        last, quiet = None, time.monotonic()
        while True:
            text = json.dumps(self.state())
            if text != last:
                writer.write(b"data: " + text.encode() + b"\n\n")
                await writer.drain()
                last, quiet = text, time.monotonic()
            elif time.monotonic() - quiet > 15:
                writer.write(b": keep-alive\n\n")
                await writer.drain()
                quiet = time.monotonic()
            await asyncio.sleep(0.25)

    @staticmethod
    async def _send(writer: asyncio.StreamWriter, status: int, body: bytes, ctype: str) -> None:
        reason = {200: "OK", 400: "Bad Request", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed",
                  413: "Payload Too Large", 415: "Unsupported Media Type", 431: "Request Header Fields Too Large"}
        writer.write(f"HTTP/1.1 {status} {reason.get(status, 'Error')}\r\nContent-Type: {ctype}\r\n"
                     f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
                     .encode() + body)
        await writer.drain()


def parse_ui(spec: str) -> tuple[str, int]:
    """``PORT`` or ``HOST:PORT`` (``[IPv6]:PORT``) -> (host, port); the host defaults to loopback."""
    host, sep, port = spec.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", spec
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--ui {spec!r}: expected PORT or HOST:PORT with PORT in 0-65535")
    return host, int(port)


__all__ = ["WebView", "parse_ui"]
