"""Headless Chromium for the report tests (the Debian package `chromium`, installed by the Makefile): the DOM
after layout and scripts (`--dump-dom`), and screenshots decoded with the standard library (zlib) to measure
their non-blank area. Every call has a bounded wait (a subprocess timeout)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--force-device-scale-factor=1"]
TIMEOUT_S = 90


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run(args: list[str]) -> subprocess.CompletedProcess:
    exe = chromium()
    with tempfile.TemporaryDirectory(prefix="kgroup-chromium-") as profile:
        return subprocess.run([exe, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True, text=True,
                              timeout=TIMEOUT_S)


def dump_dom(page: Path, width: int = 1200, height: int = 1600) -> str:
    res = _run([f"--window-size={width},{height}", "--virtual-time-budget=5000", "--dump-dom", page.as_uri()])
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout


def screenshot(page: Path, out: Path, width: int = 1100, height: int = 1800) -> Path:
    res = _run([f"--window-size={width},{height}", f"--screenshot={out}", page.as_uri()])
    assert res.returncode == 0 and out.is_file(), res.stderr[-2000:]
    return out


def read_png(path: Path) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG (what Chromium writes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, [bytes(r) if bpp == 3 else bytes(b for i, b in enumerate(r) if i % 4 != 3)
                           for r in rows]


def non_blank_fraction(rows: list[bytes], y0: int = 0, y1: int | None = None) -> float:
    """The fraction of pixels in rows [y0, y1) that are not (near) white."""
    rows = rows[y0:y1]
    total = inked = 0
    for r in rows:
        for i in range(0, len(r), 3):
            total += 1
            if r[i] < 235 or r[i + 1] < 235 or r[i + 2] < 235:
                inked += 1
    return inked / max(1, total)


#: A script appended to a report page: after layout it writes, as JSON in <pre id="kgroup-check">, the labels that
#: leave their SVG, the x of each chart's "0 s" tick, the page width and each table box's overflow.
CHECK_SCRIPT = """<script>
addEventListener('load', () => {
  const out = {clipped: [], svgs: 0, charts: {}, page: [document.documentElement.scrollWidth, innerWidth],
               boxes: []};
  for (const svg of document.querySelectorAll('svg')) {
    out.svgs++;
    const w = svg.viewBox.baseVal.width, h = svg.viewBox.baseVal.height;
    for (const t of svg.querySelectorAll('text')) {
      const b = t.getBBox();
      if (b.width && (b.x < -0.5 || b.x + b.width > w + 0.5 || b.y < -0.5 || b.y + b.height > h + 0.5))
        out.clipped.push([svg.getAttribute('aria-label'), t.textContent, b.x, b.width, w]);
    }
    const zero = [...svg.querySelectorAll('text')].find(t => t.textContent === '0 s');
    out.charts[svg.getAttribute('aria-label')] = zero ? zero.getBoundingClientRect().left : null;
  }
  for (const box of document.querySelectorAll('.table-box'))
    out.boxes.push([box.getBoundingClientRect().right, document.body.getBoundingClientRect().right,
                    box.scrollWidth > box.clientWidth ? getComputedStyle(box).overflowX : 'fits']);
  const pre = document.createElement('pre');
  pre.id = 'kgroup-check';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
</script>"""
