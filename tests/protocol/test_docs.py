"""docs/protocol.md's table of advertised versions must say what the code advertises."""

from __future__ import annotations

import re
from pathlib import Path

from broker.apis import SERVED_APIS
from protocol.api import APIS

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def _table(marker: str) -> dict[int, tuple[str, int, int]]:
    text = DOC.read_text()
    table = text.split(f"<!-- {marker}")[1].split(f"<!-- /{marker} -->")[0]
    rows = {}
    for m in re.finditer(r"^\| (\w+) \| (\d+) \| (\d+)(?:–(\d+))? \|$", table, re.M):
        name, key, lo, hi = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4) or m.group(3))
        rows[key] = (name, lo, hi)
    return rows


def test_advertised_table_matches_registry() -> None:
    served = {int(k) for k in SERVED_APIS}
    want = {api.key: (api.name, api.min_version, api.max_version) for api in APIS.values() if api.key in served}
    assert _table("advertised-table") == want
    schema_only = {api.key: (api.name, api.min_version, api.max_version) for api in APIS.values()
                   if api.key not in served}
    assert _table("schema-only-table") == schema_only
