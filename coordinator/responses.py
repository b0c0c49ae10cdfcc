"""The coordinator's successful answers built from group state (Kafka builds them inline in
``GroupMetadataManager``); error answers come from ``protocol.error_responses``."""

from __future__ import annotations

from typing import Any

from protocol.errors import ErrorCode
from protocol.messages import DescribeGroupsResponse, JoinGroupResponse, LeaveGroupResponse, SyncGroupResponse

from coordinator.group import ClassicGroup, GroupState


def join_response(g: ClassicGroup, member_id: str, members: bool, leader: str | None = None,
                  skip_assignment: bool = False) -> Any:
    """A JoinGroup answer with the group's current generation, protocol and leader (``leader`` overrides it: a
    static member replaced below v9 is told the old leader id); ``members``: the leader's member list
    (``currentClassicGroupMembers``), else none. Shape it with the request's version
    (``protocol.error_responses.shape_join_group_response``) before it leaves."""
    return JoinGroupResponse(
        error_code=0, generation_id=g.generation_id, protocol_type=g.protocol_type,
        protocol_name=g.protocol_name, leader=(g.leader_id if leader is None else leader) or "",
        skip_assignment=skip_assignment, member_id=member_id,
        members=[JoinGroupResponse.Member(member_id=mid, group_instance_id=iid, metadata=meta)
                 for mid, iid, meta in g.current_member_list()] if members else [])


def sync_response(g: ClassicGroup, assignment: bytes, error: ErrorCode = ErrorCode.NONE) -> Any:
    """A SyncGroup answer: with NONE the group's protocol type and name (KIP-559) and ``assignment``."""
    ok = error == ErrorCode.NONE
    return SyncGroupResponse(error_code=int(error), protocol_type=g.protocol_type if ok else None,
                             protocol_name=g.protocol_name if ok else None, assignment=assignment)


def leave_response(results: list[tuple[str, str | None, ErrorCode]], version: int) -> Any:
    """``LeaveGroupResponse``: v3+ one entry per member; v0-2 one error -- the first member error, if any."""
    if version >= 3:
        return LeaveGroupResponse(error_code=0, members=[
            LeaveGroupResponse.MemberResponse(member_id=mid, group_instance_id=iid, error_code=int(e))
            for mid, iid, e in results])
    first = next((e for _, _, e in results if e != ErrorCode.NONE), ErrorCode.NONE)
    return LeaveGroupResponse(error_code=int(first))


def describe_group(group_id: str, g: ClassicGroup | None) -> Any:
    """``GroupMetadataManager.describeGroups`` for one classic group: unknown -> NONE with state "Dead"; member
    metadata only when Stable (``ClassicGroupMember.describe``), but the member's current assignment in every state
    (``describeNoMetadata``; the old Scala coordinator sent empty bytes outside Stable)."""
    if g is None:
        return DescribeGroupsResponse.DescribedGroup(error_code=0, group_id=group_id, group_state="Dead",
                                                     protocol_type="", protocol_data="", members=[])
    stable = g.state == GroupState.STABLE
    members = [DescribeGroupsResponse.DescribedGroup.Member(
        member_id=m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
        client_host=m.client_host, member_metadata=m.metadata(g.protocol_name) if stable else b"",
        member_assignment=m.assignment) for m in g.members.values()]
    return DescribeGroupsResponse.DescribedGroup(
        error_code=0, group_id=group_id, group_state=str(g.state), protocol_type=g.protocol_type or "",
        protocol_data=(g.protocol_name or "") if stable else "", members=members)
