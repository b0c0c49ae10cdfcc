"""KIP-848's ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69) on the wire, byte by byte.

The expected bytes are written out from Kafka's JSON specs (tests/protocol/kafka_specs/, Kafka 4.4) and the
flexible-version encoding rules of ``org.apache.kafka.common.protocol.types`` (compact strings and arrays are
length + 1 as an unsigned varint, null is 0; a nullable struct is an int8 -1 / 1 marker; every struct ends with
its tagged-field count), not from kgroup's encoder.
"""

from __future__ import annotations

import uuid

from protocol.frames import decode_request, decode_response, encode_request, encode_response
from protocol.messages import (ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
                               ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse)

TOPIC = uuid.UUID(int=1)
TOPIC_BYTES = "00" * 15 + "01"


def test_a_joining_heartbeat_v1():
    req = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0, subscribed_topic_names=["t"],
                                        topic_partitions=[])
    want = ("00000023"          # size
            "0044" "0001" "00000007" "0003" "636964" "00"  # header v2: key 68, v1, correlation 7, "cid", no tags
            "0267" "026d"       # group id "g", member id "m" (compact strings)
            "00000000"          # member epoch 0 (join)
            "00" "00"           # instance id, rack id: null
            "ffffffff"          # rebalance timeout -1 (unchanged)
            "02" "0274"         # subscribed topic names ["t"]
            "00" "00"           # regex (v1+), server assignor: null
            "01"                # owned topic partitions: [] (not null: a full request)
            "00")               # no tagged fields
    data = encode_request(68, 1, 7, "cid", req)
    assert data.hex() == want
    _, back = decode_request(data[4:])
    assert back == req


def test_the_regex_field_exists_only_from_v1():
    req = ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=5, subscribed_topic_regex="t.*")
    v0 = encode_request(68, 0, 1, None, req)
    _, back = decode_request(v0[4:])
    assert back.subscribed_topic_regex is None and back.member_epoch == 5


def test_a_heartbeat_response_with_and_without_an_assignment():
    R = ConsumerGroupHeartbeatResponse
    head = "00000007" "00" "00000000" "0000" "00" "026d" "00000003" "00001388"
    no_assignment = R(throttle_time_ms=0, error_code=0, member_id="m", member_epoch=3, heartbeat_interval_ms=5000)
    assert encode_response(68, 1, 7, no_assignment).hex() == "00000018" + head + "ff" + "00"
    A = R.Assignment
    assigned = R(throttle_time_ms=0, error_code=0, member_id="m", member_epoch=3, heartbeat_interval_ms=5000,
                 assignment=A(topic_partitions=[A.TopicPartitions(topic_id=TOPIC, partitions=[0, 2])]))
    data = encode_response(68, 1, 7, assigned)
    assert data.hex() == ("00000034" + head + "01"   # the nullable struct is present
                          + "02" + TOPIC_BYTES + "03" + "00000000" + "00000002" + "00"  # one topic, [0, 2]
                          + "00"                     # end of Assignment
                          + "00")                    # end of the response
    assert decode_response(68, 1, data[4:])[1] == assigned


def test_describe_v1_carries_the_member_type_and_v0_does_not():
    R = ConsumerGroupDescribeResponse
    G, M = R.DescribedGroup, R.DescribedGroup.Member
    empty = M.Assignment(topic_partitions=[])
    member = M(member_id="m", member_epoch=1, client_id="c", client_host="/h", subscribed_topic_names=[],
               assignment=empty, target_assignment=empty, member_type=1)
    resp = R(throttle_time_ms=0, groups=[G(error_code=0, group_id="g", group_state="Stable", group_epoch=1,
                                           assignment_epoch=1, assignor_name="uniform", members=[member])])
    v1 = encode_response(69, 1, 1, resp)
    v0 = encode_response(69, 0, 1, resp)
    assert len(v1) == len(v0) + 1  # the int8 member type
    assert decode_response(69, 1, v1[4:])[1].groups[0].members[0].member_type == 1
    assert decode_response(69, 0, v0[4:])[1].groups[0].members[0].member_type == -1  # the spec's default
    req = ConsumerGroupDescribeRequest(group_ids=["g"], include_authorized_operations=False)
    assert encode_request(69, 0, 2, "c", req).hex().endswith("0202670000")  # ["g"], false, no tags
