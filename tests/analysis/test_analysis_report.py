"""The HTML report: it parses, every SVG is well-formed XML, nothing is loaded from the network, the charts draw
what the tables say, and -- in headless Chromium -- labels fit their charts, the page does not overflow, the
time axes of a group's charts line up, and a screenshot shows ink across the page."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

SVG_NS = "{http://www.w3.org/2000/svg}"
LIB = Path(__file__).parents[2] / "scenarios" / "library"


class _Collector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []

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
    # the comparison + (Gantt + ownership) for each of the 6 groups + a lag chart for the 2 groups of the real
    # scenario run (its produce.jsonl gives the end offsets; the hand-made logs have none)
    assert len(svgs) == 1 + 2 * 6 + 2
    titles = []
    for s in svgs:
        root = ET.fromstring(s)
        assert root.tag == SVG_NS + "svg"
        titles.append(root.find(SVG_NS + "title").text)
        for el in root.iter():
            for k, v in el.attrib.items():
                assert "http" not in v or k == "xmlns", (k, v)
    assert "groups compared" in titles
    assert "rebalance Gantt of group coop" in titles and "partition ownership of group static" in titles
    assert "consumer lag of group sticky" in titles and "consumer lag of group coop" not in titles
    # runs with offset commits but no produce data say why they have no lag chart
    assert text.count("no lag chart: the log has offset commits but no produce data") == 4   # A x2, B, C


def _group(data, run_suffix, group):
    run = next(r for r in data["runs"] if r.endswith(run_suffix))
    return run, group


def test_gantt_draws_what_the_tables_say(analyzed):
    from analysis.report import group_charts, kind_colors, kind_of
    data = analyzed.data
    run, group = _group(data, "/A", "eager")
    colors = kind_colors(data["groups"])
    g = next(x for x in data["groups"] if x["run"] == run and x["group_id"] == group)
    gantt, owners = group_charts(data, run, group, colors)[:2]
    root = ET.fromstring(gantt)
    rects = root.findall(f".//{SVG_NS}rect")
    color = colors[kind_of(g)]
    # owning stretches: a [150,1010) [1045,2100) [2160,5000), b 3, c [1060,2000): 7 bars in the group's colour
    owned = [r for r in rects if r.get("fill") == color and r.get("height") == "12"]
    assert len(owned) == 7
    # a light band per rebalance, and the whole group stopped: [1020,1045) and [2150,2160)
    assert len([r for r in rects if r.get("fill-opacity") == "0.22"]) == 3
    stopped = [r.find(SVG_NS + "title").text for r in rects if r.get("fill") == "#b2182b" and r.get("height") == "5"]
    assert stopped == ["whole group stopped 920..945 ms", "whole group stopped 2050..2060 ms"]
    labels = [t.text for t in root.iter(SVG_NS + "text")]
    assert {"ca", "cb", "cc"} <= set(labels) and "0 s" in labels and "whole group stopped" in labels
    # the ownership chart has the same left margin and time scale: both axes start at the same x
    zero = lambda svg: [t.get("x") for t in ET.fromstring(svg).iter(SVG_NS + "text") if t.text == "0 s"]  # noqa
    assert zero(gantt) == zero(owners) and len(zero(gantt)) == 1


def test_one_colour_per_kind_everywhere(analyzed):
    from analysis.report import comparison_svg, kind_colors, kind_of
    data = analyzed.data
    colors = kind_colors(data["groups"])
    assert len(set(colors.values())) == len(colors)
    root = ET.fromstring(comparison_svg(data["groups"], colors))
    legend = {t.text for t in root.iter(SVG_NS + "text")}
    assert {"eager · range", "cooperative · cooperative-sticky", "eager · range · static", "eager · sticky"} <= legend
    fills = {r.get("fill") for r in root.iter(SVG_NS + "rect")}
    assert {colors[kind_of(g)] for g in data["groups"]} <= fills


def test_member_names_and_ticks():
    from analysis.report import member_names, nice_ticks
    names = member_names([{"member_id": "m1", "client_id": "c", "first_seen_ms": 0},
                          {"member_id": "m2", "client_id": "c", "first_seen_ms": 10},
                          {"member_id": "m3", "client_id": None, "first_seen_ms": 5},
                          {"member_id": "m4", "client_id": "s", "group_instance_id": "i1", "first_seen_ms": 7},
                          {"member_id": "m5", "client_id": "s", "group_instance_id": "i1", "first_seen_ms": 9}])
    assert names == {"m1": "c", "m2": "c#2", "m3": "m3", "m4": "i1", "m5": "i1 (member id 2)"}
    # ticks from 0 with a 1-2-5 step; a value axis ends at or above its largest value (0.42 / 4: step 0.2)
    assert nice_ticks(119.07) == [0, 20, 40, 60, 80, 100] and nice_ticks(0.42, 4, cover=True) == [0, 0.2, 0.4, 0.6]


@pytest.fixture(scope="module")
def rolling_report(spark, tmp_path_factory):
    """A real scenario's report (long member names, three kinds of group, produce data: a lag chart)."""
    from analysis.analyze import run_analysis
    from scenarios.runner import run_scenario
    root = tmp_path_factory.mktemp("rolling")
    run_scenario(LIB / "rolling-deploy.toml", 1, trace=False).write(root / "run")
    run_analysis([str(root / "run")], root / "out", spark=spark, export_events=False)
    return root / "out" / "report.html"


from browser import CHECK_SCRIPT  # noqa: E402  (the layout probe, shared with the consumer-group report test)


def test_report_in_headless_chromium(rolling_report, tmp_path):
    import browser
    if browser.chromium() is None:
        pytest.skip("chromium is not installed (make test installs it with apt-get)")
    html = rolling_report.read_text(encoding="utf-8")
    page = tmp_path / "checked.html"
    page.write_text(html.replace("</body>", CHECK_SCRIPT + "</body>"), encoding="utf-8")
    dom = browser.dump_dom(page)
    m = re.search(r'<pre id="kgroup-check">(.*?)</pre>', dom, flags=re.S)
    assert m, dom[-2000:]
    res = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                     .replace("&gt;", ">"))
    # comparison + (Gantt, ownership, lag) for each of the three groups
    assert res["svgs"] == 1 + 3 * 3, res
    assert res["clipped"] == [], res["clipped"][:5]
    assert res["page"][0] <= res["page"][1], "the page scrolls sideways"
    for right, body_right, overflow in res["boxes"]:
        assert right <= body_right + 1 and overflow in ("fits", "auto")
    for g in ("eager", "cooperative", "static"):
        xs = {res["charts"][f"{kind} of group {g}"] for kind in ("rebalance Gantt", "partition ownership",
                                                                 "consumer lag")}
        assert len(xs) == 1 and None not in xs, (g, xs)     # the three time axes start at the same x
    shot = browser.screenshot(rolling_report, tmp_path / "report.png", width=1000, height=1400)
    width, height, rows = browser.read_png(shot)
    assert (width, height) == (1000, 1400)
    # ink in every quarter of the page: header and comparison, Gantts, ownership charts
    for k in range(4):
        assert browser.non_blank_fraction(rows, k * height // 4, (k + 1) * height // 4) > 0.03, k
