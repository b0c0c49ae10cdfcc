"""The live web view (`kgroup serve --ui`) in headless Chromium while real kafka-python consumers join and leave: the
page is loaded once and its DOM is read as the group changes (group, state, generation, members, partitions, lag,
the rebalance timeline), its fault buttons are clicked; the partitions each member shows are what that consumer
itself reports (its own assignment), the state and generation what the coordinator holds. Plus the HTTP surface
(static files, 404/405, the refusals of fault control). Every wait is bounded."""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "interop"))
from harness import agents, consumer, consumer848, produce, wait_all, wait_cover  # noqa: E402,F401  (agents: fixture)

import cdp  # noqa: E402

pytestmark = pytest.mark.interop

READ = """(() => {
  const q = (tr, c) => (tr.querySelector('.' + c) || {}).textContent;
  return {
    updates: Number(document.body.dataset.updates),
    groups: [...document.querySelectorAll('#groups tbody tr')].map(tr => ({group: tr.dataset.group,
      state: q(tr, 'state'), generation: Number(q(tr, 'generation')), members: Number(q(tr, 'members')),
      assignor: q(tr, 'assignor')})),
    members: [...document.querySelectorAll('#members tbody tr')].map(tr => ({id: tr.dataset.member,
      client: q(tr, 'client-id'), host: q(tr, 'host'), instance: q(tr, 'instance-id'), parts: q(tr, 'partitions')})),
    lag: [...document.querySelectorAll('#lag tbody tr')].map(tr => [...tr.children].map(td => td.textContent)),
    gantt: !!document.querySelector('#timeline svg[aria-label="rebalance Gantt of group live"]'),
    ownership: !!document.querySelector('#timeline svg[aria-label="partition ownership of group live"]'),
    bars: document.querySelectorAll('#timeline svg rect').length,
    clock: document.getElementById('clock').textContent,
  };
})()"""


@pytest.fixture
def kgroup_cluster_options():
    return {"auto_create_topics": False, "topics": {"orders": 4}}


@pytest.fixture
def view(kgroup_cluster):
    from kgroup.webview import WebView

    async def start():
        return await WebView(kgroup_cluster.server).start("127.0.0.1", 0)
    v = kgroup_cluster.run(start())
    yield v
    kgroup_cluster.run(v.close())


@pytest.fixture
def browser():
    if cdp.chromium() is None:
        pytest.skip("chromium is not installed (make test installs it with apt-get)")
    b = cdp.Browser()
    yield b
    b.close()


def parts_text(ps) -> str:
    return "orders-[" + ",".join(str(p) for p in sorted(ps)) + "]" if ps else "(none)"


def test_live_page_follows_consumers_joining_and_leaving(kgroup_cluster, view, browser, agents, tmp_path):
    cluster = kgroup_cluster
    produce("kafka-python", cluster.bootstrap, "orders", [f"k{i}" for i in range(40)])
    browser.goto(view.url)
    browser.wait("document.getElementById('no-groups') && !document.getElementById('no-groups').hidden",
                 what="the empty page")
    a = consumer("kafka-python", cluster.bootstrap, "orders", "live", name="web-a")
    b = consumer("kafka-python", cluster.bootstrap, "orders", "live", name="web-b")
    agents += [a, b]
    wait_cover([a, b], 4)

    def generation():
        return cluster.call(lambda: cluster.server.svc.group("live").generation_id)

    def shows(snapshot, n_members):
        return (snapshot and snapshot["groups"] and snapshot["groups"][0]["group"] == "live"
                and snapshot["groups"][0]["state"] == "Stable" and snapshot["groups"][0]["members"] == n_members
                and len(snapshot["members"]) == n_members and snapshot["gantt"] and snapshot["ownership"])
    s = browser.wait(READ, lambda s: shows(s, 2) and s["groups"][0]["generation"] == generation(), 30,
                     "the group Stable with 2 members and its timeline")
    g = s["groups"][0]
    assert g["assignor"] == "range"
    # each member's partitions, as that consumer itself reports them
    by_client = {m["client"]: m for m in s["members"]}
    assert set(by_client) == {"web-a", "web-b"}
    assert by_client["web-a"]["parts"] == parts_text(a.assignment)
    assert by_client["web-b"]["parts"] == parts_text(b.assignment)
    assert all(m["host"] == "/127.0.0.1" and m["instance"] == "-" for m in s["members"])
    members_now = set(cluster.assignment("live"))
    assert {m["id"].replace(" (leader)", "") for m in s["members"]} == members_now
    # lag per partition: the agents commit automatically; every partition has a row with a log end offset
    assert sorted(int(r[1]) for r in s["lag"]) == [0, 1, 2, 3]
    assert sum(int(r[3]) for r in s["lag"]) == 40
    first_updates, first_gen = s["updates"], g["generation"]
    browser.screenshot(str(tmp_path / "live.png"))

    # one consumer leaves: the same page (no reload) shows one member with every partition, a later generation
    a.close()
    wait_cover([b], 4)
    s = browser.wait(READ, lambda s: shows(s, 1) and s["groups"][0]["generation"] > first_gen
                     and s["members"][0]["parts"] == parts_text(range(4)), 30, "the group after the leave")
    assert s["updates"] > first_updates
    assert s["members"][0]["client"] == "web-b" and b.assignment == [0, 1, 2, 3]

    # a fault button: expire web-b's session; the coordinator removes it, the consumer rejoins (a new generation)
    before = generation()
    browser.js("document.querySelector('#members tbody tr button.expire').click()")
    s = browser.wait(READ, lambda s: shows(s, 1) and s["groups"][0]["generation"] > before + 0, 30,
                     "the group after expiring its member")
    assert generation() > before
    # the clock buttons: frozen, then running again
    browser.js("document.getElementById('freeze').click()")
    browser.wait(READ, lambda s: s and "(frozen)" in s["clock"], 10, "the frozen clock")
    assert cluster.call(lambda: cluster.server.clock.frozen)
    browser.js("document.getElementById('thaw').click()")
    browser.wait(READ, lambda s: s and "(frozen)" not in s["clock"], 10, "the running clock")


READ848 = """(() => {
  const q = (tr, c) => (tr.querySelector('.' + c) || {}).textContent;
  return {
    groups: [...document.querySelectorAll('#groups tbody tr')].map(tr => ({group: tr.dataset.group,
      state: q(tr, 'state'), epoch: Number(q(tr, 'generation')), target: q(tr, 'assignment-epoch'),
      type: q(tr, 'type'), assignor: q(tr, 'assignor'), members: Number(q(tr, 'members'))})),
    detail: document.getElementById('detail-state').textContent,
    members: [...document.querySelectorAll('#members tbody tr')].map(tr => ({id: tr.dataset.member,
      client: q(tr, 'client-id'), parts: q(tr, 'partitions'), epoch: q(tr, 'member-epoch'),
      state: q(tr, 'member-state'), target: q(tr, 'target')})),
    chart: !!document.querySelector('#timeline svg[aria-label="epochs of consumer group live848"]'),
    lanes: [...document.querySelectorAll('#timeline svg rect[data-member]')].map(r => [r.dataset.member,
      r.dataset.state, Number(r.dataset.epoch)]),
    events: [...document.querySelectorAll('#timeline table.epochs tbody tr')].map(tr => tr.children[1].textContent),
  };
})()"""


def test_live_page_shows_a_kip848_consumer_group(kgroup_cluster, view, browser, agents):
    """confluent-kafka consumers with group.protocol=consumer: the page shows the group's type, group epoch, target
    assignment epoch and server assignor, each member's epoch, state and target next to the partitions the consumer
    itself reports, and the epoch timeline (member state lanes, events); it follows a member leaving, and the expire
    button fences a member (its session, as the coordinator's timer would)."""
    pytest.importorskip("confluent_kafka")
    cluster = kgroup_cluster
    browser.goto(view.url)
    a = consumer848(cluster.bootstrap, "orders", "live848", name="cg-a")
    b = consumer848(cluster.bootstrap, "orders", "live848", name="cg-b")
    agents += [a, b]
    wait_cover([a, b], 4)

    def truth():
        return cluster.consumer_group("live848")

    def shows(s, n):
        g = truth()
        return (s and s["groups"] and s["groups"][0]["group"] == "live848" and g is not None and g["state"] == "Stable"
                and s["groups"][0]["state"] == "Stable" and len(s["members"]) == n == len(g["members"])
                and s["groups"][0]["epoch"] == g["group_epoch"] and s["groups"][0]["target"] == str(g["assignment_epoch"])
                and all(m["epoch"] == str(g["assignment_epoch"]) and m["state"] == "STABLE" for m in s["members"])
                and s["chart"])
    s = browser.wait(READ848, lambda s: shows(s, 2), 30, "the consumer group Stable with 2 reconciled members")
    g = truth()
    row = s["groups"][0]
    assert (row["type"], row["assignor"], row["members"]) == ("consumer", "uniform", 2)
    assert s["detail"] == (f"Stable, group epoch {g['group_epoch']}, target assignment epoch "
                           f"{g['assignment_epoch']}")
    by_client = {m["client"]: m for m in s["members"]}
    assert by_client["cg-a"]["parts"] == parts_text(a.assignment) == by_client["cg-a"]["target"]
    assert by_client["cg-b"]["parts"] == parts_text(b.assignment) == by_client["cg-b"]["target"]
    assert {m["id"] for m in s["members"]} == set(g["members"])
    # the timeline: each member's lane ends STABLE at the assignment epoch; the events name the epochs
    last = {}
    for mid, state, epoch in s["lanes"]:
        last[mid] = (state, epoch)
    assert {mid: last[mid] for mid in g["members"]} == {mid: ("STABLE", g["assignment_epoch"]) for mid in g["members"]}
    assert f"group epoch {g['group_epoch']}" in s["events"]
    assert f"target assignment epoch {g['assignment_epoch']}" in s["events"]

    # a leaves: the same page shows b alone with every partition at a later epoch
    before = g["group_epoch"]
    a.close()
    wait_cover([b], 4)
    s = browser.wait(READ848, lambda s: shows(s, 1) and s["groups"][0]["epoch"] > before
                     and s["members"][0]["parts"] == parts_text(range(4)), 30, "the group after the leave")
    assert s["members"][0]["client"] == "cg-b"
    assert any(e.startswith("member cg-a") and e.endswith("removed") for e in s["events"])

    # the expire button: b's session expires, the coordinator fences it, the consumer joins again (new member epoch)
    old = set(truth()["members"])
    browser.js("document.querySelector('#members tbody tr button.expire').click()")
    wait_all([b], lambda: truth() is not None and len(truth()["members"]) == 1 and set(truth()["members"]) != old
             or (truth() is not None and truth()["group_epoch"] > before + 1), 30, "b fenced and back")
    s = browser.wait(READ848, lambda s: shows(s, 1), 30, "the group after the fencing")
    assert any(e.endswith("removed") and e.startswith("member cg-b") for e in s["events"])


def _request(url: str, method: str = "GET", body: bytes | None = None, headers: dict | None = None):
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("Content-Type"), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type"), e.read()


def test_http_surface_and_fault_control_refusals(kgroup_cluster, view):
    base = view.url
    status, ctype, body = _request(base)
    assert status == 200 and ctype.startswith("text/html") and b'<script src="/app.js">' in body
    assert _request(base + "app.js")[0] == 200 and _request(base + "style.css")[0] == 200
    assert _request(base + "nope")[0] == 404
    assert _request(base + "api/state", "POST", b"{}")[0] == 405
    state = json.loads(_request(base + "api/state")[2])
    assert [b["id"] for b in state["brokers"]] == [0, 1, 2] and state["groups"] == []
    ctl = base + "api/control"
    # a form post (what a cross-site page can send without a preflight) is refused
    assert _request(ctl, "POST", b"op=freeze_clock", {"Content-Type": "application/x-www-form-urlencoded"})[0] == 415
    assert _request(ctl, "POST", b'{"op": "freeze_clock"}', {"Content-Type": "text/plain"})[0] == 415
    # JSON from another origin is refused
    assert _request(ctl, "POST", b'{"op": "freeze_clock"}', {"Content-Type": "application/json",
                                                             "Origin": "http://evil.example"})[0] == 403
    assert not kgroup_cluster.call(lambda: kgroup_cluster.server.clock.frozen)
    # what the page sends works; an op it does not offer is refused
    status, _, body = _request(ctl, "POST", b'{"op": "freeze_clock"}', {"Content-Type": "application/json"})
    assert status == 200 and json.loads(body)["ok"]
    assert kgroup_cluster.call(lambda: kgroup_cluster.server.clock.frozen)
    status, _, body = _request(ctl, "POST", b'{"op": "stop_broker", "broker": 1}', {"Content-Type": "application/json"})
    assert status == 400 and "refused" in json.loads(body)["error"]
    assert kgroup_cluster.call(lambda: kgroup_cluster.server.cluster.is_alive(1))
    status, _, body = _request(ctl, "POST", b'{"op": "expire_member", "group": "none"}',
                               {"Content-Type": "application/json"})
    assert status == 400 and "does not exist" in json.loads(body)["error"]
    _request(ctl, "POST", b'{"op": "thaw_clock"}', {"Content-Type": "application/json"})


def test_parse_ui() -> None:
    from kgroup.webview import parse_ui
    assert parse_ui("8080") == ("127.0.0.1", 8080)
    assert parse_ui("0.0.0.0:8080") == ("0.0.0.0", 8080)
    assert parse_ui("[::1]:0") == ("::1", 0)
    with pytest.raises(ValueError):
        parse_ui("localhost:http")
