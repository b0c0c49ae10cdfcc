// kgroup's live view: renders /api/state (pushed by /api/events, server-sent events; polled if that fails) and the
// selected group's timeline (/api/timeline, SVG drawn by the server with the analysis report's code). Plain DOM, no
// library, nothing from the network.
"use strict";

const $ = (id) => document.getElementById(id);
let state = null;
let selected = decodeURIComponent(location.hash.slice(1)) || null;
let timelineVersion = -1;
let timelineAt = 0;
let timelineBusy = false;

function el(tag, text, attrs) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

function parts(ps) {
  const by = {};
  for (const [t, p] of ps) (by[t] = by[t] || []).push(p);
  const out = Object.keys(by).sort().map((t) => t + "-[" + by[t].sort((a, b) => a - b).join(",") + "]");
  return out.length ? out.join(" ") : "(none)";
}

function totalLag(g) {
  let n = 0, known = false;
  for (const l of g.lag) if (l.lag !== null) { n += l.lag; known = true; }
  return known ? n : "-";
}

function render(s) {
  state = s;
  document.body.dataset.updates = String(Number(document.body.dataset.updates) + 1);
  document.body.dataset.version = String(s.version);
  $("brokers").textContent = "brokers: " + s.brokers.map((b) => b.id + (b.alive ? "" : " (stopped)")).join(", ");
  $("clock").textContent = "coordinator clock: " + new Date(s.now_ms).toISOString().replace("T", " ").slice(0, 23) +
    (s.frozen ? " (frozen)" : "");
  $("clock").className = s.frozen ? "frozen" : "";
  const body = $("groups").querySelector("tbody");
  body.replaceChildren();
  for (const g of s.groups) {
    const tr = el("tr", null, {"data-group": g.group_id, "class": g.group_id === selected ? "selected" : ""});
    tr.append(el("td", g.group_id, {"class": "group"}), el("td", g.state, {"class": "state " + g.state}),
      el("td", g.generation, {"class": "generation"}),
      el("td", g.assignment_epoch === null ? "-" : g.assignment_epoch, {"class": "assignment-epoch"}),
      el("td", g.type, {"class": "type"}), el("td", g.protocol_type || "-"),
      el("td", g.assignor || "-", {"class": "assignor"}), el("td", g.members.length, {"class": "members"}),
      el("td", g.coordinator), el("td", totalLag(g), {"class": "lag"}));
    tr.onclick = () => select(g.group_id);
    body.append(tr);
  }
  $("no-groups").hidden = s.groups.length > 0;
  if ((!selected || !s.groups.some((g) => g.group_id === selected)) && s.groups.length) {
    if (!selected) selected = s.groups[0].group_id;
  }
  renderDetail();
}

function renderDetail() {
  const g = state && state.groups.find((x) => x.group_id === selected);
  $("detail").hidden = !g;
  if (!g) return;
  $("detail-name").textContent = g.group_id;
  $("detail-state").textContent = g.type === "consumer"
    ? g.state + ", group epoch " + g.group_epoch + ", target assignment epoch " + g.assignment_epoch
    : g.state + ", generation " + g.generation;
  $("detail-state").className = "badge " + g.state;
  $("detail-coordinator").textContent = g.coordinator;
  const move = $("move-to");
  const keep = move.value;
  move.replaceChildren(...state.brokers.filter((b) => b.alive).map((b) => el("option", b.id, {value: b.id})));
  if (keep) move.value = keep;
  const mb = $("members").querySelector("tbody");
  mb.replaceChildren();
  for (const m of g.members) {
    const tr = el("tr", null, {"data-member": m.member_id});
    const expire = el("button", "expire session", {"class": "expire", title: "expire this member's session now"});
    expire.onclick = () => control({op: "expire_member", group: g.group_id, member: m.member_id});
    tr.append(el("td", m.member_id + (m.leader ? " (leader)" : ""), {"class": "member-id"}),
      el("td", m.client_id, {"class": "client-id"}), el("td", m.host, {"class": "host"}),
      el("td", m.instance_id || "-", {"class": "instance-id"}), el("td", parts(m.partitions), {"class": "partitions"}),
      el("td", m.member_epoch === undefined ? "-" : m.member_epoch, {"class": "member-epoch"}),
      el("td", m.member_state === undefined ? "-" : m.member_state + (m.protocol === "classic" ? " (classic)" : ""),
        {"class": "member-state " + (m.member_state || "")}),
      el("td", m.target === undefined ? "-" : parts(m.target) +
        (m.pending_revocation && m.pending_revocation.length ? "; revoking " + parts(m.pending_revocation) : ""),
        {"class": "target"}));
    const last = el("td");
    last.append(expire);
    tr.append(last);
    mb.append(tr);
  }
  const lb = $("lag").querySelector("tbody");
  lb.replaceChildren();
  for (const l of g.lag) {
    const tr = el("tr", null, {"data-partition": l.topic + "-" + l.partition});
    for (const v of [l.topic, l.partition, l.committed, l.log_end, l.lag]) tr.append(el("td", v === null ? "-" : v));
    lb.append(tr);
  }
  maybeTimeline(false);
}

async function maybeTimeline(force) {
  if (!selected || timelineBusy) return;
  const now = Date.now();
  const stale = state && state.version !== timelineVersion;
  if (!force && !(stale && now - timelineAt > 500) && now - timelineAt < 3000) return;
  timelineBusy = true;
  try {
    const version = state ? state.version : -1;
    const r = await fetch("/api/timeline?group=" + encodeURIComponent(selected));
    $("timeline").innerHTML = await r.text();
    timelineVersion = version;
    timelineAt = Date.now();
  } catch (e) {
    /* the next state refreshes it */
  } finally {
    timelineBusy = false;
  }
}

function select(group) {
  selected = group;
  location.hash = encodeURIComponent(group);
  timelineVersion = -1;
  $("timeline").replaceChildren();
  if (state) render(state);
  maybeTimeline(true);
}

async function control(cmd) {
  $("status").textContent = cmd.op + "...";
  try {
    const r = await fetch("/api/control", {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify(cmd)});
    const reply = await r.json();
    $("status").textContent = reply.ok ? cmd.op + ": done" : cmd.op + ": " + reply.error;
  } catch (e) {
    $("status").textContent = cmd.op + ": " + e;
  }
}

$("freeze").onclick = () => control({op: "freeze_clock"});
$("thaw").onclick = () => control({op: "thaw_clock"});
$("advance").onclick = () => control({op: "advance_clock", ms: Number($("advance-ms").value) || 0});
$("move").onclick = () => selected && control({op: "move_coordinator", group: selected, broker: Number($("move-to").value)});
$("expire-all").onclick = () => selected && control({op: "expire_member", group: selected});

let polling = null;
function poll() {
  if (polling) return;
  polling = setInterval(async () => {
    try { render(await (await fetch("/api/state")).json()); } catch (e) { $("status").textContent = "disconnected"; }
  }, 1000);
}
if (window.EventSource) {
  const es = new EventSource("/api/events");
  es.onmessage = (e) => { $("status").textContent = "live"; render(JSON.parse(e.data)); };
  es.onerror = () => { $("status").textContent = "reconnecting..."; };
} else {
  poll();
}
setInterval(() => maybeTimeline(false), 1000);
