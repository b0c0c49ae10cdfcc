"""What a run leaves behind: the trace (``trace.jsonl``), the coordinator's records (``events.jsonl``) and the ring
of recent events that explains an invariant violation or a livelock.

Theory of operation
-------------------
* **The trace** is the simulator's own account, one dict per event with the virtual time ``t`` and a ``type``
  (actions, consumer state changes, assignments, broker stops, violations; docs/scenarios.md lists them). It is
  deterministic: it holds only what the run decided, never wall-clock time or object ids. ``trace=False`` (the
  benchmarks, the fuzzer in CI) keeps nothing.
* **The records** are the coordinator's log entries in the order they appeared; the runner sorts them into
  ``events.jsonl`` (docs/events.md).
* **The recent-events ring** (:class:`Recent`) holds the last few dozen happenings -- requests, responses,
  records, dropped messages, trace events -- always, trace or not. An entry is ``(t, format_function, args)``:
  storing the arguments is cheaper than formatting every message (or building a closure per message), and
  nothing is formatted unless a violation or an error renders the ring.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any, Callable

from protocol.api import APIS

API_NAMES = {int(k): APIS[k].name for k in APIS}
API_BY_NAME = {v: k for k, v in API_NAMES.items()}


class Recent:
    """The simulator's most recent events (a ring buffer), rendered only when a violation needs them."""

    def __init__(self, size: int = 40) -> None:
        self.buf: deque = deque(maxlen=size)
        self.append = self.buf.append  # append((t, format_function, args)): called once per message

    def render(self) -> list[str]:
        return [f"t={t}ms {fmt(*args)}" for t, fmt, args in self.buf]


class Tracer:
    """The trace, the coordinator's records and the recent-events ring of one run."""

    def __init__(self, clock: Any, enabled: bool = True, recent_size: int = 40) -> None:
        self._clock = clock  # anything with ``now`` (the event queue)
        self.enabled = enabled
        self.events: list[dict] = []   # trace.jsonl
        self.records: list = []        # coordinator LogEntry objects, in order of appearance
        self.recent = Recent(recent_size)
        #: note((t, format_function, args)): one entry of the recent-events ring
        self.note: Callable[[tuple], None] = self.recent.append

    def trace(self, type_: str, **data: Any) -> None:
        now = self._clock.now
        if self.enabled:
            d = {"t": now, "type": type_}
            d.update(data)
            self.events.append(d)
        self.note((now, fmt_trace, (type_, data)))

    def record(self, e: Any) -> None:
        """A coordinator log entry appeared."""
        self.records.append(e)
        self.note((self._clock.now, fmt_record, (e,)))


def fmt_trace(type_: str, data: dict) -> str:
    return f"{type_} {json.dumps(data, sort_keys=True, default=str)}"


def fmt_record(e: Any) -> str:
    return f"record {e.record.TYPE} {json.dumps(e.to_dict()['data'], sort_keys=True)[:300]}"


def fmt_request(consumer: str, api_key: int, node: int, handle: int, body: Any) -> str:
    return f"{consumer} -> broker {node}: {API_NAMES.get(api_key, api_key)} #{handle} {brief(body)}"


def fmt_response(consumer: str, handle: int, resp: Any) -> str:
    return f"{consumer} <- #{handle} {brief(resp)}"


def brief(obj: Any) -> str:
    """A short rendering of a request or response for the recent-events context."""
    if isinstance(obj, BaseException):
        return repr(obj)
    name = type(obj).__name__
    parts = []
    for attr in ("error_code", "generation_id", "member_id", "leader", "protocol_name"):
        v = getattr(obj, attr, None)
        if v not in (None, "", 0) or attr == "error_code" and v:
            parts.append(f"{attr}={v}")
    return f"{name}({', '.join(parts)})"
