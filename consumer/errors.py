"""Exceptions the consumer core raises or reports, named after the Java client's exceptions.

``KafkaException`` is the root (``org.apache.kafka.common.KafkaException``). ``retriable`` is true where Kafka's
exception extends ``RetriableException``: the coordinator core retries those itself (after
``retry.backoff.ms``); everything else either triggers a rejoin (the group errors) or reaches the application,
which in the sans-IO core means: raised from :meth:`ConsumerCoordinator.poll` or carried by an
:class:`~consumer.outputs.OffsetCommitCompleted` output.
"""

from __future__ import annotations

from typing import Optional

from protocol.errors import ErrorCode


class KafkaException(Exception):
    retriable = False

    def __init__(self, message: str = "", error: Optional[ErrorCode] = None) -> None:
        super().__init__(message or (error.message if error is not None else type(self).__name__))
        self.error = error


class ApiException(KafkaException):
    """An error code from a response (``Errors.exception()``); retriable as Kafka's exception class is."""

    def __init__(self, error: ErrorCode, message: str = "") -> None:
        super().__init__(message or f"{error.name}: {error.message}", error)
        self.retriable = error.retriable

    def __eq__(self, other: object) -> bool:  # handy in tests: ApiException(X) == ApiException(X)
        return type(other) is type(self) and other.error == self.error

    def __hash__(self) -> int:
        return hash((type(self), self.error))


class DisconnectException(KafkaException):
    """The connection broke (or the request timed out) before a response arrived; retriable."""

    retriable = True


class UnjoinedGroupException(KafkaException):
    """A JoinGroup response arrived after the member had left the join (Kafka's internal retriable error)."""

    retriable = True


class CommitFailedException(KafkaException):
    """The commit cannot complete because the member is no longer part of the active group."""

    def __init__(self, message: str = "") -> None:
        super().__init__(message or (
            "Commit cannot be completed since the group has already rebalanced and assigned the partitions to "
            "another member. This means that the time between subsequent calls to poll() was longer than the "
            "configured max.poll.interval.ms."))


class RetriableCommitFailedException(KafkaException):
    retriable = True

    def __init__(self, cause: BaseException) -> None:
        super().__init__(f"Offset commit failed with a retriable exception: {cause}")
        self.cause = cause


class RebalanceInProgressException(ApiException):
    def __init__(self, message: str = "") -> None:
        super().__init__(ErrorCode.REBALANCE_IN_PROGRESS, message)


class FencedInstanceIdException(ApiException):
    def __init__(self, message: str = "") -> None:
        super().__init__(ErrorCode.FENCED_INSTANCE_ID, message)


class NoOffsetForPartitionException(KafkaException):
    def __init__(self, partitions) -> None:
        super().__init__(f"Undefined offset with no reset policy for partitions: {sorted(map(str, partitions))}")
        self.partitions = tuple(partitions)


class UnsupportedVersionException(KafkaException):
    pass


class IllegalStateException(KafkaException):
    pass


def exception_for(error: ErrorCode) -> KafkaException:
    """``Errors.exception()``: the exception for an error code (a few get their own class)."""
    if error == ErrorCode.REBALANCE_IN_PROGRESS:
        return RebalanceInProgressException()
    if error == ErrorCode.FENCED_INSTANCE_ID:
        return FencedInstanceIdException()
    return ApiException(error)


__all__ = ["KafkaException", "ApiException", "DisconnectException", "UnjoinedGroupException",
           "CommitFailedException", "RetriableCommitFailedException", "RebalanceInProgressException",
           "FencedInstanceIdException", "NoOffsetForPartitionException", "UnsupportedVersionException",
           "IllegalStateException", "exception_for"]
