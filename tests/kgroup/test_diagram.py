"""``kgroup diagram``: sequence diagrams of a run, as Mermaid text (checked against Mermaid's sequenceDiagram
grammar) and as SVG (parsed, and rendered in headless Chromium). The expected messages follow from Kafka's
rules (KIP-394 member ids, the first member leads, RangeAssignor's split), not from kgroup's output."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kgroup.cli import main
from scenarios.runner import library_paths, run_scenario
from tests.kgroup.mermaid_grammar import MermaidSyntaxError, check

SVG_NS = "{http://www.w3.org/2000/svg}"


def _java_hash(s: str) -> int:
    h = 0
    for ch in s:  # ASCII group ids: one UTF-16 unit per character
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _run(name: str, out: Path) -> Path:
    path = next(p for p in library_paths() if p.stem == name)
    run_scenario(path).write(out)
    return out


@pytest.fixture(scope="module")
def joins(tmp_path_factory) -> Path:
    return _run("join-four-phases", tmp_path_factory.mktemp("jfp"))


@pytest.fixture(scope="module")
def two_groups(tmp_path_factory) -> Path:
    return _run("broadcast-unicast", tmp_path_factory.mktemp("bu"))


def _mermaid(capsys, *args: str) -> dict:
    assert main(["diagram", *args]) == 0
    return check(capsys.readouterr().out)


# --- the grammar checker itself ---------------------------------------------------------------------------------

def test_grammar_accepts_mermaids_documented_examples():
    check("sequenceDiagram\n    Alice->>John: Hello John, how are you?\n    John-->>Alice: Great!\n"
          "    Alice-)John: See you later!\n", require_declared=False)
    check("sequenceDiagram\n    participant A as Alice\n    participant J as John\n    A->>J: Hello John\n"
          "    Note right of J: Text in note\n    Note over A,J: A typical interaction\n"
          "    loop Every minute\n        J-->>A: Great!\n    end\n")


@pytest.mark.parametrize("bad", [
    "graph TD\n A-->B",                                          # not a sequence diagram
    "sequenceDiagram\n participant A\n A->>A: a;b",               # ';' ends a statement inside the text
    "sequenceDiagram\n participant A\n A->>A: issue #19",         # '#' starts a comment inside the text
    "sequenceDiagram\n participant A\n A->>A:",                   # a signal needs a text
    "sequenceDiagram\n participant A\n A=>>A: x",                 # not an arrow
    "sequenceDiagram\n participant A\n Note above A: x",          # no such placement
    "sequenceDiagram\n participant A\n B->>A: x",                 # undeclared actor
    "sequenceDiagram\n participant A\n loop x\n A->>A: y",        # block never ends
    "sequenceDiagram\n participant A-:B\n",                       # ':' in an id
])
def test_grammar_rejects(bad):
    with pytest.raises(MermaidSyntaxError):
        check(bad)


# --- kgroup diagram ----------------------------------------------------------------------------------------------

def test_a_consumer_joining_a_running_group(joins, capsys):
    doc = _mermaid(capsys, str(joins), "--from", "20s", "--to", "22s")
    labels = dict(doc["participants"])
    # the coordinator: Utils.abs(hash) % 50 -> partition p; with the article's placement its leader is p mod 3
    p = abs(_java_hash("billing")) % 50
    coordinator = next(pid for pid, label in labels.items() if label.startswith("coordinator"))
    assert labels[coordinator] == f"coordinator (broker {p % 3})"
    name = {pid: label for pid, label in labels.items()}
    sig = [(name[a], arrow, name[b], txt) for a, arrow, b, txt in doc["signals"]]
    co = labels[coordinator]
    # FIND_COORDINATOR, then KIP-394: JoinGroup with member_id "" -> MEMBER_ID_REQUIRED -> JoinGroup with the id
    new = [s for s in sig if "billing-new" in (s[0], s[2])]
    assert new[0][:3] == ("billing-new", "->>", co) and new[0][3].startswith("FIND_COORDINATOR")
    assert new[2][3] == 'JOIN_GROUP member_id=""'
    assert new[3][1] == "-->>" and "MEMBER_ID_REQUIRED" in new[3][3]
    # the members already in the group learn of the rebalance from a heartbeat: REBALANCE_IN_PROGRESS
    hb = [s for s in sig if s[3] == "HEARTBEAT REBALANCE_IN_PROGRESS"]
    assert sorted(s[2] for s in hb) == ["billing-0", "billing-1"]
    # one leader (the first member that ever joined), two followers
    join_answers = [s for s in sig if s[0] == co and s[3].startswith("JOIN_GROUP gen 2")]
    assert len(join_answers) == 3
    assert [s[2] for s in join_answers if "you are the leader" in s[3]] == ["billing-0"]
    # RangeAssignor: 6 partitions over 3 members sorted by member id -> 2 each, in order
    sync = {s[2]: s[3] for s in sig if s[0] == co and s[3].startswith("SYNC_GROUP NONE")}
    assert sync == {"billing-0": "SYNC_GROUP NONE: orders-[0,1]", "billing-1": "SYNC_GROUP NONE: orders-[2,3]",
                    "billing-new": "SYNC_GROUP NONE: orders-[4,5]"}
    # the leader's SyncGroup is the only one carrying assignments
    assert [s[0] for s in sig if s[3] == "SYNC_GROUP gen 2 with 3 assignments"] == ["billing-0"]
    notes = [text for _, text in doc["notes"]]
    order = [next(i for i, t in enumerate(notes) if t.startswith(k))
             for k in ("PreparingRebalance (generation 1)", "CompletingRebalance: generation 2", "Stable: generation 2")]
    assert order == sorted(order)


def test_window_group_filter_and_languages(two_groups, capsys):
    both = _mermaid(capsys, str(two_groups))
    assert {label for _, label in both["participants"]} >= {"group1-0", "group2-0", "group2-1", "group2-2"}
    only = _mermaid(capsys, str(two_groups), "--group", "group2")
    names = {label for _, label in only["participants"]}
    assert "group1-0" not in names and {"group2-0", "group2-1", "group2-2"} <= names
    zh = _mermaid(capsys, str(two_groups), "--group", "group1", "--lang", "zh")
    assert any("首次再平衡" in text or "Stable" in text for _, text in zh["notes"])
    assert any(label.startswith("协调者") for _, label in zh["participants"])
    early = _mermaid(capsys, str(two_groups), "--to", "1")
    assert all(not s[3].startswith("SYNC_GROUP") for s in early["signals"])


def test_events_or_trace_alone(joins, capsys):
    records_only = _mermaid(capsys, str(joins / "events.jsonl"))
    assert any(s[3].startswith("JOIN_GROUP") for s in records_only["signals"])
    assert not any(s[3].startswith("FIND_COORDINATOR") for s in records_only["signals"])  # that is in the trace
    trace_only = _mermaid(capsys, str(joins / "trace.jsonl"), "--from", "20s", "--to", "22s")
    labels = dict(trace_only["participants"])
    assert sorted(labels.values()) == ["billing-0", "billing-1", "billing-new", "coordinator (broker 0)"]
    sig = [(labels[a], labels[b], txt) for a, _, b, txt in trace_only["signals"]]
    # the consumer side alone: the newcomer's JoinGroup, everyone's answers, the heartbeats that told the others
    assert ("billing-new", "coordinator (broker 0)", 'JOIN_GROUP member_id=""') in sig
    assert [b for a, b, txt in sig if txt == "JOIN_GROUP gen 2: you are the leader"] == ["billing-0"]
    assert sorted(b for a, b, txt in sig if txt == "HEARTBEAT REBALANCE_IN_PROGRESS") == ["billing-0", "billing-1"]
    assert main(["diagram", str(joins / "trace.jsonl"), "--group", "billing"]) == 2


def test_svg_document(joins, tmp_path, capsys):
    out = tmp_path / "d.svg"
    assert main(["diagram", str(joins), "--from", "20s", "--to", "22s", "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    root = ET.parse(out).getroot()
    assert root.tag == f"{SVG_NS}svg"
    texts = [t.text for t in root.iter(f"{SVG_NS}text")]
    for name in ("billing-0", "billing-1", "billing-new", "coordinator (broker 0)"):
        assert texts.count(name) == 2  # the participant box on top and at the bottom
    arrows = [el for el in root.iter() if el.get("class") in ("msg", "reply")]
    assert main(["diagram", str(joins), "--from", "20s", "--to", "22s"]) == 0
    doc = check(capsys.readouterr().out)
    assert len(arrows) == len(doc["signals"])
    assert not any(el.tag.endswith("script") for el in root.iter())
    assert "http" not in out.read_text().replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_bad_input(tmp_path, two_groups, capsys):
    assert main(["diagram", str(tmp_path / "nope")]) == 2
    assert main(["diagram", str(two_groups), "--group", "nosuch"]) == 2
    assert main(["diagram", str(two_groups), "--from", "soon"]) == 2
    assert main(["diagram", str(two_groups), "--from", "5s", "--to", "1s"]) == 2
    (tmp_path / "x.jsonl").write_text("not json\n")
    assert main(["diagram", str(tmp_path / "x.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "nosuch" in err and "soon" in err and "x.jsonl:1" in err


def test_svg_renders_in_chromium(joins, tmp_path):
    from tests.analysis import browser
    if browser.chromium() is None:
        pytest.skip("chromium is not installed (make test installs it with apt-get)")
    out = tmp_path / "d.svg"
    assert main(["diagram", str(joins), "--from", "20s", "--to", "22s", "--out", str(out)]) == 0
    shot = browser.screenshot(out, tmp_path / "d.png", width=900, height=900)
    _, height, rows = browser.read_png(shot)
    assert browser.non_blank_fraction(rows, 0, 120) > 0.02   # title and participant boxes
    assert browser.non_blank_fraction(rows, 120, height) > 0.02  # arrows, labels, notes


def test_demo_writes_a_diagram_per_phase_from_the_wire(tmp_path):
    import subprocess
    import sys
    out = tmp_path / "diagrams"
    proc = subprocess.run([sys.executable, "-m", "kgroup", "demo", "--lang", "zh", "--diagrams", str(out),
                           "--session-timeout-ms", "1000", "--heartbeat-interval-ms", "200",
                           "--initial-rebalance-delay-ms", "100", "--heartbeat-phase-ms", "600"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "第四阶段：HEARTBEAT" in proc.stdout and "每个阶段的时序图已写到" in proc.stdout
    stems = ["phase-1-3-join-sync", "phase-4-heartbeat", "phase-5-leave", "phase-6-kill"]
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{s}.{e}" for s in stems for e in ("mmd", "svg"))
    docs = {s: check((out / f"{s}.mmd").read_text()) for s in stems}
    for s in stems:
        ET.parse(out / f"{s}.svg")
        labels = [label for _, label in docs[s]["participants"]]
        assert labels[:3] == ["c1", "c2", "c3"] and labels[3].startswith("协调者（broker ")
    join = [txt for _, _, _, txt in docs["phase-1-3-join-sync"]["signals"]]
    # KIP-394 on the wire: each consumer's first JoinGroup has member_id "" and is answered MEMBER_ID_REQUIRED
    assert sum(t.startswith('JOIN_GROUP member_id=""') for t in join) == 3
    assert sum("MEMBER_ID_REQUIRED" in t for t in join) == 3
    assert sum("你是 leader" in t for t in join) == 1
    # the heartbeats themselves (the wire, not derived): every 200 ms, answered NONE while the group is stable
    beats = docs["phase-4-heartbeat"]["signals"]
    assert sum(t == "HEARTBEAT NONE" for _, _, _, t in beats) >= 6
    kill = docs["phase-6-kill"]
    assert any("被杀掉" in text for _, text in kill["notes"])
    assert any("被移出" in text for _, text in kill["notes"])
