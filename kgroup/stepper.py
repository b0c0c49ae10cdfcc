"""Step mode (``--step``): pause after each protocol step until the learner answers.

After a step, :meth:`Stepper.step` prints the prompt (catalogue key ``step.prompt``) and reads one line from
standard input: an empty line or ``n`` -> next step, ``c`` -> continue without pausing, ``q`` -> quit (``step``
returns False; the caller stops). End of input counts as ``c``, so ``--step`` with a closed or exhausted stdin
runs to the end.

How a pause stops time:

* a scenario run is narrated from its records and trace after the run, which is deterministic: virtual time only
  moves when the narration moves on, so a pause simply waits;
* ``kgroup demo`` runs real TCP clients and brokers on one asyncio loop. The pause blocks that loop (nothing is
  read, sent or scheduled meanwhile) and the loop's clock (:class:`PausableClock`, installed as the loop's
  ``time``) stands still while it waits, so no heartbeat, session or rebalance timer sees the pause: the group
  carries on as if no time had passed.
"""

from __future__ import annotations

import sys
import time
from typing import Callable, Optional, TextIO

from kgroup.catalogue import Catalogue


class PausableClock:
    """A monotonic clock (seconds) that can stand still; install it as an event loop's ``time``."""

    def __init__(self, source: Callable[[], float] = time.monotonic) -> None:
        self._source = source
        self._offset = 0.0
        self._paused_at: Optional[float] = None

    def __call__(self) -> float:
        if self._paused_at is not None:
            return self._paused_at - self._offset
        return self._source() - self._offset

    def pause(self) -> None:
        if self._paused_at is None:
            self._paused_at = self._source()

    def resume(self) -> None:
        if self._paused_at is not None:
            self._offset += self._source() - self._paused_at
            self._paused_at = None


class Stepper:
    """Pauses after each step when enabled; :meth:`step` returns False once the learner asked to quit."""

    def __init__(self, enabled: bool, cat: Catalogue, *, stdin: Optional[TextIO] = None,
                 stdout: Optional[TextIO] = None, clock: Optional[PausableClock] = None) -> None:
        self.enabled = enabled
        self.cat = cat
        self.stdin = stdin
        self.stdout = stdout
        self.clock = clock
        self.quit = False

    def step(self) -> bool:
        if self.quit:
            return False
        if not self.enabled:
            return True
        out = self.stdout or sys.stdout
        inp = self.stdin or sys.stdin
        out.write(self.cat("step.prompt"))
        out.flush()
        if self.clock is not None:
            self.clock.pause()
        try:
            line = inp.readline()
        finally:
            if self.clock is not None:
                self.clock.resume()
        if line and not inp.isatty():
            out.write("\n")  # a terminal echoes the Enter; a pipe does not
        answer = line.strip().lower()
        if not line or answer.startswith("c"):  # end of input: run on
            self.enabled = False
        elif answer.startswith("q"):
            self.quit = True
            out.write(self.cat("step.quit") + "\n")
            out.flush()
            return False
        return True
