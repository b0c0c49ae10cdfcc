"""The broker process's clock: epoch milliseconds, owned by the server, with public freeze / advance / thaw.

The only clock of ``kgroup serve`` (DESIGN.md: the only clocks are the drivers'): a monotonic source -- the asyncio
loop's ``loop.time()`` once the server runs -- anchored once to the wall clock, so that times are epoch
milliseconds (Kafka's record timestamps are, and offset retention counts from them across restarts). It never
goes backwards. The core is handed ``now_ms()`` with every call; the server arms its one timer through
:meth:`Clock.source_time`.

Fault control (broker/faults.py) makes it a virtual clock under real clients:

* :meth:`Clock.freeze` -- ``now_ms()`` stands still; the server arms no timer, so no session, rebalance or
  retention timer fires, and requests are handled at the frozen instant;
* :meth:`Clock.advance` -- moves it forward (frozen or not); the server then fires what fell due;
* :meth:`Clock.thaw` -- it runs again from where it stood.
"""

from __future__ import annotations

import time
from typing import Callable


class Clock:
    def __init__(self, start_ms: int | None = None, source: Callable[[], float] = time.monotonic) -> None:
        #: now_ms() = anchor_ms + (source() - anchor_source) in ms, unless frozen
        self._anchor_ms = int(time.time() * 1000) if start_ms is None else start_ms  # the one wall-clock read
        self._source = source
        self._anchor_source = source()
        self._last_ms = self._anchor_ms
        self._frozen_ms: int | None = None

    def attach(self, source: Callable[[], float]) -> None:
        """Read time from ``source`` (seconds, monotonic: the event loop's ``loop.time``) from now on, continuing
        from the current time."""
        now = self.now_ms()
        self._source = source
        self._anchor_source = source()
        self._anchor_ms = now

    def now_ms(self) -> int:
        frozen = self._frozen_ms
        if frozen is not None:
            return frozen
        t = self._anchor_ms + int((self._source() - self._anchor_source) * 1000)
        if t > self._last_ms:
            self._last_ms = t
        return self._last_ms

    @property
    def frozen(self) -> bool:
        return self._frozen_ms is not None

    def source_time(self, ms: int) -> float | None:
        """When the source reads ``ms`` (for ``loop.call_at``); None while frozen (time does not pass)."""
        if self._frozen_ms is not None:
            return None
        return self._anchor_source + (ms - self._anchor_ms) / 1000.0

    def freeze(self) -> int:
        """Stop the clock (a no-op if frozen); returns the time it stands at."""
        if self._frozen_ms is None:
            self._frozen_ms = self.now_ms()
        return self._frozen_ms

    def advance(self, ms: int) -> int:
        """Move the clock forward by ``ms`` (frozen or running); returns the new time."""
        if ms < 0:
            raise ValueError("the clock only moves forward")
        if self._frozen_ms is not None:
            self._frozen_ms += int(ms)
        else:
            self._anchor_ms += int(ms)
        return self.now_ms()

    def thaw(self) -> int:
        """Let the clock run again from the time it was frozen at (a no-op if running); returns the time."""
        t = self._frozen_ms
        if t is None:
            return self.now_ms()
        self._frozen_ms = None
        self._anchor_ms = t - int((self._source() - self._anchor_source) * 1000)
        self._last_ms = t
        return self.now_ms()
