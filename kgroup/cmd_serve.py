"""`kgroup serve`: run the group coordinator as N Kafka brokers on loopback (see docs/server.md).

Flags mirror Kafka's broker settings (``--group-min-session-timeout-ms`` is ``group.min.session.timeout.ms``).
Prints ``kgroup serving bootstrap=HOST:PORT,...`` on stdout when every listener is up; SIGINT/SIGTERM shut it
down cleanly (exit 0). Exit codes: 0 clean shutdown, 1 runtime failure (e.g. a port in use), 2 invalid flags (the
message names the flag).
"""

from __future__ import annotations

import argparse
import os
import sys

# flag -> Kafka setting (CoordinatorConfig alias)
_CONFIG_FLAGS = {
    "group_min_session_timeout_ms": "group.min.session.timeout.ms",
    "group_max_session_timeout_ms": "group.max.session.timeout.ms",
    "group_initial_rebalance_delay_ms": "group.initial.rebalance.delay.ms",
    "group_max_size": "group.max.size",
    "offsets_topic_num_partitions": "offsets.topic.num.partitions",
    "offsets_topic_replication_factor": "offsets.topic.replication.factor",
    "offsets_retention_minutes": "offsets.retention.minutes",
    "offsets_retention_check_interval_ms": "offsets.retention.check.interval.ms",
    "log_cleaner_delete_retention_ms": "log.cleaner.delete.retention.ms",
    "log_cleaner_min_cleanable_ratio": "log.cleaner.min.cleanable.ratio",
    # KIP-848 consumer groups
    "group_consumer_session_timeout_ms": "group.consumer.session.timeout.ms",
    "group_consumer_min_session_timeout_ms": "group.consumer.min.session.timeout.ms",
    "group_consumer_max_session_timeout_ms": "group.consumer.max.session.timeout.ms",
    "group_consumer_heartbeat_interval_ms": "group.consumer.heartbeat.interval.ms",
    "group_consumer_min_heartbeat_interval_ms": "group.consumer.min.heartbeat.interval.ms",
    "group_consumer_max_heartbeat_interval_ms": "group.consumer.max.heartbeat.interval.ms",
    "group_consumer_max_size": "group.consumer.max.size",
    "group_consumer_assignors": "group.consumer.assignors",
    "group_consumer_migration_policy": "group.consumer.migration.policy",
    "group_consumer_assignment_interval_ms": "group.consumer.assignment.interval.ms",
    "group_consumer_min_assignment_interval_ms": "group.consumer.min.assignment.interval.ms",
    "group_consumer_max_assignment_interval_ms": "group.consumer.max.assignment.interval.ms",
    # kgroup-only coordinator settings (flag: the name without "kgroup.")
    "coordinator_load_time_ms": "kgroup.coordinator.load.time.ms",
    "offsets_compaction_min_records": "kgroup.offsets.compaction.min.records",
}


def _flag(kafka_name: str) -> str:
    return "--" + kafka_name.removeprefix("kgroup.").replace(".", "-")


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve", help="run the group coordinator: N Kafka brokers on loopback speaking the real wire protocol",
        description="Run an N-broker Kafka group coordinator (the classic consumer-group protocol and KIP-848's "
                    "consumer group protocol, Kafka 4.4) in one process. "
                    "Broker b listens on PORT+b. Flags mirror Kafka's broker settings. Serves ApiVersions, Metadata, "
                    "FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch, "
                    "DescribeGroups, ListGroups, DeleteGroups, OffsetDelete, ConsumerGroupHeartbeat, "
                    "ConsumerGroupDescribe, the data path (Produce, Fetch, ListOffsets, InitProducerId, "
                    "OffsetForLeaderEpoch) and the admin APIs (CreateTopics, DeleteTopics, CreatePartitions, "
                    "DescribeCluster, DescribeConfigs). Fault control: `kgroup ctl`.")
    g = p.add_argument_group("cluster and listeners")
    g.add_argument("--brokers", type=int, default=3, metavar="N", help="number of brokers (default 3)")
    g.add_argument("--host", default="127.0.0.1",
                   help="listen address (default 127.0.0.1: loopback only; nothing is authenticated)")
    g.add_argument("--advertised-host", default=None, metavar="HOST[:PORT]",
                   help="address advertised in Metadata/FindCoordinator (advertised.listeners): clients behind a "
                        "proxy or port mapping connect there; with PORT, broker b is advertised at PORT+b "
                        "(default: --host and the real ports)")
    g.add_argument("--port", type=int, default=9092,
                   help="port of broker 0; broker b uses PORT+b (default 9092; 0: ephemeral ports)")
    g.add_argument("--max-request-bytes", type=int, default=104857600, metavar="BYTES",
                   help="socket.request.max.bytes: larger size prefixes close the connection before the body is "
                        "read (default 104857600)")
    g.add_argument("--data-dir", default=None, metavar="DIR",
                   help="persist the __consumer_offsets logs (JSON lines) here; a restart recovers every group and "
                        "committed offset")
    g.add_argument("--fsync", choices=("batch", "never", "always"), default="batch",
                   help="kgroup only: fsync policy of --data-dir logs (default batch: before each response)")
    g.add_argument("--seed", type=int, default=None,
                   help="kgroup only: seed of member-id UUIDs (default: random, so a restart never reuses an id)")
    r = p.add_argument_group("resource limits (docs/server.md, \"Resource limits\")")
    r.add_argument("--connections-max-idle-ms", type=int, default=600000, metavar="MS",
                   help="connections.max.idle.ms: close a connection idle this long (default 600000; -1: never)")
    r.add_argument("--max-connections", type=int, default=2147483647, metavar="N",
                   help="max.connections: connections per broker; at the limit new ones wait in the backlog "
                        "after the one idle the longest is closed (default 2147483647)")
    r.add_argument("--queued-max-request-bytes", type=int, default=209715200, metavar="BYTES",
                   help="queued.max.request.bytes: bytes of incomplete requests held across all connections; "
                        "beyond it connections stop being read (default 209715200; Kafka's -1 = unbounded is "
                        "accepted)")
    r.add_argument("--offsets-history-retention-bytes", type=int, default=1073741824, metavar="BYTES",
                   help="kgroup only: bytes of rolled __consumer_offsets segments (the rebalance history that "
                        "kgroup analyze reads) kept in --data-dir; the oldest go first (default 1073741824; -1: "
                        "all)")
    r.add_argument("--request-read-timeout-ms", type=int, default=30000, metavar="MS",
                   help="kgroup only: a request must arrive whole within this after its first byte, else the "
                        "connection is closed (a slow sender; default 30000; 0: no limit)")
    t = p.add_argument_group("topics")
    t.add_argument("--topic", action="append", default=[], metavar="NAME:PARTITIONS[:REPLICATION]",
                   help="create a topic (repeatable); replication defaults to --default-replication-factor")
    t.add_argument("--auto-create-topics", action="store_true",
                   help="auto.create.topics.enable: Metadata for an unknown topic creates it (default: off)")
    t.add_argument("--num-partitions", type=int, default=1, metavar="N",
                   help="num.partitions of auto-created topics (default 1)")
    t.add_argument("--default-replication-factor", type=int, default=1, metavar="N",
                   help="default.replication.factor of created topics (default 1)")
    c = p.add_argument_group("group coordinator (Kafka's names and defaults)")
    c.add_argument("--group-min-session-timeout-ms", type=int, default=6000, metavar="MS")
    c.add_argument("--group-max-session-timeout-ms", type=int, default=1800000, metavar="MS")
    c.add_argument("--group-initial-rebalance-delay-ms", type=int, default=3000, metavar="MS")
    c.add_argument("--group-max-size", type=int, default=2147483647, metavar="N")
    c.add_argument("--offsets-topic-num-partitions", type=int, default=50, metavar="N")
    c.add_argument("--offsets-topic-replication-factor", type=int, default=None, metavar="N",
                   help="default min(3, --brokers)")
    c.add_argument("--offsets-retention-minutes", type=int, default=10080, metavar="MIN")
    c.add_argument("--offsets-retention-check-interval-ms", type=int, default=600000, metavar="MS",
                   help="period of the sweep that expires offsets and removes empty groups without offsets "
                        "(default 600000)")
    c.add_argument("--log-cleaner-delete-retention-ms", type=int, default=86400000, metavar="MS",
                   help="how long a compacted __consumer_offsets log keeps a tombstone (default 86400000)")
    c.add_argument("--log-cleaner-min-cleanable-ratio", type=float, default=0.5, metavar="R",
                   help="an offsets partition's log is compacted once its uncompacted part is at least this "
                        "fraction of it (default 0.5)")
    c.add_argument("--offsets-compaction-min-records", type=int, default=10000, metavar="N",
                   help="kgroup only: and once at least N records were appended since its last compaction "
                        "(default 10000)")
    c.add_argument("--coordinator-load-time-ms", type=int, default=0, metavar="MS",
                   help="kgroup only: a broker that becomes coordinator of an offsets partition answers "
                        "COORDINATOR_LOAD_IN_PROGRESS for this long, as Kafka's does while it loads (default 0)")
    k = p.add_argument_group("KIP-848 consumer groups (group.protocol=consumer; Kafka's names and defaults)")
    k.add_argument("--group-consumer-session-timeout-ms", type=int, default=45000, metavar="MS",
                   help="session timeout of consumer group members (default 45000; within min/max)")
    k.add_argument("--group-consumer-min-session-timeout-ms", type=int, default=45000, metavar="MS")
    k.add_argument("--group-consumer-max-session-timeout-ms", type=int, default=60000, metavar="MS")
    k.add_argument("--group-consumer-heartbeat-interval-ms", type=int, default=5000, metavar="MS",
                   help="heartbeat interval given to members (default 5000; within min/max, below the session "
                        "timeout)")
    k.add_argument("--group-consumer-min-heartbeat-interval-ms", type=int, default=5000, metavar="MS")
    k.add_argument("--group-consumer-max-heartbeat-interval-ms", type=int, default=15000, metavar="MS")
    k.add_argument("--group-consumer-max-size", type=int, default=2147483647, metavar="N",
                   help="maximum members of a consumer group (default 2147483647)")
    k.add_argument("--group-consumer-assignors", default="uniform,range", metavar="NAMES",
                   help="server-side assignors, the first is the default (default uniform,range)")
    k.add_argument("--group-consumer-migration-policy", default="bidirectional",
                   choices=("bidirectional", "upgrade", "downgrade", "disabled"),
                   type=str.lower, help="online conversion between classic and consumer groups (default "
                                        "bidirectional)")
    k.add_argument("--group-consumer-assignment-interval-ms", type=int, default=1000, metavar="MS",
                   help="minimum time between two target assignment computations of a group (KIP-1263; default "
                        "1000; 0 = at every epoch bump, Kafka 4.1/4.2)")
    k.add_argument("--group-consumer-min-assignment-interval-ms", type=int, default=0, metavar="MS")
    k.add_argument("--group-consumer-max-assignment-interval-ms", type=int, default=15000, metavar="MS")
    p.add_argument("--ui", default=None, metavar="[HOST:]PORT",
                   help="serve the live web view (groups, members, partitions, lag, rebalance timelines, fault "
                        "buttons) on HOST:PORT (HOST defaults to 127.0.0.1; PORT 0: any free port)")
    o = p.add_argument_group("logs")
    o.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                   help="log level on stderr (default INFO: what Kafka's group coordinator logs -- members joining, "
                        "leaving and expiring, rebalances and their reasons, generations, Stable/Empty/Dead, expired "
                        "offsets, coordinator loads and unloads, KIP-848 epoch bumps, target assignments and "
                        "fencing; WARNING: problems only)")
    o.add_argument("--log-format", default="text", choices=("text", "json"),
                   help="text: Kafka's log4j layout '[time] LEVEL message (class)'; json: one object per line with "
                        "the structured fields (event, group_id, member_id, generation_id, reason, ...)")
    p.add_argument("--narrate", action="store_true",
                   help="tell each protocol step of every group on stdout as real clients go through it "
                        "(the coordinator's records and answers)")
    p.add_argument("--lang", choices=("en", "zh"), default="en", help="language of --narrate (default: en)")
    p.set_defaults(func=run)


class UsageError(ValueError):
    pass


def parse_advertised(spec: str | None, brokers: int) -> tuple[str | None, int | None]:
    """``HOST``, ``HOST:PORT``, ``[IPv6]`` or ``[IPv6]:PORT`` -> (host, port or None)."""
    if spec is None:
        return None, None
    host, port = spec, None
    if spec.startswith("["):
        end = spec.find("]")
        if end < 0:
            raise UsageError(f"--advertised-host {spec!r}: missing ']'")
        host, rest = spec[1:end], spec[end + 1:]
        if rest:
            if not rest.startswith(":"):
                raise UsageError(f"--advertised-host {spec!r}: expected [HOST]:PORT")
            port = rest[1:]
    elif spec.count(":") == 1:
        host, port = spec.split(":")
    if not host:
        raise UsageError(f"--advertised-host {spec!r}: empty host")
    if port is not None:
        if not port.isdigit() or not 1 <= int(port) <= 65535 - (brokers - 1):
            raise UsageError(f"--advertised-host {spec!r}: PORT must be in 1-{65535 - (brokers - 1)}")
        return host, int(port)
    return host, None


def settings_from_args(args: argparse.Namespace):
    """The server settings for parsed flags; raises UsageError naming the offending flag."""
    from coordinator.config import ConfigError, CoordinatorConfig
    from broker.apis import valid_topic_name
    from broker.server import ServerSettings

    if args.brokers < 1:
        raise UsageError(f"--brokers must be >= 1 (got {args.brokers})")
    if not 0 <= args.port <= 65535 or (args.port and args.port + args.brokers - 1 > 65535):
        raise UsageError(f"--port {args.port}: ports {args.port}..{args.port + args.brokers - 1} must be in 1-65535 "
                         "(or 0 for ephemeral ports)")
    if args.max_request_bytes < 1:
        raise UsageError(f"--max-request-bytes must be >= 1 (got {args.max_request_bytes})")
    if args.max_connections < 0:
        raise UsageError(f"--max-connections must be >= 0 (got {args.max_connections})")
    if 0 < args.queued_max_request_bytes < args.max_request_bytes:
        # KafkaConfig: "queued.max.request.bytes must be larger than socket.request.max.bytes"
        raise UsageError(f"--queued-max-request-bytes ({args.queued_max_request_bytes}) must be >= "
                         f"--max-request-bytes ({args.max_request_bytes}), or <= 0 for no limit")
    if args.request_read_timeout_ms < 0:
        raise UsageError(f"--request-read-timeout-ms must be >= 0 (got {args.request_read_timeout_ms})")
    for flag, v in (("--num-partitions", args.num_partitions),
                    ("--default-replication-factor", args.default_replication_factor)):
        if v < 1:
            raise UsageError(f"{flag} must be >= 1 (got {v})")
    if args.default_replication_factor > args.brokers:
        raise UsageError(f"--default-replication-factor ({args.default_replication_factor}) must be <= --brokers "
                         f"({args.brokers})")
    rf = args.offsets_topic_replication_factor
    if rf is None:
        rf = min(3, args.brokers)
    if rf > args.brokers:
        raise UsageError(f"--offsets-topic-replication-factor ({rf}) must be <= --brokers ({args.brokers}): "
                         "__consumer_offsets could never be created")
    settings = {kafka: getattr(args, attr) for attr, kafka in _CONFIG_FLAGS.items()}
    settings["offsets.topic.replication.factor"] = rf
    try:
        config = CoordinatorConfig.create(settings)
    except ConfigError as e:
        msg = str(e)
        for kafka in sorted(_CONFIG_FLAGS.values(), key=len, reverse=True):
            msg = msg.replace(kafka, _flag(kafka))
        raise UsageError(msg) from None
    topics: list[tuple[str, int, int]] = []
    seen = set()
    for spec in args.topic:
        parts = spec.split(":")
        if len(parts) not in (2, 3):
            raise UsageError(f"--topic {spec!r}: expected NAME:PARTITIONS or NAME:PARTITIONS:REPLICATION")
        name = parts[0]
        if not valid_topic_name(name) or name.startswith("__"):
            raise UsageError(f"--topic {spec!r}: invalid topic name {name!r} (letters, digits, '.', '_', '-'; "
                             "at most 249 characters; names starting with '__' are internal)")
        if name in seen:
            raise UsageError(f"--topic {spec!r}: topic {name!r} given twice")
        seen.add(name)
        try:
            n = int(parts[1])
            r = int(parts[2]) if len(parts) == 3 else args.default_replication_factor
        except ValueError:
            raise UsageError(f"--topic {spec!r}: PARTITIONS and REPLICATION must be integers") from None
        if n < 1:
            raise UsageError(f"--topic {spec!r}: PARTITIONS must be >= 1")
        if not 1 <= r <= args.brokers:
            raise UsageError(f"--topic {spec!r}: REPLICATION must be between 1 and --brokers ({args.brokers})")
        topics.append((name, n, r))
    if args.data_dir is not None and os.path.exists(args.data_dir) and not os.path.isdir(args.data_dir):
        raise UsageError(f"--data-dir {args.data_dir}: not a directory")
    adv_host, adv_port = parse_advertised(args.advertised_host, args.brokers)
    return ServerSettings(brokers=args.brokers, host=args.host, port=args.port, advertised_host=adv_host,
                          advertised_port=adv_port,
                          data_dir=args.data_dir, max_request_bytes=args.max_request_bytes, topics=topics,
                          auto_create_topics=args.auto_create_topics, num_partitions=args.num_partitions,
                          default_replication_factor=args.default_replication_factor, config=config, seed=args.seed,
                          fsync=args.fsync, connections_max_idle_ms=args.connections_max_idle_ms,
                          max_connections=args.max_connections,
                          queued_max_request_bytes=args.queued_max_request_bytes,
                          request_read_timeout_ms=args.request_read_timeout_ms,
                          offsets_history_retention_bytes=args.offsets_history_retention_bytes)


def run(args: argparse.Namespace) -> int:
    import asyncio
    import signal

    try:
        settings = settings_from_args(args)
        ui = None
        if args.ui is not None:
            from kgroup.webview import parse_ui
            try:
                ui = parse_ui(args.ui)
            except ValueError as e:
                raise UsageError(str(e)) from None
    except UsageError as e:
        print(f"kgroup serve: {e}", file=sys.stderr)
        return 2
    from broker.grouplog import GroupLog, configure_logging
    from broker.server import KGroupServer

    configure_logging(args.log_level, args.log_format)

    async def main() -> int:
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError):  # pragma: no cover - non-Unix
                pass
        _maybe_trace_allocations(loop, signal)
        try:
            server = KGroupServer(settings)
        except Exception as e:  # noqa: BLE001 - e.g. an unreadable --data-dir
            print(f"kgroup serve: cannot start: {e}", file=sys.stderr)
            return 1
        server.add_listener(GroupLog(server))  # the coordinator's log (broker/grouplog.py)
        try:
            await server.start()
        except OSError as e:
            print(f"kgroup serve: cannot listen on {settings.host}:{settings.port}: {e}", file=sys.stderr)
            return 1
        print(f"kgroup serving bootstrap={server.bootstrap}", flush=True)
        if args.narrate:
            attach_narrator(server, args.lang)
        view = None
        if ui is not None:
            from kgroup.webview import WebView
            try:
                view = await WebView(server).start(*ui)
            except OSError as e:
                print(f"kgroup serve: cannot serve the web view on {args.ui}: {e}", file=sys.stderr)
                await server.close()
                return 1
            print(f"kgroup ui {view.url}", flush=True)
        try:
            await stop.wait()
        finally:
            if view is not None:
                await view.close()
            await server.close()
        print("kgroup serve: shut down", file=sys.stderr, flush=True)
        return 0

    return asyncio.run(main())


def _maybe_trace_allocations(loop, signal) -> None:
    """A debugging hook for memory growth (issue 14): with ``KGROUP_TRACEMALLOC=FILE`` set, trace allocations
    from the start and, on each SIGUSR1, append to FILE the 40 source lines whose live allocations grew most
    since the first SIGUSR1 (``tracemalloc`` snapshots compared by line). Off unless the variable is set."""
    import os
    path = os.environ.get("KGROUP_TRACEMALLOC")
    if not path:
        return
    import time
    import tracemalloc
    tracemalloc.start(int(os.environ.get("KGROUP_TRACEMALLOC_FRAMES", "1")))
    first: list = []

    def dump() -> None:
        snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        if not first:
            first.append(snap)
        stats = snap.compare_to(first[0], "traceback" if tracemalloc.get_traceback_limit() > 1 else "lineno")
        total = sum(s.size for s in snap.statistics("filename"))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        import collections
        import gc
        kinds = collections.Counter(type(o).__name__ for o in gc.get_objects())
        with open(path, "a") as f:
            print(f"--- {time.strftime('%H:%M:%S')} traced {total / 1e6:.1f} MB (peak since the last dump "
                  f"{peak / 1e6:.1f} MB){_malloc_info()}", file=f)
            print("    objects: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common(12)), file=f)
            for s in stats[:40]:
                print(f"{s.size_diff / 1e6:+9.2f} MB {s.count_diff:+9d} blocks  now {s.size / 1e6:8.2f} MB  "
                      + " <- ".join(f"{fr.filename.rsplit('/', 2)[-1]}:{fr.lineno}" for fr in s.traceback),
                      file=f)

    loop.add_signal_handler(signal.SIGUSR1, dump)


def _malloc_info() -> str:
    """glibc's heap figures (``mallinfo2``), where there is one: what the C allocator holds beyond the traced
    Python objects (free chunks it has not returned to the system show fragmentation)."""
    import ctypes
    import ctypes.util

    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                   "fsmblks", "uordblks", "fordblks", "keepcost")]
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallinfo2.restype = MallInfo2
        m = libc.mallinfo2()
    except (OSError, AttributeError):
        return ""
    return (f"; malloc: heap {m.arena / 1e6:.1f} MB (in use {m.uordblks / 1e6:.1f}, free {m.fordblks / 1e6:.1f}, "
            f"{m.ordblks} free chunks), mmapped {m.hblkhd / 1e6:.1f} MB in {m.hblks}{_pymalloc_info()}")


def _pymalloc_info() -> str:
    """CPython's small-object allocator: arenas held and the bytes its blocks use (``sys._debugmallocstats``)."""
    import os
    import sys
    import tempfile
    with tempfile.TemporaryFile() as t:
        saved = os.dup(2)
        try:
            os.dup2(t.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        t.seek(0)
        text = t.read().decode(errors="replace")
    got = {}
    for line in text.splitlines():
        if "=" in line and (line.startswith("# arenas allocated current") or line.startswith("# bytes in allocated")
                            or line.startswith("# bytes in available")):
            got[line.split("=")[0].strip("# ").strip()] = int(line.split("=")[1].replace(",", "").strip())
    return (f"; pymalloc: {got.get('arenas allocated current', 0)} arenas, blocks "
            f"{got.get('bytes in allocated blocks', 0) / 1e6:.1f} MB used, "
            f"{got.get('bytes in available blocks', 0) / 1e6:.1f} MB free")


def attach_narrator(server, lang: str) -> None:
    """``--narrate``: narrate every core Output of the running server (``KGroupServer.add_listener``)."""
    from kgroup.catalogue import Catalogue
    from kgroup.narrate import NarrationContext, ServeNarrator

    T = Catalogue(lang)
    cfg = server.settings.config
    ctx = NarrationContext(offsets_partitions=cfg.offsets_topic_num_partitions,
                           initial_delay_ms=cfg.group_initial_rebalance_delay_ms,
                           partitions_of={name: n for name, n, _ in server.settings.topics}, wide_groups=True,
                           consumer_assignor=cfg.default_consumer_group_assignor,
                           topic_names=lambda: list(server.cluster.topics), live=True)
    print(T("serve.narrating", lang=lang), flush=True)
    narrator = ServeNarrator(T, ctx, lambda line: print(line, flush=True), server.now_ms)
    # the consumer groups a --data-dir brought back are known before their next records
    narrator.narrator.cg.seed(e.record for log in server.svc.logs.values() for e in log)
    server.add_listener(narrator.on_output)
