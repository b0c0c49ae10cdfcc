"""Run ``kgroup serve`` inside a test process: :class:`KGroupCluster` (used by the pytest plugin's ``kgroup_cluster``
fixture, kgroup/pytest_plugin.py, and by tests/interop).

The server runs on its own asyncio loop in a daemon thread, so blocking clients (kafka-python, confluent-kafka)
and asyncio clients (aiokafka, on the test's loop) can both talk to it. :attr:`KGroupCluster.control` is a
thread-safe, blocking view of :class:`broker.faults.FaultControl`: every method runs on the server's loop and
returns its result (``cluster.control.stop_broker(1)``, ``cluster.control.expire_member("g", "client-a")``, ...).

    with KGroupCluster(topics={"orders": 6}) as cluster:
        consumer = KafkaConsumer("orders", bootstrap_servers=cluster.bootstrap, group_id="g")
        ...
        cluster.control.move_coordinator("g", 2)
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

from coordinator.config import CoordinatorConfig


class _ControlProxy:
    def __init__(self, cluster: "KGroupCluster") -> None:
        self._cluster = cluster

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._cluster.server.faults, name)
        if not callable(target):
            return target

        def call(*args: Any, **kwargs: Any) -> Any:
            async def run() -> Any:
                r = target(*args, **kwargs)
                return await r if inspect.isawaitable(r) else r
            return self._cluster.run(run())
        call.__name__ = name
        return call


class KGroupCluster:
    """An N-broker ``kgroup serve`` on ephemeral loopback ports in a background thread."""

    def __init__(self, brokers: int = 3, topics: dict[str, int] | None = None, *, auto_create_topics: bool = True,
                 num_partitions: int = 3, initial_rebalance_delay_ms: int = 0, min_session_timeout_ms: int = 100,
                 data_dir: str | None = None, host: str = "127.0.0.1", advertised_host: str | None = None,
                 advertised_port: int | None = None,
                 config: dict[str, Any] | None = None, timeout: float = 10.0) -> None:
        from broker.server import ServerSettings

        conf = {"group.initial.rebalance.delay.ms": initial_rebalance_delay_ms,
                "group.min.session.timeout.ms": min_session_timeout_ms,
                "offsets.topic.replication.factor": min(3, brokers)}
        conf.update(config or {})
        self.settings = ServerSettings(
            brokers=brokers, host=host, port=0, advertised_host=advertised_host, advertised_port=advertised_port,
            data_dir=data_dir,
            topics=[(n, p, 1) for n, p in (topics or {}).items()], auto_create_topics=auto_create_topics,
            num_partitions=num_partitions, config=CoordinatorConfig.create(conf))
        self.timeout = timeout
        self.server: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self.control = _ControlProxy(self)

    # --- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> "KGroupCluster":
        from broker.server import KGroupServer

        ready = threading.Event()
        errors: list[BaseException] = []

        async def main() -> None:
            self._stop = asyncio.Event()
            try:
                self.server = KGroupServer(self.settings)
                await self.server.start()
            except BaseException as e:  # noqa: BLE001
                errors.append(e)
                ready.set()
                return
            ready.set()
            try:
                await self._stop.wait()
            finally:
                await self.server.close()

        def thread() -> None:
            self.loop = asyncio.new_event_loop()
            try:
                self.loop.run_until_complete(main())
            finally:
                self.loop.close()

        self._thread = threading.Thread(target=thread, name="kgroup-server", daemon=True)
        self._thread.start()
        if not ready.wait(self.timeout):
            raise TimeoutError("kgroup server did not start")
        if errors:
            raise errors[0]
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        if self.loop is not None and self._stop is not None and not self.loop.is_closed():
            try:
                self.loop.call_soon_threadsafe(self._stop.set)
            except RuntimeError:
                pass
        self._thread.join(self.timeout)
        self._thread = None

    def __enter__(self) -> "KGroupCluster":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # --- use -------------------------------------------------------------------------------------------------

    @property
    def bootstrap(self) -> str:
        return self.server.bootstrap

    def run(self, coro: Any, timeout: float | None = None) -> Any:
        """Run a coroutine on the server's loop and wait (bounded) for its result."""
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(self.timeout if timeout is None else timeout)

    def call(self, fn: Any, *args: Any) -> Any:
        """Call a plain function on the server's loop (e.g. to read ``server.svc`` state consistently)."""
        async def run() -> Any:
            return fn(*args)
        return self.run(run())

    def create_topic(self, name: str, partitions: int, replication_factor: int = 1) -> None:
        self.call(self.server.cluster.create_topic, name, partitions, replication_factor)

    def consumer_group(self, group: str) -> dict[str, Any] | None:
        """A KIP-848 consumer group as the coordinator holds it (None if there is none): ``state``,
        ``group_epoch``, ``assignment_epoch`` and per member id its ``member_epoch``, ``state``, ``classic`` (uses the
        classic protocol), ``assigned`` and ``target`` ([(topic, partition)])."""
        def read() -> dict[str, Any] | None:
            g = self.server.svc.consumer_group(group)
            if g is None:
                return None
            from coordinator.cluster import topic_id
            from protocol.uuids import uuid_to_string

            names = {uuid_to_string(topic_id(n)): n for n in self.server.cluster.topics}

            def tps(parts) -> list[tuple[str, int]]:
                return sorted((names.get(t, t), p) for t, ps in parts.items() for p in ps)
            return {"state": str(g.state), "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch,
                    "members": {mid: {"member_epoch": m.member_epoch, "state": m.state.name,
                                      "classic": m.use_classic_protocol, "assigned": tps(m.assigned_partitions),
                                      "target": tps(dict(g.target_assignment[mid].partitions)
                                                    if mid in g.target_assignment else {})}
                                for mid, m in g.members.items()}}
        return self.call(read)

    def assignment(self, group: str) -> dict[str, list[tuple[str, int]]]:
        """The group's current assignment as the coordinator stored it: member id -> [(topic, partition)]."""
        from protocol.consumer_protocol import decode_assignment

        def read() -> dict[str, list[tuple[str, int]]]:
            g = self.server.svc.group(group)
            out: dict[str, list[tuple[str, int]]] = {}
            if g is None:
                return out
            for mid, m in g.members.items():
                raw = getattr(m, "assignment", b"") or b""
                try:
                    a = decode_assignment(raw)[1] if raw else None
                except Exception:  # noqa: BLE001
                    a = None
                out[mid] = sorted((t, p) for t, ps in (a.assigned_partitions if a else []) for p in ps)
            return out
        return self.call(read)
