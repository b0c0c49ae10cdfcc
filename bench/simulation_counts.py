"""Deterministic cost counts for the simulator: instructions, L1 data misses and last-level data misses per
request/response pair in the steady heartbeat phase, from valgrind's cachegrind (not timed, so not disturbed by
other tenants: use it to compare two versions of the code; docs/benchmarks.md#simulation).

    .venv/bin/python bench/simulation_counts.py [--members 1000] [--ll-bytes 1048576]

It runs the benchmark's group (heartbeats only, no restart) to 20 s and to 50 s of virtual time under cachegrind
and divides the difference by the request/response pairs in between. Needs valgrind; takes ~3 minutes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = """
import sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
from simulation import scenario
from scenarios.model import parse_scenario
from scenarios.world import Simulation
d = scenario({n}, {n}, 600, 50, 30, False, 50, "range", False); d["timeline"] = []
sim = Simulation(parse_scenario(d, "counts"), 1, trace=False)
sim.run({end} * 1000)
print("requests", sim.stats["requests"])
"""


def run(n: int, end_s: int, ll_bytes: int) -> dict:
    code = CHILD.format(root=ROOT, bench=os.path.join(ROOT, "bench"), n=n, end=end_s)
    with tempfile.TemporaryDirectory() as tmp:
        # a fixed hash seed: string hashes decide dict layouts, which move the counts by ~1% from run to run
        env = dict(os.environ, PYTHONHASHSEED="0")
        out = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--LL={ll_bytes},16,64",
                              f"--cachegrind-out-file={tmp}/cg.out", sys.executable, "-c", code],
                             capture_output=True, text=True, check=True, env=env)
    counts = {"requests": int(re.search(r"requests (\d+)", out.stdout).group(1))}
    for name, pattern in (("instructions", r"I\s+refs:\s+([\d,]+)"), ("d1_misses", r"D1  misses:\s+([\d,]+)"),
                          ("ll_misses", r"LLd misses:\s+([\d,]+)")):
        counts[name] = int(re.search(pattern, out.stderr).group(1).replace(",", ""))
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--ll-bytes", type=int, default=1 << 20, help="simulated last-level cache (default 1 MiB)")
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed", file=sys.stderr)
        return 2
    a, b = run(args.members, 20, args.ll_bytes), run(args.members, 50, args.ll_bytes)
    pairs = b["requests"] - a["requests"]
    print(f"{args.members} members, {pairs} request/response pairs between 20 s and 50 s (LL {args.ll_bytes} B):")
    for k in ("instructions", "d1_misses", "ll_misses"):
        print(f"  {k:13s} {(b[k] - a[k]) / pairs:10.0f} per pair")
    return 0


if __name__ == "__main__":
    sys.exit(main())
