"""The screenshots of the live web view in docs/operations.md, made from real runs:

    .venv/bin/python tools/ui_screenshot.py docs/operations-ui.png
    .venv/bin/python tools/ui_screenshot.py --kip848 docs/operations-ui-848.png

``--kip848``: two confluent-kafka consumers with ``group.protocol=consumer`` in group ``orders-848``, a third
joins and one leaves (the group epochs and member state lanes), on a 3-broker ``kgroup serve``.

A 3-broker ``kgroup serve`` with the web view, a producer and three kafka-python consumers in group ``billing``
(one leaves, another joins later, so the timeline has a few rebalances), headless Chromium on the page
(tests/kgroup/cdp.py), a screenshot of the group's detail.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "kgroup"))
sys.path.insert(0, str(ROOT / "tests" / "interop"))

import cdp  # noqa: E402
from harness import consumer, consumer848, produce, wait_cover  # noqa: E402

from kgroup.testing import KGroupCluster  # noqa: E402
from kgroup.webview import WebView  # noqa: E402


def _screenshot(url: str, out: str, height: int) -> None:
    """Open the web view at ``url`` in headless Chromium, wait for its timeline, and save a screenshot."""
    b = cdp.Browser(width=1040, height=height)
    try:
        b.goto(url)
        b.wait("!!document.querySelector('#timeline svg')", timeout=30, what="the timeline")
        time.sleep(1.0)
        b.screenshot(out)
    finally:
        b.close()


def main(out: str) -> int:
    with KGroupCluster(topics={"invoices": 6}, auto_create_topics=False) as cluster:
        async def start():
            return await WebView(cluster.server).start("127.0.0.1", 0)
        view = cluster.run(start())
        produce("kafka-python", cluster.bootstrap, "invoices", [f"k{i}" for i in range(300)])
        agents = [consumer("kafka-python", cluster.bootstrap, "invoices", "billing", name=f"billing-{i}")
                  for i in range(3)]
        try:
            wait_cover(agents, 6)
            time.sleep(2)
            agents[0].close()
            wait_cover(agents[1:], 6)
            time.sleep(2)
            agents.append(consumer("kafka-python", cluster.bootstrap, "invoices", "billing", name="billing-3"))
            wait_cover(agents[1:], 6)
            time.sleep(2)
            produce("kafka-python", cluster.bootstrap, "invoices", [f"m{i}" for i in range(120)])
            time.sleep(1.5)
            _screenshot(view.url + "#billing", out, height=1500)
        finally:
            for a in agents:
                a.kill()
            cluster.run(view.close())
    print(f"wrote {out}")
    return 0


def main848(out: str) -> int:
    with KGroupCluster(topics={"orders": 6}, auto_create_topics=False) as cluster:
        async def start():
            return await WebView(cluster.server).start("127.0.0.1", 0)
        view = cluster.run(start())
        produce("confluent-kafka", cluster.bootstrap, "orders", [f"k{i}" for i in range(300)])
        agents = [consumer848(cluster.bootstrap, "orders", "orders-848", name=f"orders-{i}") for i in range(2)]
        try:
            wait_cover(agents, 6)
            time.sleep(2)
            agents.append(consumer848(cluster.bootstrap, "orders", "orders-848", name="orders-2"))
            wait_cover(agents, 6)
            time.sleep(2)
            agents[0].close()
            wait_cover(agents[1:], 6)
            time.sleep(2)
            _screenshot(view.url + "#orders-848", out, height=1300)
        finally:
            for a in agents:
                a.kill()
            cluster.run(view.close())
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--kip848":
        sys.exit(main848(args[1] if len(args) > 1 else "docs/operations-ui-848.png"))
    sys.exit(main(args[0] if args else "docs/operations-ui.png"))
