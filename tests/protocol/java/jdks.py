"""Finding the JDKs on this machine for the tests that check kgroup's Java semantics against real Java.

``find_jdks()`` returns at most one JDK per rule set: ``"17"`` (``javac`` on PATH or under /usr/lib/jvm, feature
version <= 18) and ``"21+"`` (feature version >= 19: ``HashSet(Collection)`` sized by ``HashMap.newHashMap``,
the rule Kafka 4.x on JDK 21 runs with), each as ``(feature version, bin directory)``.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess


def _feature_version(javac: str) -> int | None:
    try:
        out = subprocess.run([javac, "-version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"javac (\d+)", out.stdout + out.stderr)
    return int(m.group(1)) if m else None


def find_jdks() -> dict[str, tuple[int, str]]:
    found: dict[str, tuple[int, str]] = {}
    candidates = []
    on_path = shutil.which("javac")
    if on_path:
        candidates.append(os.path.dirname(os.path.realpath(on_path)))
    candidates += sorted(os.path.dirname(p) for p in glob.glob("/usr/lib/jvm/*/bin/javac"))
    for bindir in candidates:
        javac, java = os.path.join(bindir, "javac"), os.path.join(bindir, "java")
        if not (os.path.exists(javac) and os.path.exists(java)):
            continue
        v = _feature_version(javac)
        if v is not None:
            found.setdefault("21+" if v >= 19 else "17", (v, bindir))
    return found
