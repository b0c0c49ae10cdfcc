"""SHA-256 of every library scenario's and a set of fuzz runs' events.jsonl and trace.jsonl.

A restructure must leave these byte-identical (issue 13): run this before and after and diff the outputs.

    .venv/bin/python tools/trace_digest.py > /tmp/before.txt
    ... change ...
    .venv/bin/python tools/trace_digest.py | diff /tmp/before.txt -

Library scenarios at seeds 1 and 2; ``kgroup fuzz --seed N --out`` over four base scenarios x ``--fuzz-seeds``
seeds. Runs go through the command line (``kgroup.cli.main``), so what is hashed is exactly what users get.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kgroup.cli import main as kgroup  # noqa: E402

FUZZ_BASES = ("sticky-consumer-leaves", "rolling-deploy", "coordinator-failover", "gc-pause-storm")


def _digest(out: Path) -> str:
    return " ".join(f"{name}={hashlib.sha256((out / name).read_bytes()).hexdigest()[:16]}"
                    for name in ("events.jsonl", "trace.jsonl"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fuzz-seeds", type=int, default=25, help="fuzz seeds per base scenario (default 25)")
    args = ap.parse_args()
    library = sorted((ROOT / "scenarios" / "library").glob("*.toml"))
    with tempfile.TemporaryDirectory() as tmp:
        for path in library:
            for seed in (1, 2):
                out = Path(tmp) / f"{path.stem}-{seed}"
                with contextlib.redirect_stdout(io.StringIO()):
                    rc = kgroup(["run", str(path), "--seed", str(seed), "--out", str(out)])
                print(f"run  {path.stem:34} seed {seed:3} rc={rc} {_digest(out)}", flush=True)
        for base in FUZZ_BASES:
            path = ROOT / "scenarios" / "library" / f"{base}.toml"
            for seed in range(args.fuzz_seeds):
                out = Path(tmp) / f"fuzz-{base}-{seed}"
                with contextlib.redirect_stdout(io.StringIO()):
                    rc = kgroup(["fuzz", str(path), "--seed", str(seed), "--out", str(out)])
                print(f"fuzz {base:34} seed {seed:3} rc={rc} {_digest(out)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
