"""Headless Chromium (the Debian package ``chromium``, installed by the Makefile) driven over the DevTools protocol on
a pipe (``--remote-debugging-pipe``: commands on fd 3, answers on fd 4, NUL-separated JSON) -- standard library only.
A test loads a live page once and reads its DOM as it changes (``Runtime.evaluate``), clicks its buttons, and takes
screenshots; every wait is bounded."""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from typing import Any, Callable

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--force-device-scale-factor=1"]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One headless Chromium with one page."""

    def __init__(self, width: int = 1100, height: int = 1400) -> None:
        exe = chromium()
        if exe is None:
            raise RuntimeError("chromium is not installed")
        cmd_r, cmd_w = os.pipe()
        res_r, res_w = os.pipe()

        def pipes() -> None:  # the child's fds 3 (commands in) and 4 (answers out)
            os.dup2(cmd_r, 3)
            os.dup2(res_w, 4)

        self.profile = tempfile.mkdtemp(prefix="kgroup-cdp-")
        self.proc = subprocess.Popen([exe, *FLAGS, f"--window-size={width},{height}", "--remote-debugging-pipe",
                                      f"--user-data-dir={self.profile}", "about:blank"], preexec_fn=pipes,
                                     pass_fds=(3, 4), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(cmd_r)
        os.close(res_w)
        self._w, self._r = cmd_w, res_r
        self._buf = b""
        self._id = 0
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                         "mobile": False}, session=True)

    def call(self, method: str, params: dict | None = None, *, session: bool = False, timeout: float = 20) -> Any:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                m = json.loads(raw)
                if m.get("id") == self._id:
                    if "error" in m:
                        raise RuntimeError(f"{method}: {m['error']}")
                    return m.get("result", {})
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no answer to {method} within {timeout}s")
            ready, _, _ = select.select([self._r], [], [], left)
            if ready:
                chunk = os.read(self._r, 1 << 16)
                if not chunk:
                    raise RuntimeError("chromium closed the DevTools pipe")
                self._buf += chunk

    def goto(self, url: str) -> None:
        self.call("Page.navigate", {"url": url}, session=True)

    def js(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                      session=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def wait(self, expression: str, pred: Callable[[Any], bool] = bool, timeout: float = 30, what: str = "") -> Any:
        """Evaluate ``expression`` until ``pred`` holds for its value (bounded)."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            try:
                value = self.js(expression)
            except RuntimeError:
                value = None
            if pred(value):
                return value
            time.sleep(0.2)
        raise AssertionError(f"timed out after {timeout}s waiting for {what or expression}; last value: {value!r}")

    def screenshot(self, path: str) -> str:
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": False},
                         session=True)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except Exception:  # noqa: BLE001 - it is going away anyway
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        os.close(self._w)
        os.close(self._r)
        shutil.rmtree(self.profile, ignore_errors=True)
