"""docs/testing-your-consumer.md: its aiokafka example is a test, run here as a user would run it (a separate
pytest process with the plugin enabled by `-p kgroup.pytest_plugin`, as the pytest11 entry point does)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.interop
pytest.importorskip("aiokafka")

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing-your-consumer.md"


def test_testing_your_consumer_example_passes(tmp_path: Path) -> None:
    text = DOC.read_text()
    m = re.search(r"<!-- example: (\S+) -->\n```python\n(.*?)```", text, re.S)
    assert m, "the example block is missing"
    (tmp_path / m.group(1)).write_text(m.group(2))
    from importlib.metadata import entry_points

    installed = any(ep.value == "kgroup.pytest_plugin" for ep in entry_points(group="pytest11"))
    plugin = [] if installed else ["-p", "kgroup.pytest_plugin"]  # registering it twice is an error
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", *plugin, "-p", "no:cacheprovider",
                        "-o", "asyncio_default_fixture_loop_scope=function", str(tmp_path / m.group(1))],
                       cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "1 passed" in r.stdout


def test_kgroup_cluster_fixture_starts_fast() -> None:
    import time

    from kgroup.testing import KGroupCluster

    t0 = time.monotonic()
    with KGroupCluster() as c:
        started = time.monotonic() - t0
        assert c.bootstrap.count(",") == 2
        assert c.control.describe()["brokers"] == {0: True, 1: True, 2: True}
    assert started < 1.0, started
