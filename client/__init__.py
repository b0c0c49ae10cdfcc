"""Client-side I/O around the sans-IO consumer core: the asyncio wire client (``client.wire``), the asyncio
consumer driver that runs a ``consumer`` core over TCP (``client.driver``), and the blocking client of the
server's fault-control API (``client.control``)."""
