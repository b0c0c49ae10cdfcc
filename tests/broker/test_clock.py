"""The broker's clock (broker/clock.py): epoch milliseconds that never go backwards, frozen / advanced / thawed by
fault control -- on a fake monotonic source, and over TCP (a frozen clock fires no session timer; advancing it
fires what falls due)."""

from __future__ import annotations

import asyncio

import pytest

from broker.clock import Clock
from broker.server import KGroupServer
from broker_harness import form_group


class _Source:
    """A monotonic source the test moves by hand (seconds)."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_now_follows_the_source_from_the_start_time() -> None:
    src = _Source()
    c = Clock(start_ms=1_000_000, source=src)
    assert c.now_ms() == 1_000_000
    src.t += 0.2509765625  # 250.98 ms (exact in binary)
    assert c.now_ms() == 1_000_250  # whole milliseconds, truncated
    assert c.source_time(1_000_375) == 100.375


def test_never_goes_backwards() -> None:
    src = _Source()
    c = Clock(start_ms=0, source=src)
    src.t += 1.0
    assert c.now_ms() == 1000
    src.t -= 0.5  # a source that steps back (it should not: the clock holds its last reading)
    assert c.now_ms() == 1000


def test_freeze_advance_thaw() -> None:
    src = _Source()
    c = Clock(start_ms=0, source=src)
    src.t += 1.0
    assert c.freeze() == 1000 and c.frozen
    src.t += 5.0
    assert c.now_ms() == 1000  # stands still
    assert c.source_time(2000) is None  # time does not pass: no timer can be armed
    assert c.freeze() == 1000  # freezing again changes nothing
    assert c.advance(250) == 1250
    src.t += 5.0
    assert c.thaw() == 1250 and not c.frozen  # runs again from where it stood
    src.t += 0.125
    assert c.now_ms() == 1375
    assert c.advance(1000) == 2375  # advancing a running clock moves it too
    with pytest.raises(ValueError):
        c.advance(-1)


def test_attach_continues_from_the_current_time() -> None:
    first, second = _Source(), _Source()
    c = Clock(start_ms=0, source=first)
    first.t += 2.0
    second.t = 7.0
    c.attach(second)
    assert c.now_ms() == 2000
    second.t += 0.5
    assert c.now_ms() == 2500


async def test_frozen_clock_over_tcp(server: KGroupServer) -> None:
    members = await form_group(server, "clk", 2, session_timeout_ms=500)
    faults = server.faults
    t = faults.freeze_clock()
    await asyncio.sleep(0.8)  # more than the session timeout of real time: nothing expires
    assert len(server.svc.group("clk").members) == 2
    assert server.now_ms() == t
    faults.advance_clock(501)
    assert len(server.svc.group("clk").members) == 0
    faults.thaw_clock()
    assert server.now_ms() >= t + 501
    for m in members:
        await m.close()
