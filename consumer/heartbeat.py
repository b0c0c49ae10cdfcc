"""Heartbeat bookkeeping of a group member (sans-IO): mirrors ``org.apache.kafka.clients.consumer.internals.
Heartbeat``.

Three timers, each a deadline in milliseconds (Kafka's ``Timer``: expired when ``now >= deadline``):

* heartbeat timer - when the next Heartbeat is due (``heartbeat.interval.ms`` after the last send, or
  ``retry.backoff.ms`` after a failed one);
* session timer - ``session.timeout.ms`` after the last successful heartbeat response; when it expires the
  member marks its coordinator unknown (it suspects the coordinator, not itself);
* poll timer - ``max.poll.interval.ms`` after the application's last poll; when it expires the member leaves
  the group ("poll timeout").

Kafka's class reads a clock; this one is told the time by every caller.
"""

from __future__ import annotations


class Heartbeat:
    # (only the deadlines: Kafka's lastHeartbeatSend / lastHeartbeatReceive / lastPoll feed its metrics, which
    # kgroup does not keep; at 1,000 simulated members each replaced timestamp is a cold int freed per heartbeat)
    __slots__ = ("heartbeat_deadline_ms", "session_deadline_ms", "poll_deadline_ms", "session_timeout_ms",
                 "heartbeat_interval_ms", "max_poll_interval_ms", "retry_backoff_ms")

    def __init__(self, *, session_timeout_ms: int, heartbeat_interval_ms: int, max_poll_interval_ms: int,
                 retry_backoff_ms: int, now_ms: int = 0) -> None:
        if heartbeat_interval_ms >= session_timeout_ms:
            raise ValueError("Heartbeat must be set lower than the session timeout")
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.max_poll_interval_ms = max_poll_interval_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.heartbeat_deadline_ms = now_ms + heartbeat_interval_ms
        self.session_deadline_ms = now_ms + session_timeout_ms
        self.poll_deadline_ms = now_ms + max_poll_interval_ms

    # --- events ---------------------------------------------------------------------------------------------
    def poll(self, now_ms: int) -> None:
        """The application polled: restart the poll timer."""
        self.poll_deadline_ms = now_ms + self.max_poll_interval_ms

    def sent_heartbeat(self, now_ms: int) -> None:
        self.heartbeat_deadline_ms = now_ms + self.heartbeat_interval_ms

    def fail_heartbeat(self, now_ms: int) -> None:
        """A heartbeat failed: try again after the retry backoff instead of a whole interval."""
        self.heartbeat_deadline_ms = now_ms + self.retry_backoff_ms

    def receive_heartbeat(self, now_ms: int) -> None:
        self.session_deadline_ms = now_ms + self.session_timeout_ms

    def reset_timeouts(self, now_ms: int) -> None:
        """All three timers restart (Kafka: when the heartbeat thread is enabled after a JoinGroup)."""
        self.session_deadline_ms = now_ms + self.session_timeout_ms
        self.poll_deadline_ms = now_ms + self.max_poll_interval_ms
        self.heartbeat_deadline_ms = now_ms + self.heartbeat_interval_ms

    def reset_session_timeout(self, now_ms: int) -> None:
        """The coordinator was (re)discovered: give it a whole session."""
        self.session_deadline_ms = now_ms + self.session_timeout_ms

    # --- queries ----------------------------------------------------------------------------------------------
    def should_heartbeat(self, now_ms: int) -> bool:
        return now_ms >= self.heartbeat_deadline_ms

    def time_to_next_heartbeat(self, now_ms: int) -> int:
        return max(0, self.heartbeat_deadline_ms - now_ms)

    def session_timeout_expired(self, now_ms: int) -> bool:
        return now_ms >= self.session_deadline_ms

    def poll_timeout_expired(self, now_ms: int) -> bool:
        return now_ms >= self.poll_deadline_ms
