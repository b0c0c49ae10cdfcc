"""Hostile bytes (issue 14): the structure-aware fuzzer's schema walker reproduces the codec's bytes for every API
and version the server advertises (so its field positions are right), and a CI-sized run of bench/fuzz_server.py
-- 20,000 frames against a ``kgroup serve`` process beside a healthy group -- finds no crash, no hang, no
traceback, flat memory and an undisturbed group. The full run (1,000,000 frames) is the benchmark's."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import random
import time

from broker.apis import SERVED_APIS
from client.wirefuzz import FrameFactory, encode_with_layout
from protocol.api import APIS

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _bench():
    spec = importlib.util.spec_from_file_location("fuzz_server", os.path.join(ROOT, "bench", "fuzz_server.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_schema_walker_encodes_exactly_as_the_codec_for_every_api_and_version():
    served = {k: (APIS[k].min_version, APIS[k].max_version) for k in SERVED_APIS}
    factory = FrameFactory(random.Random(7), served, ["g"], {"t": 2})
    assert len(factory.pairs) == sum(hi - lo + 1 for lo, hi in served.values())
    for key, version in factory.pairs:
        api = APIS[key]
        for _ in range(10):
            obj = factory.gen.request(api, version)
            data, spans = encode_with_layout(api.request, version, obj)
            assert data == api.request.encode(obj, version), (api.name, version)
            assert api.request.decode(data, version) == obj
            assert all(0 <= s.start <= s.end <= len(data) for s in spans)


def test_mutations_cover_every_kind():
    served = {k: (APIS[k].min_version, APIS[k].max_version) for k in SERVED_APIS}
    factory = FrameFactory(random.Random(3), served, ["g"], {"t": 2})
    kinds = {factory.next().kind for _ in range(5000)}
    assert kinds == {k for k, _ in factory.kinds}


async def test_twenty_thousand_hostile_frames(tmp_path):
    # Bounded by progress, not by a total time: about 15 s on a quiet machine, but every unanswered well-formed
    # frame costs its 1 s deadline and starting the server and the healthy group is slow on a loaded machine, so a
    # run can take minutes without anything being wrong. Fuzzing that completes no frame for STALL_S is a hang; the
    # start (before the first progress report) and the total are capped well inside CI's budget.
    stall_s, start_s, cap_s = 120.0, 300.0, 1200.0
    seen = {"frames": -1, "at": None, "connect_errors": 0}

    def observe(o) -> None:
        seen["connect_errors"] = o.connect_errors
        if o.frames != seen["frames"]:
            seen["frames"], seen["at"] = o.frames, time.monotonic()

    task = asyncio.ensure_future(_bench().fuzz(20_000, seed=14, concurrency=48, progress=False,
                                               workdir=str(tmp_path), observe=observe))
    start = time.monotonic()
    while not task.done():
        await asyncio.wait({task}, timeout=1.0)
        now = time.monotonic()
        if seen["at"] is None:
            stalled = now - start > start_s
        else:
            stalled = now - seen["at"] > stall_s or now - start > cap_s
        if stalled and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            where = "before the first frame" if seen["at"] is None else f"none in the last {now - seen['at']:.0f} s"
            raise AssertionError(f"fuzz run stalled: {max(seen['frames'], 0)} frames after {now - start:.0f} s, "
                                 f"{where} ({seen['connect_errors']} failed connects)")
    rep = task.result()
    assert rep["answered"] + rep["closed"] + rep["waiting"] + rep["hangs"] == 20_000
    assert rep["hangs"] == 0, rep["hang_examples"]
    assert rep["server_alive"] and rep["server_answers_after"] and rep["exit_code"] == 0
    assert rep["tracebacks"] == 0 and rep["log_errors"] == 0, rep["log_head"]
    assert rep["log_lines"] < 60, rep["log_head"]  # rate-limited: a handful of lines per kind
    assert rep["correlation_mismatches"] == 0
    assert rep["rss_flat"], rep["rss_samples"]
    hg = rep["healthy_group"]
    assert hg["error_count"] == 0 and not hg["lost_commits"] and hg["commits"] > 0, hg
    # every kind of mutation was both answered and refused at least once: the frames reach the decoders
    assert rep["answered"] > 2000 and rep["closed"] > 2000
