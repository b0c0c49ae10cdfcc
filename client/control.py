"""The blocking client of ``kgroup serve``'s private fault-control API (``kgroup ctl``, tests in other processes).

The wire format is described in broker/faults.py: a request header v1 with :data:`protocol.api.CONTROL_API_KEY`
followed by a UTF-8 JSON object ``{"op": ..., args...}``; the response is the correlation id followed by a UTF-8
JSON object (``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "..."}``).
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

from protocol.api import CONTROL_API_KEY


class ControlClient:
    """A blocking client of the control channel (``kgroup ctl``, tests in other processes)."""

    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        self.sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        self._corr = 0

    def call(self, op: str, **args: Any) -> Any:
        self._corr += 1
        body = json.dumps({"op": op, **{k: v for k, v in args.items() if v is not None}}).encode()
        client_id = b"kgroup-ctl"
        payload = struct.pack(">hhih", CONTROL_API_KEY, 0, self._corr, len(client_id)) + client_id + body
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", self._read(4))[0]
        data = self._read(size)
        corr = struct.unpack(">i", data[:4])[0]
        if corr != self._corr:
            raise RuntimeError(f"correlation id {corr} != {self._corr}")
        reply = json.loads(data[4:].decode())
        if not reply.get("ok"):
            raise RuntimeError(reply.get("error"))
        return reply.get("result")

    def _read(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("the server closed the control connection")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "ControlClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
