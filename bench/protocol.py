"""Protocol codec benchmark: kgroup vs kafka-python, measured in the same run on equivalent messages.

One operation = encode one complete request frame (size prefix + request header + body) and decode it back
(header + body), which is what a broker does per request/response pair minus the I/O. Cases:

* JoinGroup v5 request: 3 protocols (range, roundrobin, cooperative-sticky), 1 KiB of metadata each;
* Heartbeat v4 request (flexible: compact strings, tagged fields, request header v2);
* the same two bodies without framing/header, to show where the time goes.

kafka-python (3.0, its JSON-spec-driven compiled codecs) encodes with ``encode(header=True, framed=True)`` and
decodes with ``decode(..., header=True, framed=True)``; kgroup uses ``protocol.frames.encode_request`` /
``FrameReader`` + ``decode_request``. Both sides are checked to produce identical bytes before timing.

Usage: python bench/protocol.py [--seconds S] [--quick] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import protocol  # noqa: E402,F401
from protocol import frames  # noqa: E402
from protocol.api import APIS  # noqa: E402

JOIN, HEARTBEAT = 11, 12
CLIENT_ID = "consumer-bench-1"
MEMBER_ID = "consumer-bench-1-3f6c2a8e-9b1d-4c57-8f0e-2d7b9a6c1e45"
PROTOCOLS = [("range", 0x11), ("roundrobin", 0x22), ("cooperative-sticky", 0x33)]


def kgroup_objects():
    J = APIS[JOIN].request.cls
    join = J(group_id="bench-group", session_timeout_ms=45000, rebalance_timeout_ms=300000, member_id=MEMBER_ID,
             group_instance_id=None, protocol_type="consumer",
             protocols=[J.Protocol(name=n, metadata=bytes([b]) * 1024) for n, b in PROTOCOLS])
    hb = APIS[HEARTBEAT].request.cls(group_id="bench-group", generation_id=7, member_id=MEMBER_ID,
                                     group_instance_id=None)
    return join, hb


def kafka_python_objects():
    from kafka.protocol.consumer.group import HeartbeatRequest, JoinGroupRequest

    P = JoinGroupRequest.JoinGroupRequestProtocol
    join = JoinGroupRequest(group_id="bench-group", session_timeout_ms=45000, rebalance_timeout_ms=300000,
                            member_id=MEMBER_ID, group_instance_id=None, protocol_type="consumer",
                            protocols=[P(name=n, metadata=bytes([b]) * 1024) for n, b in PROTOCOLS])
    hb = HeartbeatRequest(group_id="bench-group", generation_id=7, member_id=MEMBER_ID, group_instance_id=None)
    return JoinGroupRequest, join, HeartbeatRequest, hb


def kgroup_cases():
    join, hb = kgroup_objects()
    encode_request, decode_request = frames.encode_request, frames.decode_request

    def frame_op(key, version, body):
        def op():
            raw = encode_request(key, version, 1, CLIENT_ID, body)
            reader = frames.FrameReader()
            return decode_request(reader.feed(raw)[0])
        return op

    def body_op(key, version, body):
        msg = APIS[key].request
        enc, dec = msg.encode, msg.decode

        def op():
            return dec(enc(body, version), version)
        return op

    return {
        "JoinGroup v5 frame": frame_op(JOIN, 5, join),
        "Heartbeat v4 frame": frame_op(HEARTBEAT, 4, hb),
        "JoinGroup v5 body": body_op(JOIN, 5, join),
        "Heartbeat v4 body": body_op(HEARTBEAT, 4, hb),
    }


def kafka_python_cases():
    JCls, join, HCls, hb = kafka_python_objects()

    def frame_op(cls, version, body):
        body.API_VERSION = version
        body.with_header(correlation_id=1, client_id=CLIENT_ID)

        def op():
            raw = body.encode(version=version, header=True, framed=True)
            return cls.decode(raw, version=version, header=True, framed=True)
        return op

    def body_op(cls, version, body):
        def op():
            return cls.decode(body.encode(version=version), version=version)
        return op

    return {
        "JoinGroup v5 frame": frame_op(JCls, 5, join),
        "Heartbeat v4 frame": frame_op(HCls, 4, hb),
        "JoinGroup v5 body": body_op(JCls, 5, join),
        "Heartbeat v4 body": body_op(HCls, 4, hb),
    }


def check_equivalent() -> None:
    """Both codecs must produce the same bytes for the benchmarked messages (else the comparison is moot)."""
    join, hb = kgroup_objects()
    JCls, kjoin, HCls, khb = kafka_python_objects()
    for key, version, ours, theirs in ((JOIN, 5, join, kjoin), (HEARTBEAT, 4, hb, khb)):
        theirs.API_VERSION = version
        theirs.with_header(correlation_id=1, client_id=CLIENT_ID)
        a = frames.encode_request(key, version, 1, CLIENT_ID, ours)
        b = bytes(theirs.encode(version=version, header=True, framed=True))
        if a != b:
            raise SystemExit(f"kgroup and kafka-python disagree on API {key} v{version}:\n{a.hex()}\n{b.hex()}")


def rate(op, seconds: float, repeat: int) -> float:
    """Best of `repeat` runs of ~`seconds` each, in operations per second."""
    for _ in range(200):  # warm-up (codec compilation, caches)
        op()
    n = 1
    while True:  # calibrate a batch that takes >= 20 ms
        t = time.perf_counter()
        for _ in range(n):
            op()
        dt = time.perf_counter() - t
        if dt >= 0.02:
            break
        n *= 2
    best = 0.0
    for _ in range(repeat):
        done, start = 0, time.perf_counter()
        while True:
            for _ in range(n):
                op()
            done += n
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        best = max(best, done / elapsed)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=1.0, help="seconds per timed run (default 1.0)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per cell; the best is kept (default 3)")
    ap.add_argument("--quick", action="store_true", help="0.2 s per run, 1 run (smoke test)")
    args = ap.parse_args(argv)
    seconds, repeat = (0.2, 1) if args.quick else (args.seconds, args.repeat)

    try:
        import kafka

        kp_version = kafka.__version__
    except ImportError:
        print("kafka-python is not installed (pip install -e '.[test]'); cannot compare", file=sys.stderr)
        return 2
    check_equivalent()
    ours, theirs = kgroup_cases(), kafka_python_cases()

    print(f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs; "
          f"kafka-python {kp_version}; {seconds:g} s x {repeat} per cell (best kept)")
    header = f"{'case (encode + decode)':<24}{'kgroup ops/s':>14}{'kafka-python ops/s':>20}{'ratio':>8}"
    print(header)
    print("-" * len(header))
    ratios = {}
    for name in ours:
        a = rate(ours[name], seconds, repeat)
        b = rate(theirs[name], seconds, repeat)
        ratios[name] = a / b
        print(f"{name:<24}{a:>14,.0f}{b:>20,.0f}{a / b:>7.2f}x")
    goal = min(ratios["JoinGroup v5 frame"], ratios["Heartbeat v4 frame"])
    print(f"\nframe ratio (min of JoinGroup v5, Heartbeat v4): {goal:.2f}x  (goal >= 2x: "
          f"{'met' if goal >= 2 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
