"""An asyncio admin client over :mod:`client.wire`: what ``kgroup groups`` and ``kgroup watch`` ask any Kafka broker,
using only Kafka's APIs -- Metadata, FindCoordinator, ListGroups, DescribeGroups, ConsumerGroupDescribe (when the
broker offers it), OffsetFetch, ListOffsets, OffsetCommit, OffsetDelete and DeleteGroups -- so it works on
``kgroup serve`` and on a real Kafka cluster alike.

Theory of operation. It follows Kafka's ``KafkaAdminClient`` where the answer depends on it:

* **Brokers** come from a Metadata request to the first bootstrap address that answers; one connection per broker
  id, opened on first use, each negotiating its versions (ApiVersions, KIP-511 fallback). Every call is bounded by
  the client's ``timeout``.
* **Group requests** go to the group's coordinator (FindCoordinator, v4 batched keys when offered). A
  ``NOT_COORDINATOR`` or ``COORDINATOR_NOT_AVAILABLE`` answer forgets the coordinator and asks again,
  ``COORDINATOR_LOAD_IN_PROGRESS`` retries after a short back-off (``AdminApiDriver``), until the deadline.
* **Listing groups** (``KafkaAdminClient.listGroups``): ListGroups to every broker, merged by group id, keeping
  the groups whose protocol type is ``consumer`` or empty (``ListGroupsOptions.forConsumerGroups``); the states
  filter is the broker's (v4+), the types filter ``classic,consumer`` (v5+).
* **Describing groups** (``DescribeConsumerGroupsHandler``): ConsumerGroupDescribe first when the coordinator
  advertises it (KIP-848 groups: epochs, target assignments); ``GROUP_ID_NOT_FOUND`` or ``UNSUPPORTED_VERSION``
  there means "a classic group", described with DescribeGroups. A classic group's member assignment is decoded from
  its ConsumerProtocolAssignment bytes; a group whose protocol type is neither ``consumer`` nor empty is refused
  ("GroupId G is not a consumer group (type).").
* **Offsets**: OffsetFetch of all the group's committed offsets (``listConsumerGroupOffsets``: v8+ batched,
  ``require_stable`` false); ListOffsets to each partition's leader (earliest -2, latest -1, read_uncommitted);
  OffsetCommit with generation -1 and no member id (``alterConsumerGroupOffsets``); OffsetDelete; DeleteGroups.

Errors are :class:`AdminError` (the Kafka error code and a message); an unreachable cluster is
:class:`ConnectionError`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

from protocol.api import ApiKey
from protocol.consumer_protocol import decode_assignment
from protocol.errors import ErrorCode
from protocol.messages import (ConsumerGroupDescribeRequest, DeleteGroupsRequest, DescribeGroupsRequest,
                               FindCoordinatorRequest, ListGroupsRequest, ListOffsetsRequest, MetadataRequest,
                               OffsetCommitRequest, OffsetDeleteRequest, OffsetFetchRequest)

from client.wire import ConnectionClosed, WireClient, api_key_of

E = ErrorCode
EARLIEST, LATEST = -2, -1
_RETRY_COORDINATOR = (E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE)
_RETRY_LATER = (E.COORDINATOR_LOAD_IN_PROGRESS,)


#: the newest versions that name topics (v10 names them by topic id): what Kafka's Admin sends at most
_TOPIC_NAME_VERSIONS = {int(ApiKey.OFFSET_FETCH): 9, int(ApiKey.OFFSET_COMMIT): 9}

class AdminError(RuntimeError):
    """A Kafka error answered to an admin request."""

    def __init__(self, error: ErrorCode | int, message: str | None = None) -> None:
        self.error = ErrorCode(int(error))
        super().__init__(message or f"{self.error.name}: {self.error.message}")


@dataclass(frozen=True)
class Node:
    node_id: int
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.host}:{self.port} (id: {self.node_id})"


@dataclass
class MemberDescription:
    """``MemberDescription``: a classic member has no epochs and no target assignment (None)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: list[tuple[str, int]]
    target_assignment: list[tuple[str, int]] | None = None
    member_epoch: int | None = None
    rack_id: str | None = None
    #: ``MemberDescription.upgraded``: ConsumerGroupDescribe v1's member type (KIP-1099) -- True for a member on the
    #: consumer protocol, False for a classic member of a consumer group, None when unknown (v0, classic groups)
    upgraded: bool | None = None


@dataclass
class GroupDescription:
    """``ConsumerGroupDescription``: ``group_type`` "classic" or "consumer" (KIP-848); epochs only for the latter."""

    group_id: str
    state: str
    protocol_type: str
    assignor: str                  # the classic protocol name (assignor) or the KIP-848 server assignor
    members: list[MemberDescription]
    coordinator: Node
    group_type: str = "classic"
    group_epoch: int | None = None
    assignment_epoch: int | None = None


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str | None
    group_type: str | None


@dataclass
class PartitionInfo:
    topic: str
    partition: int
    leader: int


@dataclass
class Committed:
    offset: int
    leader_epoch: int | None
    metadata: str


def _bootstrap(spec: str) -> list[tuple[str, int]]:
    out = []
    for part in spec.split(","):
        part = part.strip()
        if not part:
            continue
        host, sep, port = part.rpartition(":")
        if not sep or not port.isdigit() or not host:
            raise ValueError(f"bootstrap server {part!r}: expected HOST:PORT")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("no bootstrap server given")
    return out


def _partitions_of(assignment: bytes) -> list[tuple[str, int]]:
    """The partitions of ConsumerProtocolAssignment bytes (``ConsumerProtocol.deserializeAssignment``); empty
    bytes (a member without assignment yet) -> []."""
    if not assignment:
        return []
    _, a = decode_assignment(assignment)
    return sorted((t, p) for t, ps in a.assigned_partitions for p in ps)


class AdminClient:
    """An admin client of one cluster; ``async with AdminClient(bootstrap) as admin: ...``."""

    def __init__(self, bootstrap: str, *, client_id: str = "kgroup-admin", timeout: float = 30.0) -> None:
        self.bootstrap = _bootstrap(bootstrap)
        self.client_id = client_id
        self.timeout = timeout
        self.nodes: dict[int, Node] = {}
        self.controller_id: int = -1
        self.cluster_id: str | None = None
        self._conns: dict[Any, WireClient] = {}
        self._coordinators: dict[str, Node] = {}

    async def __aenter__(self) -> "AdminClient":
        await self.refresh()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    async def close(self) -> None:
        for c in list(self._conns.values()):
            await c.close()
        self._conns.clear()

    # --- connections -----------------------------------------------------------------------------------------

    async def _connect(self, key: Any, host: str, port: int) -> WireClient:
        c = self._conns.get(key)
        if c is not None and not c.closed:
            return c
        c = await WireClient.connect(host, port, client_id=self.client_id, timeout=self.timeout)
        try:
            await c.negotiate(timeout=self.timeout)
        except BaseException:
            await c.close()
            raise
        self._conns[key] = c
        return c

    async def _any(self) -> WireClient:
        """A connection to some broker: a known one, else the first bootstrap address that answers."""
        for node in self.nodes.values():
            try:
                return await self._connect(node.node_id, node.host, node.port)
            except (OSError, asyncio.TimeoutError, ConnectionClosed):
                continue
        errors = []
        for host, port in self.bootstrap:
            try:
                return await self._connect(("bootstrap", host, port), host, port)
            except (OSError, asyncio.TimeoutError, ConnectionClosed) as e:
                why = str(e) or (f"no answer within {self.timeout:g} s" if isinstance(e, asyncio.TimeoutError)
                                 else type(e).__name__)
                errors.append(f"{host}:{port}: {why}")
        raise ConnectionError("cannot reach any bootstrap server (" + "; ".join(errors) + ")")

    async def _node(self, node_id: int) -> WireClient:
        node = self.nodes.get(node_id)
        if node is None:
            await self.refresh()
            node = self.nodes.get(node_id)
            if node is None:
                raise AdminError(E.LEADER_NOT_AVAILABLE, f"broker {node_id} is not in the cluster's metadata")
        return await self._connect(node_id, node.host, node.port)

    async def _call(self, conn: WireClient, request: Any) -> Any:
        # Kafka's Admin builds OffsetFetch/OffsetCommit with topic names (Builder.forTopicNames), so it never
        # uses the topic-id versions (v10+, KIP-848) even when the broker offers them
        cap = _TOPIC_NAME_VERSIONS.get(api_key_of(request))
        version = None if cap is None else min(conn.version_for(api_key_of(request)), cap)
        try:
            return await conn.call(request, version, timeout=self.timeout)
        except asyncio.TimeoutError:
            raise ConnectionError(f"no answer from {conn.host}:{conn.port} within {self.timeout:g} s") from None

    def supports(self, conn: WireClient, api_key: int) -> bool:
        return int(api_key) in conn.versions

    # --- metadata --------------------------------------------------------------------------------------------

    async def refresh(self, topics: Iterable[str] | None = ()) -> Any:
        """Metadata (brokers, and the given topics; None: every topic)."""
        conn = await self._any()
        v = conn.version_for(ApiKey.METADATA)
        if topics is None:
            req = MetadataRequest(topics=[] if v == 0 else None, allow_auto_topic_creation=False)
        else:
            req = MetadataRequest(topics=[MetadataRequest.Topic(name=t) for t in topics],
                                  allow_auto_topic_creation=False)
        r = await self._call(conn, req)
        self.nodes = {b.node_id: Node(b.node_id, b.host, b.port) for b in r.brokers}
        self.controller_id = r.controller_id
        self.cluster_id = r.cluster_id
        return r

    async def partitions(self, topics: Iterable[str]) -> dict[str, list[PartitionInfo] | ErrorCode]:
        """Each topic's partitions with their leaders (``describeTopics``), or its error."""
        topics = list(dict.fromkeys(topics))
        if not topics:
            return {}
        r = await self.refresh(topics)
        out: dict[str, list[PartitionInfo] | ErrorCode] = {}
        for t in r.topics:
            if t.error_code:
                out[t.name] = ErrorCode(t.error_code)
            else:
                out[t.name] = sorted((PartitionInfo(t.name, p.partition_index, p.leader_id) for p in t.partitions),
                                     key=lambda p: p.partition)
        return out

    async def topic_names(self) -> list[str]:
        r = await self.refresh(None)
        return sorted(t.name for t in r.topics if not t.is_internal and t.error_code == 0)

    # --- coordinators ----------------------------------------------------------------------------------------

    async def coordinator(self, group_id: str) -> Node:
        node = self._coordinators.get(group_id)
        if node is not None:
            return node
        deadline = time.monotonic() + self.timeout
        while True:
            conn = await self._any()
            v = conn.version_for(ApiKey.FIND_COORDINATOR)
            if v >= 4:
                r = await self._call(conn, FindCoordinatorRequest(key_type=0, coordinator_keys=[group_id]))
                c = r.coordinators[0]
                err, node_id, host, port = c.error_code, c.node_id, c.host, c.port
            else:
                r = await self._call(conn, FindCoordinatorRequest(key=group_id, key_type=0))
                err, node_id, host, port = r.error_code, r.node_id, r.host, r.port
            if err == 0:
                node = Node(node_id, host, port)
                self.nodes.setdefault(node_id, node)
                self._coordinators[group_id] = node
                return node
            if ErrorCode(err) not in (E.COORDINATOR_NOT_AVAILABLE, E.COORDINATOR_LOAD_IN_PROGRESS, E.NOT_COORDINATOR) \
                    or time.monotonic() > deadline:
                raise AdminError(err, f"FindCoordinator for group {group_id!r}: {ErrorCode(err).name}")
            await asyncio.sleep(0.1)

    async def _group_call(self, group_id: str, make: Any, error_of: Any) -> tuple[Any, Node, WireClient]:
        """Send ``make(conn)`` to the group's coordinator, retrying on a moved or loading coordinator."""
        deadline = time.monotonic() + self.timeout
        while True:
            node = await self.coordinator(group_id)
            try:
                conn = await self._node(node.node_id)
                r = await self._call(conn, make(conn))
            except (OSError, ConnectionClosed):
                self._coordinators.pop(group_id, None)
                self._conns.pop(node.node_id, None)
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.1)
                continue
            err = error_of(r)
            if err in _RETRY_COORDINATOR or err in _RETRY_LATER:
                if err in _RETRY_COORDINATOR:
                    self._coordinators.pop(group_id, None)
                if time.monotonic() > deadline:
                    raise AdminError(err, f"group {group_id!r}: {ErrorCode(err).name} until the timeout")
                await asyncio.sleep(0.1)
                continue
            return r, node, conn

    # --- groups ----------------------------------------------------------------------------------------------

    async def list_groups(self, states: Iterable[str] = (), types: Iterable[str] = ()) -> list[GroupListing]:
        """Consumer groups (protocol type ``consumer`` or empty) of every broker, by group id; ``states`` and
        ``types`` (``classic``, ``consumer``; default both) filter on the broker."""
        await self.refresh()
        states = list(states)
        types = list(types) or ["classic", "consumer"]
        found: dict[str, GroupListing] = {}
        for node_id in sorted(self.nodes):
            conn = await self._node(node_id)
            v = conn.version_for(ApiKey.LIST_GROUPS)
            if states and v < 4:  # ListGroupsRequest.Builder: a states filter needs v4
                raise AdminError(E.UNSUPPORTED_VERSION, f"The broker only supports ListGroups v{v}, but we need v4 or "
                                                        "newer to request groups by states.")
            if list(types) != ["classic", "consumer"] and v < 5:  # ListGroupsRequest.Builder
                raise AdminError(E.UNSUPPORTED_VERSION, f"The broker only supports ListGroups v{v}, but we need v5 or "
                                                        "newer to request groups by type.")
            req = ListGroupsRequest(states_filter=states if v >= 4 else [], types_filter=types if v >= 5 else [])
            deadline = time.monotonic() + self.timeout
            while True:
                r = await self._call(conn, req)
                if r.error_code in (E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE) \
                        and time.monotonic() < deadline:
                    await asyncio.sleep(0.1)
                    continue
                break
            if r.error_code:
                raise AdminError(r.error_code, f"Error listing groups on {self.nodes[node_id]}: "
                                               f"{ErrorCode(r.error_code).name}")
            for g in r.groups:
                if g.protocol_type not in ("", "consumer"):
                    continue
                state = g.group_state if v >= 4 and g.group_state else None
                found[g.group_id] = GroupListing(g.group_id, g.protocol_type, state,
                                                 g.group_type if v >= 5 and g.group_type else None)
        return [found[k] for k in sorted(found)]

    async def describe_group(self, group_id: str) -> GroupDescription:
        """``describeConsumerGroups`` of one group; a group that does not exist is state ``Dead``."""
        node = await self.coordinator(group_id)
        conn = await self._node(node.node_id)
        if self.supports(conn, ApiKey.CONSUMER_GROUP_DESCRIBE):
            r, node, conn = await self._group_call(
                group_id, lambda c: ConsumerGroupDescribeRequest(group_ids=[group_id]),
                lambda r: ErrorCode(r.groups[0].error_code) if r.groups else E.NONE)
            g = r.groups[0]
            if g.error_code == 0:
                return GroupDescription(
                    group_id=group_id, state=g.group_state, protocol_type="consumer", assignor=g.assignor_name,
                    coordinator=node, group_type="consumer", group_epoch=g.group_epoch,
                    assignment_epoch=g.assignment_epoch,
                    members=[MemberDescription(
                        member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
                        host=m.client_host, rack_id=m.rack_id, member_epoch=m.member_epoch,
                        upgraded=None if m.member_type == -1 else m.member_type == 1,
                        assignment=sorted((t.topic_name, p) for t in m.assignment.topic_partitions
                                          for p in t.partitions),
                        target_assignment=sorted((t.topic_name, p) for t in m.target_assignment.topic_partitions
                                                 for p in t.partitions)) for m in g.members])
            if g.error_code not in (E.GROUP_ID_NOT_FOUND, E.UNSUPPORTED_VERSION):
                raise AdminError(g.error_code, g.error_message)
            # a classic group (or none): DescribeConsumerGroupsHandler retries with DescribeGroups
        r, node, conn = await self._group_call(
            group_id, lambda c: DescribeGroupsRequest(groups=[group_id]),
            lambda r: ErrorCode(r.groups[0].error_code) if r.groups else E.NONE)
        g = r.groups[0]
        if g.error_code == E.GROUP_ID_NOT_FOUND:   # DescribeGroups v6 (KIP-1043); v0-5 answer state Dead
            return GroupDescription(group_id, "Dead", "", "", [], node)
        if g.error_code:
            raise AdminError(g.error_code, f"DescribeGroups for group {group_id!r}: {ErrorCode(g.error_code).name}")
        if g.protocol_type not in ("consumer", ""):
            raise AdminError(E.INVALID_GROUP_ID, f"GroupId {group_id} is not a consumer group ({g.protocol_type}).")
        members = []
        for m in g.members:
            try:
                parts = _partitions_of(m.member_assignment)
            except Exception:  # noqa: BLE001 - not ConsumerProtocol bytes: Kafka's tool would fail; we show none
                parts = []
            members.append(MemberDescription(m.member_id, m.group_instance_id, m.client_id, m.client_host, parts))
        return GroupDescription(group_id, g.group_state, g.protocol_type, g.protocol_data, members, node)

    async def group_offsets(self, group_id: str) -> dict[tuple[str, int], Committed]:
        """Every committed offset of the group (OffsetFetch with all topics; ``listConsumerGroupOffsets``)."""
        def make(conn: WireClient) -> Any:
            if conn.version_for(ApiKey.OFFSET_FETCH) >= 8:
                return OffsetFetchRequest(groups=[OffsetFetchRequest.Group(group_id=group_id, topics=None)],
                                          require_stable=False)
            return OffsetFetchRequest(group_id=group_id, topics=None, require_stable=False)

        def error_of(r: Any) -> ErrorCode:
            if r.groups:
                return ErrorCode(r.groups[0].error_code)
            return ErrorCode(r.error_code or 0)

        r, _, conn = await self._group_call(group_id, make, error_of)
        err = error_of(r)
        if err:
            raise AdminError(err, f"OffsetFetch for group {group_id!r}: {err.name}")
        topics = r.groups[0].topics if r.groups else r.topics
        out = {}
        for t in topics:
            for p in t.partitions:
                if p.error_code:
                    raise AdminError(p.error_code, f"OffsetFetch {t.name}-{p.partition_index}: "
                                                   f"{ErrorCode(p.error_code).name}")
                if p.committed_offset >= 0:  # -1: nothing committed (the admin client leaves it out)
                    out[(t.name, p.partition_index)] = Committed(
                        p.committed_offset, p.committed_leader_epoch if p.committed_leader_epoch >= 0 else None,
                        p.metadata or "")
        return dict(sorted(out.items()))

    async def list_offsets(self, partitions: Iterable[tuple[str, int]], spec: int = LATEST
                           ) -> dict[tuple[str, int], int | None]:
        """The earliest (-2) or latest (-1) offset of each partition, from its leader; None where the partition
        has no leader or the leader answered an error (``GroupOffsetsResetter.getLogOffsets``: Unknown)."""
        wanted = sorted(set(partitions))
        out: dict[tuple[str, int], int | None] = {tp: None for tp in wanted}
        if not wanted:
            return out
        info = await self.partitions({t for t, _ in wanted})
        by_leader: dict[int, list[tuple[str, int]]] = {}
        for t, p in wanted:
            parts = info.get(t)
            if not isinstance(parts, list):
                continue
            leader = next((x.leader for x in parts if x.partition == p), -1)
            if leader >= 0:
                by_leader.setdefault(leader, []).append((t, p))
        for leader, tps in sorted(by_leader.items()):
            try:
                conn = await self._node(leader)
            except (OSError, ConnectionClosed, AdminError):
                continue
            topics: dict[str, list[int]] = {}
            for t, p in tps:
                topics.setdefault(t, []).append(p)
            req = ListOffsetsRequest(replica_id=-1, isolation_level=0, topics=[
                ListOffsetsRequest.Topic(name=t, partitions=[ListOffsetsRequest.Topic.Partition(
                    partition_index=p, timestamp=spec, max_num_offsets=1) for p in ps])
                for t, ps in sorted(topics.items())])
            r = await self._call(conn, req)
            v = conn.version_for(ApiKey.LIST_OFFSETS)
            for t in r.topics:
                for p in t.partitions:
                    if p.error_code:
                        continue
                    off = (p.old_style_offsets[0] if p.old_style_offsets else None) if v == 0 else p.offset
                    out[(t.name, p.partition_index)] = off if off is not None and off >= 0 else None
        return out

    async def alter_group_offsets(self, group_id: str, offsets: dict[tuple[str, int], int]
                                  ) -> dict[tuple[str, int], ErrorCode]:
        """OffsetCommit as an admin (generation -1, no member id: ``alterConsumerGroupOffsets``)."""
        topics: dict[str, list[tuple[int, int]]] = {}
        for (t, p), off in sorted(offsets.items()):
            topics.setdefault(t, []).append((p, off))
        req = OffsetCommitRequest(group_id=group_id, generation_id_or_member_epoch=-1, member_id="",
                                  group_instance_id=None, topics=[
                                      OffsetCommitRequest.Topic(name=t, partitions=[
                                          OffsetCommitRequest.Topic.Partition(partition_index=p, committed_offset=o,
                                                                              committed_metadata="")
                                          for p, o in ps]) for t, ps in topics.items()])

        def error_of(r: Any) -> ErrorCode:
            codes = {ErrorCode(p.error_code) for t in r.topics for p in t.partitions}
            return next((c for c in codes if c in _RETRY_COORDINATOR + _RETRY_LATER), E.NONE)

        r, _, _ = await self._group_call(group_id, lambda c: req, error_of)
        return {(t.name, p.partition_index): ErrorCode(p.error_code) for t in r.topics for p in t.partitions}

    async def delete_group_offsets(self, group_id: str, partitions: Iterable[tuple[str, int]]
                                   ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        """OffsetDelete: (top-level error, per-partition errors)."""
        topics: dict[str, list[int]] = {}
        for t, p in sorted(set(partitions)):
            topics.setdefault(t, []).append(p)
        req = OffsetDeleteRequest(group_id=group_id, topics=[
            OffsetDeleteRequest.Topic(name=t, partitions=[OffsetDeleteRequest.Topic.Partition(partition_index=p)
                                                          for p in ps]) for t, ps in topics.items()])
        r, _, _ = await self._group_call(group_id, lambda c: req, lambda r: ErrorCode(r.error_code))
        return ErrorCode(r.error_code), {(t.name, p.partition_index): ErrorCode(p.error_code)
                                         for t in r.topics for p in t.partitions}

    async def delete_groups(self, group_ids: Iterable[str]) -> dict[str, ErrorCode]:
        """DeleteGroups, each group at its coordinator."""
        out = {}
        for gid in dict.fromkeys(group_ids):
            r, _, _ = await self._group_call(gid, lambda c, g=gid: DeleteGroupsRequest(groups_names=[g]),
                                             lambda r: ErrorCode(r.results[0].error_code))
            out[gid] = ErrorCode(r.results[0].error_code)
        return out
