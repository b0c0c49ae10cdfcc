"""Fixtures for the `kgroup serve` TCP tests; helpers live in server_harness.py."""

from __future__ import annotations

import pytest_asyncio

from server_harness import make_settings, start_server


@pytest_asyncio.fixture
async def server():
    """A 3-broker server on ephemeral loopback ports, initial rebalance delay 200 ms, min session timeout 50 ms."""
    srv = await start_server(make_settings(group_initial_rebalance_delay_ms=200))
    try:
        yield srv
    finally:
        await srv.close()
