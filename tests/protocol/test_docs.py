"""docs/protocol.md's table of advertised versions must say what the code advertises."""

from __future__ import annotations

import re
from pathlib import Path

from protocol.api import APIS

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def test_advertised_table_matches_registry() -> None:
    text = DOC.read_text()
    table = text.split("<!-- advertised-table")[1].split("<!-- /advertised-table -->")[0]
    rows = {}
    for m in re.finditer(r"^\| (\w+) \| (\d+) \| (\d+)(?:–(\d+))? \|$", table, re.M):
        name, key, lo, hi = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4) or m.group(3))
        rows[key] = (name, lo, hi)
    want = {api.key: (api.name, api.min_version, api.max_version) for api in APIS.values()}
    assert rows == want
