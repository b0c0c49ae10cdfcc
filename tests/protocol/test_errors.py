"""ErrorCode against Kafka's Errors and, as an independent oracle, kafka-python's kafka.errors."""

from __future__ import annotations

import kafka.errors as kerrors
import pytest
from hypothesis import given, strategies as st

from protocol.errors import ErrorCode

# Where kafka-python's name differs from Java's ``Errors`` enum constant (Java wins: the names below are
# kafka-python's historic ones; Kafka renamed UNKNOWN -> UNKNOWN_SERVER_ERROR and NOT_LEADER_FOR_PARTITION ->
# NOT_LEADER_OR_FOLLOWER (KIP-392), and kafka-python never used Kafka's spelling for the others).
KAFKA_PYTHON_NAME_DIFFERENCES = {
    -1: "UNKNOWN",
    0: "NO_ERROR",
    6: "NOT_LEADER_FOR_PARTITION",
    10: "MESSAGE_SIZE_TOO_LARGE",
    17: "INVALID_TOPIC",
    39: "INVALID_REPLICATION_ASSIGNMENT",
}

# Where kafka-python's retriable flag differs from Java (Java wins):
# * CORRUPT_MESSAGE (2): Java's CorruptRecordException extends RetriableException (the producer retries a batch
#   corrupted in transit); kafka-python's CorruptRecordError is not retriable.
KAFKA_PYTHON_RETRIABLE_DIFFERENCES = {2}

# Kafka's retriable set (Kafka 4.1: RetriableException, RefreshRetriableException, InvalidMetadataException),
# written out independently of the module's table.
JAVA_RETRIABLE = {2, 3, 5, 6, 7, 9, 13, 14, 15, 16, 19, 20, 41, 51, 56, 70, 71, 72, 74, 75, 78, 80, 83, 84, 88,
                  89, 100, 103, 106, 122, 123, 133}


def _kafka_python_errors() -> dict[int, type]:
    return {code: cls for code, cls in kerrors.kafka_errors.items() if code is not None}


def test_codes_are_contiguous_from_minus_one():
    assert [e.value for e in ErrorCode] == list(range(-1, 134))


def test_well_known_codes():
    assert ErrorCode.UNKNOWN_SERVER_ERROR == -1
    assert ErrorCode.NONE == 0
    assert ErrorCode.OFFSET_OUT_OF_RANGE == 1
    assert ErrorCode.COORDINATOR_LOAD_IN_PROGRESS == 14
    assert ErrorCode.COORDINATOR_NOT_AVAILABLE == 15
    assert ErrorCode.NOT_COORDINATOR == 16
    assert ErrorCode.ILLEGAL_GENERATION == 22
    assert ErrorCode.INCONSISTENT_GROUP_PROTOCOL == 23
    assert ErrorCode.UNKNOWN_MEMBER_ID == 25
    assert ErrorCode.REBALANCE_IN_PROGRESS == 27
    assert ErrorCode.UNSUPPORTED_VERSION == 35
    assert ErrorCode.MEMBER_ID_REQUIRED == 79
    assert ErrorCode.GROUP_MAX_SIZE_REACHED == 81
    assert ErrorCode.FENCED_INSTANCE_ID == 82
    assert ErrorCode.TRANSACTION_ABORTABLE == 120


def test_retriable_matches_java():
    assert {e.value for e in ErrorCode if e.retriable} == JAVA_RETRIABLE
    # group-membership errors make the client act, they are not "retry the same request"
    for e in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.REBALANCE_IN_PROGRESS,
              ErrorCode.FENCED_INSTANCE_ID, ErrorCode.MEMBER_ID_REQUIRED, ErrorCode.UNKNOWN_SERVER_ERROR):
        assert not e.retriable


def test_messages():
    assert ErrorCode.NONE.message == ""
    assert ErrorCode.NOT_COORDINATOR.message == "This is not the correct coordinator."
    assert ErrorCode.REBALANCE_IN_PROGRESS.message == "The group is rebalancing, so a rejoin is needed."
    assert ErrorCode.UNSUPPORTED_VERSION.message == "The version of API is not supported."
    for e in ErrorCode:
        if e is not ErrorCode.NONE:
            assert e.message and e.message[0].isupper(), e


def test_from_code():
    assert ErrorCode.from_code(16) is ErrorCode.NOT_COORDINATOR
    assert ErrorCode.from_code(-1) is ErrorCode.UNKNOWN_SERVER_ERROR
    for unknown in (-2, 134, 999, 32767, -32768):
        assert ErrorCode.from_code(unknown) is ErrorCode.UNKNOWN_SERVER_ERROR


@given(st.integers(min_value=-(1 << 40), max_value=1 << 40))
def test_from_code_never_raises(code):
    e = ErrorCode.from_code(code)
    assert e.value == code or e is ErrorCode.UNKNOWN_SERVER_ERROR


def test_against_kafka_python_numbers_names_and_retriable():
    kp = _kafka_python_errors()
    common = sorted(set(kp) & {e.value for e in ErrorCode})
    assert len(common) >= 128  # kafka-python 3.0 knows -1..127
    for code in common:
        ours = ErrorCode(code)
        theirs = kp[code]
        assert theirs.errno == code
        expected_name = KAFKA_PYTHON_NAME_DIFFERENCES.get(code, ours.name)
        assert theirs.message == expected_name, (code, ours.name, theirs.message)
        if code in KAFKA_PYTHON_RETRIABLE_DIFFERENCES:
            assert theirs.retriable != ours.retriable, code  # documented difference; Java wins
        else:
            assert theirs.retriable == ours.retriable, (code, ours.name)


def test_int_behaviour():
    assert ErrorCode(27) is ErrorCode.REBALANCE_IN_PROGRESS
    assert int(ErrorCode.NOT_COORDINATOR) == 16
    with pytest.raises(ValueError):
        ErrorCode(500)
