"""The real output of docs/operations.md's KIP-848 section, from one run (prints a transcript to stdout):

    .venv/bin/python tools/operations_transcript_848.py > /tmp/transcript848.txt

``kgroup serve`` (a subprocess, short consumer-group sessions, its coordinator log captured); a producer; a
``kgroup watch`` subprocess; two confluent-kafka consumers with ``group.protocol=consumer`` in group ``orders-848``
(each in its own process: tests/interop/agent.py) that consume and commit everything; the ``kgroup groups`` views;
a kafka-python (classic protocol) consumer joins the consumer group (UPGRADED); it and one consumer leave; the
watch's output; the coordinator's log of the group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "interop"))
PY = sys.executable
ENV = dict(os.environ, PYTHONPATH=str(ROOT), COLUMNS="120")

from harness import consumer, consumer848, produce, wait_all, wait_cover  # noqa: E402

GROUP = "orders-848"


def sh(*args: str) -> None:
    shown = " ".join(a if " " not in a else repr(a) for a in args)
    r = subprocess.run([PY, "-m", "kgroup", *args], capture_output=True, text=True, env=ENV, cwd=ROOT)
    print(f"$ kgroup {shown}")
    out = (r.stdout + ("" if not r.stderr else r.stderr)).rstrip("\n")
    print(out)
    print(f"# exit {r.returncode}\n")


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="kgroup-ops848-"))
    serve = subprocess.Popen([PY, "-m", "kgroup", "serve", "--port", "0", "--topic", "orders:4",
                              "--group-initial-rebalance-delay-ms", "0", "--group-min-session-timeout-ms", "1000",
                              "--group-consumer-min-session-timeout-ms", "6000",
                              "--group-consumer-session-timeout-ms", "6000",
                              "--group-consumer-min-heartbeat-interval-ms", "500",
                              "--group-consumer-heartbeat-interval-ms", "500"], stdout=subprocess.PIPE,
                             stderr=open(tmp / "serve.log", "w"), text=True, env=ENV, cwd=ROOT)
    boot = serve.stdout.readline().strip().split("=", 1)[1]
    print(f"# kgroup serve: bootstrap={boot}\n")
    first = boot.split(",")[0]
    produce("confluent-kafka", boot, "orders", [f"k{i}" for i in range(200)])
    watch = subprocess.Popen([PY, "-m", "kgroup", "watch", "--bootstrap", first, "--group", GROUP, "--out",
                              str(tmp / "watch"), "--interval-ms", "200"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, env=ENV, cwd=ROOT)
    time.sleep(1)
    agents = []
    try:
        a = consumer848(boot, "orders", GROUP, name="orders-a")
        agents.append(a)
        wait_cover([a], 4)
        b = consumer848(boot, "orders", GROUP, name="orders-b")
        agents.append(b)
        wait_cover([a, b], 4)
        wait_all([a, b], lambda: sum(len(x.messages()) for x in (a, b)) >= 200, 60, "every record consumed")
        time.sleep(2)
        sh("groups", "--bootstrap-server", first, "--list", "--type", "--state")
        sh("groups", "--bootstrap-server", first, "--describe", "--group", GROUP)
        sh("groups", "--bootstrap-server", first, "--describe", "--group", GROUP, "--members", "--verbose")
        sh("groups", "--bootstrap-server", first, "--describe", "--group", GROUP, "--state", "--verbose")
        c = consumer("kafka-python", boot, "orders", GROUP, name="orders-classic")
        agents.append(c)
        wait_cover([a, b, c], 4, timeout=60)
        time.sleep(2)
        sh("groups", "--bootstrap-server", first, "--describe", "--group", GROUP, "--members", "--verbose")
        c.close()
        a.close()
        wait_cover([b], 4)
        time.sleep(2)
        sh("groups", "--bootstrap-server", first, "--describe", "--group", GROUP, "--members", "--verbose")
        sh("groups", "--bootstrap-server", first, "--describe", "--group", GROUP, "--state", "--verbose")
    except BaseException:
        for proc in (watch, serve):  # nothing outlives a failed run
            proc.kill()
        raise
    finally:
        for x in agents:
            x.kill()
    time.sleep(1)
    watch.send_signal(signal.SIGINT)
    wout, _ = watch.communicate(timeout=30)
    print(f"# kgroup watch --bootstrap ... --group {GROUP} --out watch --interval-ms 200")
    print(wout.rstrip())
    serve.send_signal(signal.SIGTERM)
    serve.wait(30)
    print(f"\n# kgroup serve's coordinator log (stderr), group {GROUP}")
    for line in (tmp / "serve.log").read_text().splitlines():
        if GROUP in line:
            print(line)
    print(f"\n# files in {tmp}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
