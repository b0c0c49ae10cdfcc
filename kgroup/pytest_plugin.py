"""pytest plugin (entry point ``pytest11``: ``kgroup = "kgroup.pytest_plugin"``): the ``kgroup_cluster`` fixture.

``kgroup_cluster`` starts a 3-broker ``kgroup serve`` on ephemeral loopback ports in a background thread (well under
a second), yields a :class:`kgroup.testing.KGroupCluster` -- ``.bootstrap`` for your client's
``bootstrap.servers`` and ``.control`` for fault control (``stop_broker``, ``move_coordinator``,
``expire_member``, ``drop_heartbeats``, ``delay_heartbeats``, ``fail_next``, ``freeze_clock``/``advance_clock``/
``thaw_clock``, ``describe``) -- and shuts it down afterwards.

Topics are auto-created with 3 partitions on first Metadata (``cluster.create_topic(name, n)`` for others), the
initial rebalance delay is 0 and the minimum session timeout 100 ms, so tests can use short sessions. Override
the settings with the ``kgroup_cluster_options`` fixture (a dict of :class:`KGroupCluster` keyword arguments)::

    @pytest.fixture
    def kgroup_cluster_options():
        return {"brokers": 1, "topics": {"orders": 6}}

See docs/testing-your-consumer.md.
"""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from kgroup.testing import KGroupCluster


@pytest.fixture
def kgroup_cluster_options() -> dict[str, Any]:
    """Keyword arguments of :class:`kgroup.testing.KGroupCluster`; override in your conftest or module."""
    return {}


@pytest.fixture
def kgroup_cluster(kgroup_cluster_options: dict[str, Any]) -> Iterator[KGroupCluster]:
    """A running kgroup cluster: ``.bootstrap`` and ``.control`` (see kgroup.testing)."""
    cluster = KGroupCluster(**kgroup_cluster_options).start()
    try:
        yield cluster
    finally:
        cluster.stop()
