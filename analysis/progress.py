"""A progress display on stderr for long work (``kgroup analyze``, ``kgroup sweep``): the stage, what is known
about its size, the Spark tasks of the running stage and the elapsed time.

On a terminal one line is rewritten in place every second; otherwise (a pipe, a CI log) a line is printed per
stage and no more often than every 10 s, so logs stay short. Spark's own console bars are off
(``spark.ui.showConsoleProgress=false``): they count tasks of stages the user never named.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Callable, Optional


def fmt_duration(s: float) -> str:
    s = max(0, int(round(s)))
    if s < 60:
        return f"{s} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m} min {s:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"


class Progress:
    """``with Progress("analyze", spark_getter) as p: p.stage("reading", "3 files") ...``.

    ``extra``: a callable giving more text for the status line (the sweep's runs done / total and ETA)."""

    def __init__(self, label: str, spark: Optional[Callable[[], object]] = None, stream=None, enabled: bool = True,
                 interval: float = 1.0, extra: Optional[Callable[[], str]] = None) -> None:
        self.label = label
        self.spark = spark
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.interval = interval
        self.extra = extra
        self.t0 = time.perf_counter()
        self.name, self.detail = "", ""
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self._last_print = 0.0
        self._width = 0

    # --- the text ------------------------------------------------------------------------------------------------

    def _tasks(self) -> str:
        if self.spark is None:
            return ""
        try:
            sc = self.spark()
            if sc is None:
                return ""
            st = sc.statusTracker()
            done = total = 0
            for sid in st.getActiveStageIds():
                info = st.getStageInfo(sid)
                if info:
                    done += info.numCompletedTasks
                    total += info.numTasks
            return f"Spark tasks {done}/{total}" if total else ""
        except Exception:  # noqa: BLE001 - the display must never fail the work
            return ""

    def status(self) -> str:
        parts = [f"{self.label}: {self.name}"]
        if self.detail:
            parts.append(self.detail)
        if self.extra is not None:
            try:
                x = self.extra()
            except Exception:  # noqa: BLE001
                x = ""
            if x:
                parts.append(x)
        tasks = self._tasks()
        if tasks:
            parts.append(tasks)
        parts.append(f"{fmt_duration(time.perf_counter() - self.t0)} elapsed")
        return " | ".join(parts)

    def _write(self, text: str, final: bool = False) -> None:
        if not self.enabled:
            return
        with self._lock:
            if self.tty:
                pad = max(0, self._width - len(text))
                self.stream.write("\r" + text + " " * pad + ("\n" if final else ""))
                self._width = 0 if final else len(text)
            else:
                self.stream.write(text + "\n")
            self.stream.flush()
            self._last_print = time.perf_counter()

    # --- the API ------------------------------------------------------------------------------------------------

    def stage(self, name: str, detail: str = "") -> None:
        if self.tty and self.name:
            self._write(self.status(), final=True)      # keep the finished stage's line
        self.name, self.detail = name, detail
        self._write(self.status())

    def set_detail(self, detail: str) -> None:
        self.detail = detail

    def note(self, text: str) -> None:
        """A line of its own (a warning, a result), above the status line."""
        if not self.enabled:
            return
        with self._lock:
            if self.tty and self._width:
                self.stream.write("\r" + " " * self._width + "\r")
                self._width = 0
            self.stream.write(text + "\n")
            self.stream.flush()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            if self.tty or time.perf_counter() - self._last_print >= 10:
                self._write(self.status())

    def __enter__(self) -> "Progress":
        if self.enabled:
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.enabled and self.name:
            self.name, self.detail = "done", ""
            self._write(self.status(), final=True)
