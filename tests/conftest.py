"""Test-suite set-up shared by every package's tests (kept minimal).

* The repository root is importable even when pytest is started as ``pytest`` rather than ``python -m pytest``
  and the project is not installed.
* Hypothesis: no per-example deadline (CI machines are small and shared; a slow example is not a failing one).
  Select another profile with HYPOTHESIS_PROFILE.
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

try:
    from hypothesis import settings
except ImportError:  # pragma: no cover - hypothesis is in the test extra
    pass
else:
    settings.register_profile("kgroup", deadline=None, print_blob=True)
    settings.register_profile("thorough", parent=settings.get_profile("kgroup"), max_examples=1000)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "kgroup"))
