"""The two kinds of failure a KIP-848 coordinator core signals (sans-IO).

* :class:`ApiError` -- Kafka's ``ApiException`` subclasses (``FencedMemberEpochException``,
  ``StaleMemberEpochException``, ``UnknownMemberIdException``...): a request-level failure carrying the error code
  and the message the response puts in ``ErrorMessage``. Validators return one (or ``None``); the reconciliation
  raises one where Kafka throws (the handler turns it into the error response; its records are discarded).
* :class:`IllegalStateError` -- Kafka's ``IllegalStateException`` on the replay path: a record that cannot be
  applied in the current state (a member tombstone before its assignment tombstones, a partition taken at an
  epoch not newer than its owner's...). A bug in whatever wrote the records; the state is left unchanged.
"""

from __future__ import annotations

from protocol.errors import ErrorCode


class ApiError(Exception):
    """An error response: ``error`` (Kafka's code) and ``message`` (``None``: the response carries no message)."""

    def __init__(self, error: ErrorCode, message: str | None = None) -> None:
        super().__init__(f"{error.name}: {message}" if message else error.name)
        self.error = error
        self.message = message

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ApiError) and (self.error, self.message) == (other.error, other.message)

    def __hash__(self) -> int:
        return hash((self.error, self.message))

    def __repr__(self) -> str:
        return f"ApiError({self.error.name}, {self.message!r})"


class IllegalStateError(RuntimeError):
    """A record Kafka's replay would refuse with ``IllegalStateException``."""
