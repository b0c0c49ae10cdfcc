"""`--advertised-host HOST[:PORT]` (Kafka's advertised.listeners): a client that can reach the brokers only through
a port-mapping proxy consumes and produces through it, because Metadata and FindCoordinator give it the proxy's
addresses. Also `kgroup serve --advertised-host` parsing."""

from __future__ import annotations

import asyncio
import socket
import threading

import pytest

from kgroup.testing import KGroupCluster

from harness import consumer, produce, wait_all, wait_cover

pytestmark = pytest.mark.interop


class PortMapper:
    """A TCP proxy: base+b -> the real port of broker b (what Docker's -p or a NAT does)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.targets: dict[int, int] = {}
        self.connections = [0] * n
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.base = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_until_complete(self._start())
        self.ready.set()
        self.loop.run_forever()

    async def _start(self) -> None:
        for _ in range(50):  # n consecutive free ports
            base = 20000 + int.from_bytes(__import__("os").urandom(2), "big") % 40000
            servers = []
            try:
                for b in range(self.n):
                    servers.append(await asyncio.start_server(self._handler(b), "127.0.0.1", base + b))
            except OSError:
                for s in servers:
                    s.close()
                continue
            self.base, self.servers = base, servers
            return
        raise RuntimeError("no free port range")

    def _handler(self, b: int):
        async def handle(reader, writer):
            self.connections[b] += 1
            try:
                r2, w2 = await asyncio.open_connection("127.0.0.1", self.targets[b])
            except OSError:
                writer.close()
                return

            async def pipe(r, w):
                try:
                    while data := await r.read(65536):
                        w.write(data)
                        await w.drain()
                except (OSError, asyncio.CancelledError):
                    pass
                finally:
                    w.close()
            await asyncio.gather(pipe(reader, w2), pipe(r2, writer))
        return handle

    def close(self) -> None:
        def stop():
            for s in self.servers:
                s.close()
            self.loop.stop()
        self.loop.call_soon_threadsafe(stop)
        self.thread.join(5)


def test_clients_behind_a_port_mapping_use_the_advertised_address():
    proxy = PortMapper(3)
    agents = []
    try:
        with KGroupCluster(advertised_host="127.0.0.1", advertised_port=proxy.base) as cluster:
            for b, port in cluster.server.ports.items():
                proxy.targets[b] = port
            assert all(cluster.server.cluster.brokers[b].port == proxy.base + b for b in range(3))
            cluster.create_topic("mapped", 3)
            bootstrap = f"127.0.0.1:{proxy.base}"
            for lib in ("kafka-python", "confluent-kafka"):
                agents.append(consumer(lib, bootstrap, "mapped", "mapped-group", name=f"adv-{lib}"))
            wait_cover(agents, 3)
            produced = produce("aiokafka", bootstrap, "mapped", [f"k{i}" for i in range(9)])
            wait_all(agents, lambda: sum(len(a.messages()) for a in agents) >= len(produced), 30, "all messages")
            # every broker that leads a partition or coordinates the group was reached through the proxy only
            assert sum(1 for c in proxy.connections if c) == 3, proxy.connections
    finally:
        for a in agents:
            a.kill()
        proxy.close()


@pytest.mark.parametrize("spec,want", [("kafka.example", ("kafka.example", None)),
                                       ("kafka.example:19092", ("kafka.example", 19092)),
                                       ("[::1]:9092", ("::1", 9092)), ("[::1]", ("::1", None)),
                                       ("::1", ("::1", None))])
def test_advertised_host_flag(spec, want):
    from kgroup.cmd_serve import parse_advertised
    assert parse_advertised(spec, 3) == want


@pytest.mark.parametrize("spec", ["h:0", "h:65535", "h:x", ":9092", "[::1"])
def test_advertised_host_flag_rejects(spec):
    from kgroup.cmd_serve import UsageError, parse_advertised
    with pytest.raises(UsageError, match="--advertised-host"):
        parse_advertised(spec, 3)


def test_wildcard_listener_advertises_a_name():
    from broker.server import KGroupServer, ServerSettings
    s = KGroupServer(ServerSettings(host="0.0.0.0", port=0))
    assert s.advertised_host == socket.getfqdn()
