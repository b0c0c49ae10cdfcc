"""The HTML report renders: it parses, every SVG is well-formed XML, nothing is loaded from the network."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

SVG_NS = "{http://www.w3.org/2000/svg}"


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs


def test_report_parses_and_svgs_are_well_formed(analyzed):
    text = (Path(analyzed.out) / "report.html").read_text(encoding="utf-8")
    p = _Collector()
    p.feed(text)
    p.close()
    assert p.tags[0] == "html" and "table" in p.tags
    assert "script" not in p.tags and "link" not in p.tags and "img" not in p.tags
    for name, value in p.attrs:
        if name in ("src", "href"):
            pytest.fail(f"external reference {name}={value}")
    svgs = re.findall(r"<svg\b.*?</svg>", text, flags=re.S)
    # assignors + (Gantt + ownership) for each of the 5 groups
    assert len(svgs) == 1 + 2 * 5
    titles = []
    for s in svgs:
        root = ET.fromstring(s)
        assert root.tag == SVG_NS + "svg"
        titles.append(root.find(SVG_NS + "title").text)
        for el in root.iter():
            for k, v in el.attrib.items():
                assert "http" not in v or k == "xmlns", (k, v)
    assert "assignor comparison" in titles
    assert "rebalance Gantt of group coop" in titles and "partition ownership of group eager" in titles


def test_gantt_draws_what_the_tables_say(analyzed):
    from analysis.report import gantt_svg
    data = analyzed.data
    run = next(r for r in data["runs"] if r.endswith("/A"))
    members = [m for m in data["members"] if m["run"] == run and m["group_id"] == "eager"]
    ivs = [iv for iv in data["member_intervals"] if iv["run"] == run and iv["group_id"] == "eager"]
    rbs = [r for r in data["rebalances"] if r["run"] == run and r["group_id"] == "eager"]
    root = ET.fromstring(gantt_svg("eager", members, ivs, rbs, 5000, 100))
    rects = root.findall(f".//{SVG_NS}rect")
    green = [r for r in rects if r.get("fill") == "#59a14f"]
    # ownership bars: a 3 generations, b 3, c 1
    assert len(green) == 7
    bands = [r for r in rects if r.get("fill") == "#f28e2b"]
    assert len(bands) == 2 * 3      # a light and a dark band per rebalance
    labels = [t.text for t in root.iter(SVG_NS + "text")]
    assert {"ca", "cb", "cc"} <= set(labels)


def test_member_names_number_incarnations():
    from analysis.report import member_names
    names = member_names([{"member_id": "m1", "client_id": "c", "first_seen_ms": 0},
                          {"member_id": "m2", "client_id": "c", "first_seen_ms": 10},
                          {"member_id": "m3", "client_id": None, "first_seen_ms": 5}])
    assert names == {"m1": "c", "m2": "c#2", "m3": "m3"}
