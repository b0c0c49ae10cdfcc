"""Test module basenames are unique across tests/.

The test folders are not packages (pytest's default "prepend" import mode), so two files with one basename
cannot both be collected: pytest stops with "import file mismatch". This check names the pair at once.
"""

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_test_module_basenames_are_unique():
    seen: dict[str, list[str]] = defaultdict(list)
    for p in TESTS.rglob("test_*.py"):
        seen[p.name].append(str(p.relative_to(TESTS)))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not clashes, f"rename one of each: {clashes}"
