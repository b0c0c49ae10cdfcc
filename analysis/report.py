"""The HTML report: one self-contained file, SVG charts generated with the standard library only.

No script, no stylesheet or font from the network: inline CSS and inline ``<svg>`` elements, readable in any
browser offline. The rendering takes plain Python data (``collect_for_report`` makes it from the fold's rows),
so it is testable without Spark, and ``tests/analysis`` renders it in headless Chromium.

Conventions, the same in every chart:

* one colour per *kind* of group -- protocol, assignor and static membership (:func:`kind_colors`) -- in the
  comparison, the Gantt's owned bars, the lag lines and the sweep's distributions; a legend names them;
* time runs from 0 at the run's first record, in units written on every tick (``0 s``, ``20 s``); a real
  server's log (epoch milliseconds) prints its wall-clock start in the header instead of an epoch axis;
* the Gantt, ownership and lag charts of a group share one left margin and one time scale, so their time axes
  line up; labels get the width they need (long ones are shortened with the full text in a tooltip);
* tables scroll inside their own box.
"""

from __future__ import annotations

import datetime as _dt
import html
import math
from typing import Any, Iterable, Optional

from analysis.fold import merge_intervals

# Tableau-10 without its red (red means "unowned"), plus darker tones for more kinds.
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#bab0ac",
           "#1f3b73", "#3d6b35", "#8c564b", "#17becf")
IDLE = "#d9d9d9"
UNOWNED = "#e15759"
BAND = "#f28e2b"
STOPPED = "#b2182b"
FONT = "font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif"
CHAR_W = 6.6          # average glyph width of the 11 px chart font, for sizing label columns
MAX_LABEL = 40        # characters; longer labels are shortened (full text in the tooltip)

MAX_CHART_GROUPS = 8
MAX_ROWS = 60
MAX_TABLE_ROWS = 300
WIDTH = 960


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def is_wall_clock(ms: Optional[int]) -> bool:
    """Epoch milliseconds (a real server's log) rather than a scenario's virtual time (from 0)."""
    return ms is not None and ms > 100_000_000_000          # after 1973-03-03


def wall_clock(ms: int) -> str:
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _label(text: str) -> tuple[str, str]:
    """(shown, full): long labels are shortened in the middle."""
    if len(text) <= MAX_LABEL:
        return text, text
    keep = MAX_LABEL - 1
    return text[: keep // 2] + "…" + text[-(keep - keep // 2):], text


def _label_width(labels: Iterable[str], minimum: int = 60) -> int:
    longest = max((len(_label(s)[0]) for s in labels), default=0)
    return max(minimum, int(longest * CHAR_W) + 14)


# --- kinds and colours ------------------------------------------------------------------------------------------

def kind_of(g: dict) -> str:
    """The comparison key of a group: protocol, assignor, static membership."""
    k = f"{g.get('protocol') or '?'} · {g.get('assignor') or '?'}"
    return k + " · static" if g.get("static_members") else k


def kind_colors(groups: Iterable[dict]) -> dict[str, str]:
    kinds = sorted({kind_of(g) for g in groups})
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(kinds)}


def _legend(items: list[tuple], x: float, y: float, width: float) -> tuple[list[str], float]:
    """Swatches (label, colour[, opacity]) left to right, wrapping; returns (elements, height used)."""
    out, cx, cy = [], x, y
    for label, color, *rest in items:
        opacity = rest[0] if rest else 1
        w = 18 + len(label) * CHAR_W + 16
        if cx + w > x + width and cx > x:
            cx, cy = x, cy + 16
        out.append(f'<rect x="{cx:.1f}" y="{cy - 9}" width="12" height="10" fill="{color}" fill-opacity="{opacity}"/>'
                   f'<text x="{cx + 16:.1f}" y="{cy}">{_e(label)}</text>')
        cx += w
    return out, (cy - y) + 16


# --- axes -------------------------------------------------------------------------------------------------------

class TimeAxis:
    """Relative time [0, span] ms onto [x0, x1] px, ticks with their unit."""

    def __init__(self, span_ms: float, x0: float, x1: float) -> None:
        self.span = max(float(span_ms), 1.0)
        self.x0, self.x1 = x0, x1
        if self.span < 2_000:
            self.unit, self.div = "ms", 1
        elif self.span < 300_000:
            self.unit, self.div = "s", 1000
        else:
            self.unit, self.div = "min", 60_000

    def x(self, t: float) -> float:
        t = min(max(float(t), 0.0), self.span)
        return round(self.x0 + t / self.span * (self.x1 - self.x0), 2)

    def ticks(self, n: int = 8) -> list[float]:
        return nice_ticks(self.span / self.div, n)

    def fmt(self, v: float) -> str:
        return f"{v:g} {self.unit}"

    def svg(self, y: float, top: float, caption: str = "time since the first record") -> list[str]:
        out = [f'<line x1="{self.x0}" y1="{y}" x2="{self.x1}" y2="{y}" stroke="#888"/>']
        for v in self.ticks():
            x = self.x(v * self.div)
            out.append(f'<line x1="{x}" y1="{top}" x2="{x}" y2="{y + 4}" stroke="#e4e4e4"/>')
            out.append(f'<text x="{x}" y="{y + 15}" text-anchor="middle" fill="#444">{_e(self.fmt(v))}</text>')
        out.append(f'<text x="{self.x1}" y="{y + 29}" text-anchor="end" fill="#666">{_e(caption)} ({self.unit})'
                   f'</text>')
        return out


def _panel_axis(body: list[str], title: str, vals: list[float], x0: float, x1: float, top: float,
                bottom: float) -> float:
    """A bar panel's title and its horizontal seconds axis from 0 (gridlines and labelled ticks) over x0..x1;
    returns the axis maximum the bars are scaled to."""
    ticks = nice_ticks(max(vals + [0.001]), 4, cover=True)
    vmax = ticks[-1] or 1
    body.append(f'<text x="{x0}" y="{top - 8}" fill="#333">{_e(title)}</text>')
    for v in ticks:
        x = x0 + v / vmax * (x1 - x0)
        body.append(f'<line x1="{x:.2f}" y1="{top - 2}" x2="{x:.2f}" y2="{bottom}" stroke="#eee"/>'
                    f'<text x="{x:.2f}" y="{bottom + 14}" text-anchor="middle" fill="#444">{v:g} s</text>')
    return vmax


def nice_ticks(span: float, n: int = 8, cover: bool = False) -> list[float]:
    """0, step, 2*step, ... up to ``span`` with a 1-2-5 step (always starting at 0); ``cover``: one more tick if
    needed so that the last is at least ``span`` (a value axis must hold its largest value)."""
    if span <= 0:
        return [0.0]
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    out, k = [], 0
    while k * step <= span * (1 + 1e-9):
        out.append(round(k * step, 10))
        k += 1
    if cover and out[-1] < span:
        out.append(round(k * step, 10))
    return out


def _svg(width: float, height: float, body: list[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{_e(title)}" '
            f'style="{FONT};font-size:11px">'
            f'<title>{_e(title)}</title>' + "".join(body) + "</svg>")


# --- the per-group time charts ---------------------------------------------------------------------------------

def member_names(members: list[dict]) -> dict[str, str]:
    """Display names: the group.instance.id of a static member (``(member id 2)``... after a restart: the same
    owner), else the client id, with ``#2``, ``#3``... for a dynamic consumer's later incarnations (a restart keeps
    the client id and gets a new member id: a new owner)."""
    seen: dict[str, int] = {}
    names = {}
    for m in sorted(members, key=lambda m: (m.get("first_seen_ms") or 0, m["member_id"])):
        inst = m.get("group_instance_id")
        if inst:
            # one owner: a restart gets a new member id, shown as such (the ownership chart has one colour)
            seen["\0" + inst] = seen.get("\0" + inst, 0) + 1
            n = seen["\0" + inst]
            names[m["member_id"]] = inst if n == 1 else f"{inst} (member id {n})"
            continue
        base = m.get("client_id") or _label(m["member_id"])[0]
        seen[base] = seen.get(base, 0) + 1
        names[m["member_id"]] = base if seen[base] == 1 else f"{base}#{seen[base]}"
    return names


def owner_names(members: list[dict]) -> dict[str, str]:
    """Owner -> display name (a static member's owner is its instance id; else its member id's name)."""
    names = member_names(members)
    return {m.get("owner") or m["member_id"]: m.get("group_instance_id") or names[m["member_id"]] for m in members}


def group_layout(members: list[dict], ownership: list[dict]) -> int:
    """The left margin shared by a group's charts (so that their time axes line up)."""
    names = member_names(members)
    parts = {f"{o['topic']}-{o['partition']}" for o in ownership}
    return _label_width(list(names.values()) + list(parts) + ["lag (records)"])


def gantt_svg(group: str, members: list[dict], ownership: list[dict], rebalances: list[dict], t0: float,
              span: float, color: str, label_w: int, protocol: str = "eager") -> str:
    """Rebalance Gantt: a row per member (incarnation). ``ownership`` rows (member_id, from_ms, to_ms) are merged
    per member into the time it owned at least one partition."""
    members = sorted(members, key=lambda m: (m.get("first_seen_ms") or 0, m["member_id"]))[:MAX_ROWS]
    names = member_names(members)
    row_h, top = 18, 26
    ax = TimeAxis(span, label_w, WIDTH - 14)
    bottom = top + row_h * max(1, len(members))
    body = [f'<text x="4" y="15" font-weight="bold">rebalance Gantt: group {_e(group)}</text>']
    for rb in rebalances:
        s, e = rb.get("start_ms"), rb.get("end_ms")
        if s is None:
            continue
        e = t0 + span if e is None else e
        x, x2 = ax.x(s - t0), ax.x(e - t0)
        body.append(f'<rect x="{x}" y="{top}" width="{max(1.0, x2 - x):.2f}" height="{bottom - top}" fill="{BAND}" '
                    f'fill-opacity="0.22"><title>{_e(_episode_word(rb))} {_e(rb.get("rebalance_no"))} '
                    f'({_e(rb.get("trigger"))}): {_e(s - t0)}..{_e(e - t0)} ms</title></rect>')
    by_member: dict[str, list[tuple[int, int]]] = {}
    for o in ownership:
        by_member.setdefault(o["member_id"], []).append((o["from_ms"], o["to_ms"]))
    for i, m in enumerate(members):
        y = top + i * row_h
        shown, full = _label(names[m["member_id"]])
        body.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{_e(shown)}<title>{_e(full)} '
                    f'({_e(m["member_id"])})</title></text>')
        a, b = ax.x(m["first_seen_ms"] - t0), ax.x(m["last_ms"] - t0)
        body.append(f'<rect x="{a}" y="{y + 3}" width="{max(0.5, b - a):.2f}" height="{row_h - 6}" fill="{IDLE}">'
                    f'<title>{_e(full)}: in the group {_e(m["first_seen_ms"] - t0)}..{_e(m["last_ms"] - t0)} ms, '
                    f'{_e(m.get("without_partitions_ms"))} ms without partitions</title></rect>')
        for f, t in merge_intervals(by_member.get(m["member_id"], [])):
            xa, xb = ax.x(f - t0), ax.x(t - t0)
            body.append(f'<rect x="{xa}" y="{y + 3}" width="{max(0.5, xb - xa):.2f}" height="{row_h - 6}" '
                        f'fill="{color}"><title>{_e(full)} owns partitions {_e(f - t0)}..{_e(t - t0)} ms'
                        f'</title></rect>')
    # the whole group stopped (eager): a dark strip above the rows
    for rb in rebalances:
        if rb.get("group_stopped_ms"):
            s, e = rb["start_ms"], rb.get("end_ms") if rb.get("end_ms") is not None else t0 + span
            for f, t in _gaps(ownership, s, e):
                xa, xb = ax.x(f - t0), ax.x(t - t0)
                body.append(f'<rect x="{xa}" y="{top - 6}" width="{max(1.0, xb - xa):.2f}" height="5" '
                            f'fill="{STOPPED}"><title>whole group stopped {_e(f - t0)}..{_e(t - t0)} ms'
                            f'</title></rect>')
    body += ax.svg(bottom + 2, top)
    band = "reconciliation (consumer protocol)" if protocol == "consumer" else "rebalance"
    if protocol == "consumer" and any(rb.get("protocol") not in (None, "consumer") for rb in rebalances):
        band = "rebalance / reconciliation"      # a group migrated between protocols
    items = [("owns partitions", color), ("in the group, no partitions", IDLE), (band, BAND, 0.35)]
    if protocol not in ("cooperative", "consumer") or any(rb.get("group_stopped_ms") for rb in rebalances):
        items.append(("whole group stopped", STOPPED))
    legend, lh = _legend(items, label_w, bottom + 48, WIDTH - label_w - 14)
    body += legend
    return _svg(WIDTH, bottom + 48 + lh + 4, body, f"rebalance Gantt of group {group}")


def _episode_word(rb: dict) -> str:
    return "reconciliation" if rb.get("protocol") == "consumer" else "rebalance"


def epochs_svg(group: str, epochs: list[dict], color: str, label_w: int) -> str:
    """A consumer group's epochs (KIP-848): per group epoch, the time from its bump to the group's next Stable
    state (its reconciliation) and the partition-time without an owner while it was the group's epoch; an epoch
    overtaken by the next bump before it reconciled is drawn lighter."""
    epochs = sorted(epochs, key=lambda r: r["epoch"])[-MAX_ROWS:]
    gap, top, bar_h = 24, 44, 14
    panel_w = (WIDTH - label_w - 14 - gap) / 2
    bottom = top + max(1, len(epochs)) * (bar_h + 4)
    body = [f'<text x="4" y="15" font-weight="bold">group epochs: group {_e(group)} (consumer protocol)</text>']
    panels = (("reconciliation (bump to Stable)", "reconciliation_ms", label_w),
              ("partitions unowned during the epoch (partition-seconds)", "unowned_partition_ms",
               label_w + panel_w + gap))
    for title, key, x0 in panels:
        vals = [float(r.get(key) or 0) / 1000 for r in epochs]
        x1 = x0 + panel_w - 50
        unit = "s" if key == "reconciliation_ms" else "partition-s"
        vmax = _panel_axis(body, title, vals, x0, x1, top, bottom)
        for i, r in enumerate(epochs):
            y = top + i * (bar_h + 4)
            raw = r.get(key)
            if raw is None:
                body.append(f'<text x="{x0 + 4}" y="{y + 11}" fill="#666">not reconciled</text>')
                continue
            v = float(raw) / 1000
            w = v / vmax * (x1 - x0)
            opacity = 0.45 if r.get("superseded") else 1
            body.append(f'<rect x="{x0}" y="{y}" width="{max(w, 0.5):.2f}" height="{bar_h}" fill="{color}" '
                        f'fill-opacity="{opacity}"><title>epoch {_e(r["epoch"])} ({_e(r.get("trigger"))}): '
                        f'{v:.3f} {unit}</title></rect><text x="{x0 + w + 4:.2f}" y="{y + 11}">{v:.2f}</text>')
    for i, r in enumerate(epochs):
        y = top + i * (bar_h + 4)
        body.append(f'<text x="{label_w - 6}" y="{y + 11}" text-anchor="end">epoch {_e(r["epoch"])}</text>')
    legend, lh = _legend([("reconciled", color), ("superseded by the next epoch", color, 0.45)], label_w,
                         bottom + 36, WIDTH - label_w - 14)
    body += legend
    return _svg(WIDTH, bottom + 36 + lh + 4, body, f"group epochs of group {group}")


def _gaps(ownership: list[dict], s: int, e: int) -> list[tuple[int, int]]:
    """The stretches of [s, e) when no partition of the group is owned."""
    out, cur = [], s
    for a, b in merge_intervals([(o["from_ms"], o["to_ms"]) for o in ownership]):
        if b <= cur:
            continue
        if a >= e:
            break
        if a > cur:
            out.append((cur, min(a, e)))
        cur = max(cur, b)
    if cur < e:
        out.append((cur, e))
    return out


def ownership_svg(group: str, ownership: list[dict], t0: float, span: float, label_w: int,
                  names: dict[str, str]) -> str:
    """Partition ownership over time: a row per partition, one colour per owner, red where unowned (from the
    partition's window start, ``window`` rows of the partitions table)."""
    parts = sorted({(o["topic"], o["partition"]) for o in ownership})[:MAX_ROWS]
    owners = sorted({o["owner"] for o in ownership}, key=lambda o: names.get(o, o))
    color = {o: PALETTE[i % len(PALETTE)] for i, o in enumerate(owners)}
    row_h, top = 14, 26
    bottom = top + row_h * max(1, len(parts))
    ax = TimeAxis(span, label_w, WIDTH - 14)
    body = [f'<text x="4" y="15" font-weight="bold">partition ownership: group {_e(group)}</text>']
    idx = {tp: i for i, tp in enumerate(parts)}
    first = {}
    for o in ownership:
        tp = (o["topic"], o["partition"])
        first[tp] = min(first.get(tp, o["from_ms"]), o["from_ms"])
    for tp, i in idx.items():
        y = top + i * row_h
        shown, full = _label(f"{tp[0]}-{tp[1]}")
        body.append(f'<text x="{label_w - 6}" y="{y + 11}" text-anchor="end">{_e(shown)}<title>{_e(full)}</title>'
                    f'</text>')
        body.append(f'<rect x="{ax.x0}" y="{y + 2}" width="{ax.x1 - ax.x0:.2f}" height="{row_h - 4}" '
                    f'fill="{UNOWNED}" fill-opacity="0.55"><title>{_e(full)} unowned</title></rect>')
    for o in ownership:
        i = idx.get((o["topic"], o["partition"]))
        if i is None or o["to_ms"] <= o["from_ms"]:
            continue
        y = top + i * row_h
        xa, xb = ax.x(o["from_ms"] - t0), ax.x(o["to_ms"] - t0)
        who = names.get(o["owner"], o["owner"])
        body.append(f'<rect x="{xa}" y="{y + 2}" width="{max(0.5, xb - xa):.2f}" height="{row_h - 4}" '
                    f'fill="{color[o["owner"]]}"><title>{_e(o["topic"])}-{_e(o["partition"])}: {_e(who)} '
                    f'(generation {_e(o.get("generation_id"))}) {_e(o["from_ms"] - t0)}..{_e(o["to_ms"] - t0)} ms'
                    f'</title></rect>')
    body += ax.svg(bottom + 2, top)
    legend, lh = _legend([(names.get(o, o), color[o]) for o in owners] + [("unowned", UNOWNED)],
                         label_w, bottom + 48, WIDTH - label_w - 14)
    body += legend
    return _svg(WIDTH, bottom + 48 + lh + 4, body, f"partition ownership of group {group}")


def lag_svg(group: str, points: list[tuple[int, int]], t0: float, span: float, label_w: int, color: str) -> str:
    """Total lag of the group (records) over time, a step line."""
    top, h = 44, 120
    ax = TimeAxis(span, label_w, WIDTH - 14)
    peak = max([p[1] for p in points] + [1])
    ticks = nice_ticks(peak, 4, cover=True)
    ymax = max(ticks[-1], 1)

    def y(v: float) -> float:
        return round(top + h - v / ymax * h, 2)

    body = [f'<text x="4" y="15" font-weight="bold">consumer lag: group {_e(group)} (log end offset − committed '
            f'offset, summed over its partitions)</text>']
    for v in ticks:
        body.append(f'<line x1="{ax.x0}" y1="{y(v)}" x2="{ax.x1}" y2="{y(v)}" stroke="#eee"/>'
                    f'<text x="{label_w - 6}" y="{y(v) + 4}" text-anchor="end" fill="#444">{v:g}</text>')
    body.append(f'<text x="{label_w - 6}" y="{top - 14}" text-anchor="end" fill="#666">records</text>')
    path, prev = [], None
    for t, v in points:
        x = ax.x(t - t0)
        if prev is None:
            path.append(f"M{x},{y(v)}")
        else:
            path.append(f"H{x}V{y(v)}")
        prev = v
    if points:
        path.append(f"H{ax.x(span)}")
        body.append(f'<path d="{" ".join(path)}" fill="none" stroke="{color}" stroke-width="1.6">'
                    f'<title>lag of {_e(group)}: peak {peak} records</title></path>')
    body += ax.svg(top + h + 2, top)
    legend, lh = _legend([(f"lag of {group}", color)], label_w, top + h + 48, WIDTH - label_w - 14)
    body += legend
    return _svg(WIDTH, top + h + 48 + lh + 4, body, f"consumer lag of group {group}")


# --- the comparison ---------------------------------------------------------------------------------------------

def comparison_svg(groups: list[dict], colors: dict[str, str]) -> str:
    """Per (run, group): the whole group stopped (eager) and partitions unowned per partition, in seconds, while
    the group was consuming (its joins from Empty left out)."""
    groups = groups[:MAX_ROWS]
    labels = [f"{g['run']} · {g['group_id']}" for g in groups]
    label_w = _label_width(labels, 80)
    gap = 24
    panel_w = (WIDTH - label_w - 14 - gap) / 2
    top, bar_h = 62, 18
    n = max(1, len(groups))
    bottom = top + n * (bar_h + 6)
    legend, lh = _legend([(k, c) for k, c in sorted(colors.items())], 4, 30, WIDTH - 8)
    body = ['<text x="4" y="15" font-weight="bold">groups compared: what the rebalances cost while the group was '
            'consuming</text>'] + legend
    top += lh - 16
    bottom += lh - 16
    panels = (("whole group stopped (eager)", "group_stopped_ms", label_w),
              ("partitions unowned, per partition", "unowned_ms_per_partition", label_w + panel_w + gap))
    for title, key, x0 in panels:
        vals = [float(g.get(key) or 0) / 1000 for g in groups]
        x1 = x0 + panel_w - 40
        vmax = _panel_axis(body, title, vals, x0, x1, top, bottom)
        for i, g in enumerate(groups):
            y = top + i * (bar_h + 6)
            c = colors[kind_of(g)]
            raw = g.get(key)
            if key == "group_stopped_ms" and g.get("protocol") == "cooperative":
                body.append(f'<text x="{x0 + 4}" y="{y + 13}" fill="#666">never: cooperative</text>')
                continue
            if key == "group_stopped_ms" and g.get("protocol") == "consumer" and raw is None:
                body.append(f'<text x="{x0 + 4}" y="{y + 13}" fill="#666">no barrier: consumer</text>')
                continue
            v = float(raw or 0) / 1000
            w = v / vmax * (x1 - x0)
            body.append(f'<rect x="{x0}" y="{y}" width="{max(w, 0.5):.2f}" height="{bar_h}" fill="{c}">'
                        f'<title>{_e(labels[i])}: {v:.3f} s</title></rect>'
                        f'<text x="{x0 + w + 4:.2f}" y="{y + 13}">{v:.2f} s</text>')
    for i, lab in enumerate(labels):
        y = top + i * (bar_h + 6)
        shown, full = _label(lab)
        body.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{_e(shown)}<title>{_e(full)}</title>'
                    f'</text>')
    return _svg(WIDTH, bottom + 24, body, "groups compared")


# --- tables and page --------------------------------------------------------------------------------------------

def _table(rows: list[dict], columns: Iterable[str], caption: str) -> str:
    cols = list(columns)
    head = "".join(f"<th>{_e(c)}</th>" for c in cols)
    body = []
    for r in rows[:MAX_TABLE_ROWS]:
        cells = []
        for c in cols:
            v = r.get(c)
            if isinstance(v, float):
                v = f"{v:.1f}"
            elif isinstance(v, list):
                v = ", ".join(map(str, v))
            cells.append(f"<td>{_e(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = (f'<p class="note">{len(rows) - MAX_TABLE_ROWS} more rows in the CSV/Parquet output.</p>'
            if len(rows) > MAX_TABLE_ROWS else "")
    return (f'<div class="table-box"><table><caption>{_e(caption)}</caption><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>{more}")


GROUP_TABLE_COLUMNS = ("run", "group_id", "protocol", "assignor", "static_members", "members", "partitions",
                       "rebalances", "from_empty", "rebalances_while_consuming", "group_stopped_ms",
                       "max_group_stopped_ms", "unowned_partition_ms", "unowned_ms_per_partition", "partitions_moved",
                       "partitions_revoked", "mean_balance", "session_expiries", "first_assignment_ms",
                       "group_epochs", "mean_reconciliation_ms", "max_reconciliation_ms", "max_member_epoch_lag")
REBALANCE_TABLE_COLUMNS = ("run", "group_id", "rebalance_no", "generation_id", "trigger", "start", "end",
                           "duration_ms", "outcome", "from_empty", "members_before", "members_after",
                           "partitions_revoked", "partitions_assigned", "partitions_moved", "balance",
                           "group_stopped_ms", "unowned_partition_ms", "assignor", "protocol")
MEMBER_TABLE_COLUMNS = ("run", "group_id", "owner", "client_id", "member_id", "lifetime_ms", "without_partitions_ms",
                        "rebalances_joined", "session_expiries", "removed_reason", "max_epoch_lag", "epoch_lag_ms")
EPOCH_TABLE_COLUMNS = ("run", "group_id", "epoch", "trigger", "bumped", "members", "target_epoch", "target",
                       "reconciled", "reconciliation_ms", "superseded", "partitions_revoked", "partitions_assigned",
                       "unowned_partition_ms", "max_member_epoch_lag")
PARTITION_TABLE_COLUMNS = ("run", "group_id", "topic", "partition", "unowned_ms", "owners", "assignments")

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px auto;color:#222;
max-width:1000px;padding:0 12px}
h1{font-size:22px} h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd} h3{font-size:15px}
.table-box{max-width:100%;max-height:420px;overflow:auto;border:1px solid #e4e4e4;margin:8px 0}
table{border-collapse:collapse;font-size:12px} caption{text-align:left;font-weight:bold;padding:4px}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:right;white-space:nowrap}
th{background:#f4f4f4;position:sticky;top:0}
td:first-child,td:nth-child(2){text-align:left} .note{color:#555;font-size:12px}
.chart{margin:10px 0;overflow-x:auto} .warn{color:#8a4b00}
"""


def _with_relative(rows: list[dict], runs: dict[str, dict]) -> list[dict]:
    out = []
    for r in rows:
        t0 = (runs.get(r["run"]) or {}).get("first_ms") or 0
        d = dict(r)
        for k in ("start_ms", "end_ms", "bumped_ms", "target_ms", "reconciled_ms"):
            if k not in r:
                continue
            v = r.get(k)
            d[k[:-3]] = None if v is None else f"{(v - t0) / 1000:.3f} s"
        out.append(d)
    return out


def render_html(data: dict[str, Any], title: str = "kgroup rebalance report") -> str:
    """The report page from ``collect_for_report`` data."""
    groups, runs = data["groups"], data["runs"]
    colors = kind_colors(groups)
    sections = []
    for key in data["chart_groups"]:
        sections.append(group_section(data, key, colors))
    totals = data["totals"]
    omitted = totals["groups"] - len(data["chart_groups"])
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    run_lines = []
    for r in sorted(runs.values(), key=lambda r: r["run"]):
        span = (r["end_ms"] - r["first_ms"]) / 1000
        start = (f"wall-clock start {wall_clock(r['first_ms'])}" if r.get("wall_clock")
                 else f"virtual time, first record at {r['first_ms']} ms")
        what = f"scenario {r['scenario']}, seed {r['seed']}" if r.get("scenario") else "log"
        run_lines.append(f"<li><b>{_e(r['run'])}</b>: {_e(what)}; {_e(start)}; {span:.1f} s of records, "
                         f"{r['events']:,} events</li>")
    warnings = "".join(f'<p class="note warn">warning: {_e(w)}</p>' for w in data.get("warnings") or ())
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta name="viewport" content="width=device-width"><title>{_e(title)}</title><style>{CSS}</style></head>'
        f"<body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="note">{len(runs)} run(s), {totals["groups"]} group(s), {totals["rebalances"]} rebalance(s); '
        f"generated {stamp} by kgroup analyze. Chart times are relative to each run's first record. Definitions: "
        "docs/analysis.md.</p>",
        "<ul class=\"note\">" + "".join(run_lines) + "</ul>", warnings,
        "<h2>Groups compared</h2>",
        '<p class="note">One row per (run, group), never pooled by assignor: the protocol, the assignor and static '
        "membership are the group's kind (one colour each, everywhere). <i>Whole group stopped</i>: time no member "
        "owned any partition during an eager rebalance (the cooperative and consumer protocols have no group-wide "
        "barrier). <i>Partitions unowned</i>: partition-time without an owner (every protocol). Both leave out the "
        "group's joins from Empty (its start). A consumer group's (KIP-848) rebalances are its reconciliations: from "
        "a group epoch bump to every member at the target assignment.</p>",
        f'<div class="chart">{comparison_svg(groups, colors)}</div>' if groups else "",
        _table(groups, GROUP_TABLE_COLUMNS, "groups (groups.csv)"),
        "<h2>Rebalances over time</h2>",
        "".join(sections),
        f'<p class="note">{omitted} more group(s) not charted (the tables and CSV/Parquet have all).</p>'
        if omitted > 0 else "",
        "<h2>Rebalances</h2>", _table(_with_relative(data["rebalances"], runs), REBALANCE_TABLE_COLUMNS,
                                      "one row per rebalance (start/end relative to the run's first record)"),
        *(["<h2>Group epochs</h2>", _table(_with_relative(data["epochs"], runs), EPOCH_TABLE_COLUMNS,
                                           "consumer groups (KIP-848): one row per group epoch (times relative to "
                                           "the run's first record)")] if data.get("epochs") else []),
        "<h2>Members</h2>", _table(data["members"], MEMBER_TABLE_COLUMNS, "per member id (owner: group.instance.id "
                                                                           "or member id)"),
        "<h2>Partitions</h2>", _table(data["partitions"], PARTITION_TABLE_COLUMNS,
                                      "per partition (owners: distinct owners)"),
        "</body></html>\n",
    ])


def group_section(data: dict[str, Any], key: tuple[str, str], colors: dict[str, str]) -> str:
    run, group = key
    charts = group_charts(data, run, group, colors)
    g = next((x for x in data["groups"] if x["run"] == run and x["group_id"] == group), {})
    head = f"<h3>{_e(run)} · group {_e(group)} <span class=\"note\">({_e(kind_of(g))})</span></h3>"
    lag_note = data.get("lag_notes", {}).get(run)
    note = f'<p class="note">{_e(lag_note)}</p>' if lag_note and not data.get("lag", {}).get(key) else ""
    return head + "".join(f'<div class="chart">{c}</div>' for c in charts) + note


def group_charts(data: dict[str, Any], run: str, group: str, colors: Optional[dict[str, str]] = None) -> list[str]:
    """The Gantt, ownership and (with produce and commit data) lag charts of one (run, group)."""
    colors = colors or kind_colors(data["groups"])
    members = [m for m in data["chart_members"] if m["run"] == run and m["group_id"] == group]
    own = [o for o in data["ownership"] if o["run"] == run and o["group_id"] == group]
    rbs = [r for r in data["chart_rebalances"] if r["run"] == run and r["group_id"] == group]
    g = next((x for x in data["groups"] if x["run"] == run and x["group_id"] == group), {})
    info = data["runs"].get(run, {})
    t0, span = info.get("first_ms", 0), info.get("end_ms", 0) - info.get("first_ms", 0)
    color = colors.get(kind_of(g), PALETTE[0])
    label_w = group_layout(members, own)
    out = [gantt_svg(group, members, own, rbs, t0, span, color, label_w, g.get("protocol") or "eager"),
           ownership_svg(group, own, t0, span, label_w, owner_names(members))]
    lag = data.get("lag", {}).get((run, group))
    if lag:
        out.append(lag_svg(group, lag, t0, span, label_w, color))
    epochs = [r for r in data.get("epochs") or () if r["run"] == run and r["group_id"] == group]
    if epochs:
        out.append(epochs_svg(group, epochs, color, label_w))
    return out


# --- what the report shows, from the fold's rows ------------------------------------------------------------------
#
# The rows of a large analysis stay in the Spark tasks (each writes its part of every table); each task returns a
# bounded *head* of its rows (:func:`head_of`) and the driver merges the heads (:func:`merge_heads`): the first rows
# of every table in ORDER, every row of the first groups (for their charts), the totals and those groups' commits.
# A small analysis computes one head from all of its rows, with the same code.

ORDER = {
    "groups": ("run", "group_id"),
    "rebalances": ("run", "group_id", "rebalance_no"),
    "members": ("run", "group_id", "first_seen_ms", "member_id"),
    "partitions": ("run", "group_id", "topic", "partition"),
    "ownership": ("run", "group_id", "topic", "partition", "from_ms"),
    "epochs": ("run", "group_id", "epoch"),
}
#: Rows per table the report keeps (it shows MAX_TABLE_ROWS of them; summary.json lists up to 200 groups).
MAX_REPORT_ROWS = 5000
#: Rows of the charted groups kept per table.
CHART_ROWS = {"members": 20000, "rebalances": 20000, "ownership": 50000}
#: Points per run of a lag line when the commits are many (a large analysis buckets them).
LAG_POINTS = 500


def _sortable(v: Any) -> tuple:
    return (v is not None, v if v is not None else 0)


def _order_key(name: str):
    """The ORDER of a table's row tuples (the fold never leaves these columns null)."""
    from operator import itemgetter

    from analysis.fold import COLUMNS
    return itemgetter(*[COLUMNS[name].index(c) for c in ORDER[name]])


def head_of(rows: dict[str, list[tuple]], commits: dict[tuple[str, str], list[tuple]],
            spans: Optional[dict[str, tuple[int, int]]] = None, max_rows: int = MAX_REPORT_ROWS,
            max_groups: int = MAX_CHART_GROUPS) -> dict[str, Any]:
    """What the report can use of some of the fold's rows (``table -> row tuples`` in ``fold.COLUMNS`` order, group
    after group in (run, group) order: ``fold.fold_groups``'s output): per table the first ``max_rows`` in ORDER,
    the rows of the first ``max_groups`` groups (by run, group) for their charts, the totals, and those groups'
    commits ``(ts, topic, partition, offset)`` -- all of them, or with ``spans`` (run -> (first, end) ms) the last
    commit per partition in each 1/LAG_POINTS of the run.

    ORDER begins with (run, group_id), so both are prefixes of each table's rows: only the groups that hold the
    first rows are read and sorted (a task's head costs little however many groups it folded)."""
    from analysis.fold import COLUMNS
    g = {c: i for i, c in enumerate(COLUMNS["groups"])}
    groups = rows.get("groups", [])
    keys = [(r[g["run"]], r[g["group_id"]]) for r in groups[:max_groups]]
    if keys != sorted(keys) or len(set(keys)) != len(keys):
        raise ValueError("head_of: the rows are not in (run, group) order")
    keep = set(keys)
    head: dict[str, Any] = {"rows": {}, "chart": {}, "commits": {}}
    for name in ("groups", "rebalances", "members", "partitions", "epochs"):
        prefix = _group_prefix(rows.get(name, []), name, lambda n, k: n >= max_rows)
        head["rows"][name] = [dict(zip(COLUMNS[name], r)) for r in sorted(prefix, key=_order_key(name))[:max_rows]]
    for name, limit in CHART_ROWS.items():
        mine = _group_prefix(rows.get(name, []), name, lambda n, k: k not in keep)
        mine = [r for r in mine if _group_key(name)(r) in keep]
        head["chart"][name] = [dict(zip(COLUMNS[name], r)) for r in sorted(mine, key=_order_key(name))[:limit]]
    head["totals"] = {"groups": len(groups), "rebalances": sum(r[g["rebalances"]] for r in groups),
                      "completed": sum(r[g["completed"]] for r in groups),
                      "moved": sum(r[g["partitions_moved"]] for r in groups)}
    for k in keys:
        cs = commits.get(k)
        if cs:
            head["commits"][k] = cs if spans is None else _bucketed(cs, *spans[k[0]])
    return head


def _group_key(name: str):
    from operator import itemgetter

    from analysis.fold import COLUMNS
    return itemgetter(COLUMNS[name].index("run"), COLUMNS[name].index("group_id"))


def _group_prefix(rows: list[tuple], name: str, stop) -> list[tuple]:
    """The rows of ``rows`` (grouped by (run, group), in that order) up to the first group at which ``stop(rows so
    far, that group's key)`` holds; a group is never cut."""
    key = _group_key(name)
    prev = None
    for i, r in enumerate(rows):
        k = key(r)
        if k != prev:
            if prev is not None and k < prev:
                raise ValueError(f"head_of: the {name} rows are not in (run, group) order")
            if stop(i, k):
                return rows[:i]
            prev = k
    return rows


def _bucketed(commits: list[tuple], first: int, end: int) -> list[tuple]:
    """Per (topic, partition) and bucket of 1/LAG_POINTS of the run: the latest time and the highest offset."""
    width = max(1, (end - first) // LAG_POINTS)
    out: dict[tuple, list] = {}
    for ts, topic, partition, offset in commits:
        k = (topic, partition, (ts - first) // width)
        b = out.get(k)
        if b is None:
            out[k] = [ts, offset]
        else:
            b[0] = max(b[0], ts)
            if offset is not None and (b[1] is None or offset > b[1]):
                b[1] = offset
    return [(ts, k[0], k[1], off) for k, (ts, off) in out.items()]


def merge_heads(heads: list[dict[str, Any]], max_rows: int = MAX_REPORT_ROWS,
                max_groups: int = MAX_CHART_GROUPS) -> dict[str, Any]:
    """One head from the heads of disjoint sets of groups (the Spark tasks')."""
    if len(heads) == 1:
        return heads[0]
    out: dict[str, Any] = {"rows": {}, "chart": {}, "commits": {}, "totals": {}}
    for name in ("groups", "rebalances", "members", "partitions", "epochs"):
        rows = [r for h in heads for r in h["rows"][name]]
        rows.sort(key=lambda r: tuple(_sortable(r[c]) for c in ORDER[name]))
        out["rows"][name] = rows[:max_rows]
    keys = set(sorted((r["run"], r["group_id"]) for r in out["rows"]["groups"])[:max_groups])
    for name, limit in CHART_ROWS.items():
        rows = [r for h in heads for r in h["chart"][name] if (r["run"], r["group_id"]) in keys]
        rows.sort(key=lambda r: tuple(_sortable(r[c]) for c in ORDER[name]))
        out["chart"][name] = rows[:limit]
    for h in heads:
        out["commits"].update({k: v for k, v in h["commits"].items() if k in keys})
        for k, v in h["totals"].items():
            out["totals"][k] = out["totals"].get(k, 0) + v
    return out


def collect_for_report(head: dict[str, Any], runs: dict[str, dict], sources=(),
                       max_groups: int = MAX_CHART_GROUPS) -> dict[str, Any]:
    """The report's data from a (merged) head: tables, the charted groups' rows, totals and lag series."""
    rows = head["rows"]
    groups = rows["groups"]
    keys = sorted((g["run"], g["group_id"]) for g in groups)[:max_groups]
    data = {"rebalances": rows["rebalances"], "members": rows["members"], "partitions": rows["partitions"],
            "epochs": rows.get("epochs", []),
            "chart_members": head["chart"]["members"], "chart_rebalances": head["chart"]["rebalances"],
            "ownership": head["chart"]["ownership"], "groups": groups, "totals": dict(head["totals"]),
            "runs": runs, "chart_groups": keys}
    data["lag"], data["lag_notes"] = collect_lag(head["commits"], keys, runs, sources)
    return data


def collect_lag(commits: dict[tuple[str, str], list[tuple]], keys, runs: dict[str, dict], sources
                ) -> tuple[dict, dict]:
    """Lag series of the charted groups: their commits against the end offsets found beside the log
    (``analysis.lag``)."""
    from analysis import lag as L
    notes: dict[str, str] = {}
    out: dict = {}
    if not keys:
        return out, notes
    ends_by_run = {}
    for s in sources:
        if s.run not in runs:
            continue
        try:
            ends = L.load_end_offsets(s.produce, s.topics_dir)
        except OSError:
            ends = None
        if ends:
            ends_by_run[s.run] = ends
        elif runs[s.run].get("commits"):
            notes[s.run] = ("no lag chart: the log has offset commits but no produce data beside it (produce.jsonl "
                            "of kgroup run, or topics/ of a kgroup serve --data-dir)")
    for key in keys:
        cs = commits.get(key)
        if not cs or key[0] not in ends_by_run or not runs[key[0]].get("commits"):
            continue
        cs = sorted(cs)
        pts = L.series(cs, ends_by_run[key[0]])
        if pts:
            out[key] = pts
    return out, notes


def stack_svgs(svgs: list[str], gap: int = 10) -> str:
    """Several charts in one standalone SVG document (one below the other): for docs and exports."""
    import xml.etree.ElementTree as ET
    ns = "http://www.w3.org/2000/svg"
    ET.register_namespace("", ns)
    parts, y, width = [], 0, 0
    for s in svgs:
        root = ET.fromstring(s)
        w, h = int(float(root.get("width"))), int(float(root.get("height")))
        root.set("y", str(y))
        parts.append(ET.tostring(root, encoding="unicode"))
        y += h + gap
        width = max(width, w)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="{ns}" width="{width}" height="{y}" '
            f'viewBox="0 0 {width} {y}"><rect width="{width}" height="{y}" fill="white"/>' + "".join(parts)
            + "</svg>\n")


# --- the sweep's report ------------------------------------------------------------------------------------------

def _quantile(vals: list[float], q: float) -> float:
    """Linear interpolation between order statistics (the box plot's quartiles)."""
    v = sorted(vals)
    if not v:
        return 0.0
    k = (len(v) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def box_svg(title: str, rows: list[tuple[str, str, list[Optional[float]], str]], unit_div: float = 1000,
            unit: str = "s") -> str:
    """Box plots, one row per (label, kind, values, note): box from the 25th to the 75th percentile, a line at
    the median, whiskers to the minimum and maximum, a dot per seed. A row without values shows its note."""
    labels = [r[0] for r in rows]
    label_w = _label_width(labels, 80)
    kinds = {r[1]: None for r in rows}
    colors = {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(sorted(kinds))}
    legend, lh = _legend([(k, c) for k, c in sorted(colors.items())], 4, 32, WIDTH - 8)
    top, row_h = 40 + lh, 26
    bottom = top + row_h * max(1, len(rows))
    allv = [v / unit_div for r in rows for v in r[2] if v is not None]
    ticks = nice_ticks(max(allv + [0.001]), 6, cover=True)
    vmax = ticks[-1] or 1
    x0, x1 = label_w, WIDTH - 20

    def x(v: float) -> float:
        return round(x0 + v / vmax * (x1 - x0), 2)

    body = [f'<text x="4" y="15" font-weight="bold">{_e(title)}</text>'] + legend
    for v in ticks:
        body.append(f'<line x1="{x(v)}" y1="{top - 4}" x2="{x(v)}" y2="{bottom}" stroke="#eee"/>'
                    f'<text x="{x(v)}" y="{bottom + 14}" text-anchor="middle" fill="#444">{v:g} {unit}</text>')
    for i, (label, kind, vals, note) in enumerate(rows):
        y = top + i * row_h
        cy = y + row_h / 2
        shown, full = _label(label)
        body.append(f'<text x="{label_w - 6}" y="{cy + 4}" text-anchor="end">{_e(shown)}<title>{_e(full)}</title>'
                    f'</text>')
        vs = [v / unit_div for v in vals if v is not None]
        if not vs:
            body.append(f'<text x="{x0 + 4}" y="{cy + 4}" fill="#666">{_e(note)}</text>')
            continue
        c = colors[kind]
        q1, med, q3 = _quantile(vs, 0.25), _quantile(vs, 0.5), _quantile(vs, 0.75)
        body.append(f'<line x1="{x(min(vs))}" y1="{cy}" x2="{x(max(vs))}" y2="{cy}" stroke="{c}"/>'
                    f'<line x1="{x(min(vs))}" y1="{cy - 5}" x2="{x(min(vs))}" y2="{cy + 5}" stroke="{c}"/>'
                    f'<line x1="{x(max(vs))}" y1="{cy - 5}" x2="{x(max(vs))}" y2="{cy + 5}" stroke="{c}"/>'
                    f'<rect x="{x(q1)}" y="{cy - 8}" width="{max(1.0, x(q3) - x(q1)):.2f}" height="16" '
                    f'fill="{c}" fill-opacity="0.35" stroke="{c}"><title>{_e(full)}: {len(vs)} seed(s); '
                    f'median {med:.3f} {unit}, quartiles {q1:.3f}..{q3:.3f} {unit}, range {min(vs):.3f}..'
                    f'{max(vs):.3f} {unit}</title></rect>'
                    f'<line x1="{x(med)}" y1="{cy - 8}" x2="{x(med)}" y2="{cy + 8}" stroke="#222" '
                    f'stroke-width="2"/>')
        for v in vs[:400]:
            body.append(f'<circle cx="{x(v)}" cy="{cy}" r="1.6" fill="#222" fill-opacity="0.35"/>')
    body.append(f'<text x="{x1}" y="{bottom + 29}" text-anchor="end" fill="#666">per run ({unit}); box: 25th-75th '
                f'percentile, line: median, whiskers: min-max, dots: seeds</text>')
    return _svg(WIDTH, bottom + 36, body, title)


def sweep_html(rep: dict[str, Any], title: str = "kgroup sweep report") -> str:
    """The sweep's page: per (combination, group) distributions over seeds, then the tables."""
    import json as _json
    stopped_rows, unowned_rows, recon_rows = [], [], []
    for d in rep["distribution"]:
        combo = _json.dumps(d["params"], sort_keys=True) if d["params"] else ""
        for g in d["groups"]:
            label = f"{g['group_id']}" + (f" {combo}" if combo else "")
            kind = kind_of(g)
            unowned_rows.append((label, kind, g["values"]["unowned_ms_per_partition"], ""))
            if g.get("protocol") == "consumer":
                recon_rows.append((label, kind, g["values"].get("max_reconciliation_ms") or [], "not reconciled"))
            stopped_rows.append((label, kind, [] if g["group_stopped_ms"] is None else
                                 g["values"]["group_stopped_ms"],
                                 "no barrier: consumer" if g.get("protocol") == "consumer" else "never: cooperative"))
    warnings = "".join(f'<p class="note warn">warning: {_e(w)}</p>' for w in rep.get("warnings") or ())
    cols = ("params", "seed", "group_id", "protocol", "assignor", "rebalances", "group_stopped_ms",
            "unowned_partition_ms", "unowned_ms_per_partition", "partitions_moved", "group_epochs",
            "max_reconciliation_ms")
    run_cols = ("params", "seed", "ok", "rebalances", "virtual_ms", "events", "events_sha256", "wall_s")
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta name="viewport" content="width=device-width"><title>{_e(title)}</title><style>{CSS}</style></head>'
        "<body>", f"<h1>{_e(title)}</h1>",
        f'<p class="note">{_e(rep["scenario"])}: {rep["tasks"]} run(s), {rep["seeds"]} seed(s) x '
        f'{len(rep["distribution"])} combination(s) on {_e(rep["master"])}. One row per group and parameter '
        "combination; colours: the group's kind (protocol · assignor · static). Definitions: docs/analysis.md."
        "</p>", warnings,
        "<h2>Distributions over seeds</h2>",
        f'<div class="chart">{box_svg("whole group stopped per run (eager groups)", stopped_rows)}</div>'
        if stopped_rows else "",
        f'<div class="chart">{box_svg("partitions unowned per run, per partition", unowned_rows)}</div>'
        if unowned_rows else "",
        f'<div class="chart">{box_svg("longest reconciliation per run (KIP-848 consumer groups)", recon_rows)}</div>'
        if recon_rows else "",
        "<h2>Groups</h2>", _table(rep.get("groups") or [], cols, "per run and group (groups.csv)"),
        "<h2>Runs</h2>", _table(rep["runs"], run_cols, "per run (runs.csv)"),
        "</body></html>\n"])
