"""The HTML report: one self-contained file, SVG charts generated with the standard library only.

No script, no stylesheet or font from the network: inline CSS and inline ``<svg>`` elements, readable in any
browser offline. Charts:

* **rebalance Gantt per member** (one per group): a row per member; green where it owns partitions, grey where it
  is in the group without any; rebalances as bands (light: coordinator rebalance ``start_ms..end_ms``, dark: the
  stop-the-world part ``stw_start_ms..end_ms``).
* **partition ownership over time** (one per group): a row per partition, coloured by owner, red where unowned.
* **moves and stop-the-world time per assignor**: bar charts from the assignor comparison.

The input is plain Python data (lists of dicts collected from the Spark tables, ``collect_for_report``), so the
rendering is testable without Spark.
"""

from __future__ import annotations

import datetime as _dt
import html
from typing import Any, Iterable, Optional

# Tableau-10 without its red and pink (red means "unowned" in the ownership chart), plus two darker tones.
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#bab0ac",
           "#1f3b73", "#3d6b35")
OWNED = "#59a14f"
IDLE = "#d9d9d9"
UNOWNED = "#e15759"
FONT = "font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif"

MAX_CHART_GROUPS = 8
MAX_ROWS = 60
MAX_TABLE_ROWS = 300


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _short(member_id: Optional[str], client_id: Optional[str] = None) -> str:
    if client_id:
        return client_id
    if not member_id:
        return "?"
    return member_id if len(member_id) <= 14 else member_id[:12] + "…"


def _fmt_ms(ms: float) -> str:
    ms = float(ms)
    if abs(ms) >= 1000:
        return f"{ms / 1000:.1f} s"
    return f"{ms:.0f} ms"


class _Axis:
    def __init__(self, t0: float, t1: float, x0: float, x1: float) -> None:
        self.t0, self.t1 = float(t0), float(max(t1, t0 + 1))
        self.x0, self.x1 = x0, x1

    def x(self, t: float) -> float:
        t = min(max(float(t), self.t0), self.t1)
        return round(self.x0 + (t - self.t0) / (self.t1 - self.t0) * (self.x1 - self.x0), 2)

    def ticks(self, n: int = 6) -> list[float]:
        span = self.t1 - self.t0
        raw = span / n
        mag = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 1
        step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
        first = (self.t0 // step + (self.t0 % step > 0)) * step
        out, t = [], first
        while t <= self.t1 + 1e-9:
            out.append(t)
            t += step
        return out


def _svg(width: int, height: int, body: list[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{_e(title)}" style="{FONT};font-size:11px">'
            f'<title>{_e(title)}</title>' + "".join(body) + "</svg>")


def _time_axis(ax: _Axis, y: float, height: float) -> list[str]:
    out = [f'<line x1="{ax.x0}" y1="{y}" x2="{ax.x1}" y2="{y}" stroke="#888"/>']
    for t in ax.ticks():
        x = ax.x(t)
        out.append(f'<line x1="{x}" y1="{y - height}" x2="{x}" y2="{y}" stroke="#eee"/>')
        out.append(f'<text x="{x}" y="{y + 13}" text-anchor="middle" fill="#555">{_e(_fmt_ms(t))}</text>')
    return out


def member_names(members: list[dict]) -> dict[str, str]:
    """Display names: the client id, with ``#2``, ``#3``... for later incarnations (a restarted consumer keeps its
    client id and gets a new member id)."""
    seen: dict[str, int] = {}
    names = {}
    for m in sorted(members, key=lambda m: (m.get("first_seen_ms") or 0, m["member_id"])):
        base = m.get("client_id") or _short(m["member_id"])
        seen[base] = seen.get(base, 0) + 1
        names[m["member_id"]] = base if seen[base] == 1 else f"{base}#{seen[base]}"
    return names


def gantt_svg(group: str, members: list[dict], intervals: list[dict], rebalances: list[dict],
              t_end: float, t_start: float = 0.0) -> str:
    """Rebalance Gantt per member. ``members``: rows of the members table (member_id, client_id,
    first_seen_ms, last_ms); ``intervals``: member_intervals rows (member_id, from_ms, to_ms, n_partitions)."""
    members = members[:MAX_ROWS]
    names = member_names(members)
    label_w, width, row_h, top = 130, 900, 18, 26
    height = top + row_h * max(1, len(members)) + 30
    ax = _Axis(t_start, t_end, label_w, width - 10)
    body = [f'<text x="4" y="14" font-weight="bold">rebalance Gantt: group {_e(group)}</text>']
    bottom = top + row_h * max(1, len(members))
    for rb in rebalances:
        s, e = rb.get("start_ms"), rb.get("end_ms")
        if s is None:
            continue
        e = t_end if e is None else e
        x, x2 = ax.x(s), ax.x(e)
        body.append(f'<rect x="{x}" y="{top}" width="{max(1.0, x2 - x):.2f}" height="{bottom - top}" '
                    f'fill="#f28e2b" fill-opacity="0.18"><title>rebalance {_e(rb.get("rebalance_no"))} '
                    f'({_e(rb.get("trigger"))}): {_e(s)}..{_e(e)} ms</title></rect>')
        ws = rb.get("stw_start_ms")
        if ws is not None:
            xs = ax.x(ws)
            body.append(f'<rect x="{xs}" y="{top}" width="{max(1.0, x2 - xs):.2f}" height="{bottom - top}" '
                        f'fill="#f28e2b" fill-opacity="0.45"><title>stop-the-world {_e(rb.get("stw_ms"))} ms'
                        f'</title></rect>')
    by_member: dict[str, list[dict]] = {}
    for iv in intervals:
        by_member.setdefault(iv["member_id"], []).append(iv)
    for i, m in enumerate(members):
        y = top + i * row_h
        label = names[m["member_id"]]
        body.append(f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end">{_e(label)}</text>')
        a, b = ax.x(m["first_seen_ms"]), ax.x(m["last_ms"])
        body.append(f'<rect x="{a}" y="{y + 3}" width="{max(0.5, b - a):.2f}" height="{row_h - 6}" fill="{IDLE}">'
                    f'<title>{_e(m.get("member_id"))}: in the group {_e(m["first_seen_ms"])}..{_e(m["last_ms"])} ms, '
                    f'{_e(m.get("without_partitions_ms"))} ms without partitions</title></rect>')
        for iv in by_member.get(m["member_id"], []):
            if not iv.get("n_partitions"):
                continue
            f, t = max(iv["from_ms"], m["first_seen_ms"]), min(iv["to_ms"], m["last_ms"])
            if t <= f:
                continue
            xa, xb = ax.x(f), ax.x(t)
            body.append(f'<rect x="{xa}" y="{y + 3}" width="{max(0.5, xb - xa):.2f}" height="{row_h - 6}" '
                        f'fill="{OWNED}"><title>generation {_e(iv.get("generation_id"))}: '
                        f'{_e(iv["n_partitions"])} partition(s), {_e(f)}..{_e(t)} ms</title></rect>')
    body += _time_axis(ax, bottom + 2, bottom - top)
    return _svg(width, height + 4, body, f"rebalance Gantt of group {group}")


def ownership_svg(group: str, intervals: list[dict], t_end: float, t_start: float = 0.0,
                  names: Optional[dict[str, str]] = None) -> str:
    """Partition ownership over time: ``intervals`` rows (topic, partition, member_id, from_ms, to_ms)."""
    names = names or {}
    parts = sorted({(iv["topic"], iv["partition"]) for iv in intervals})[:MAX_ROWS]
    owners = sorted({iv["member_id"] for iv in intervals})
    color = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(owners)}
    label_w, width, row_h, top = 90, 900, 14, 26
    bottom = top + row_h * max(1, len(parts))
    legend_rows = (len(owners) + 5) // 6
    height = bottom + 30 + 16 * legend_rows
    ax = _Axis(t_start, t_end, label_w, width - 10)
    body = [f'<text x="4" y="14" font-weight="bold">partition ownership: group {_e(group)} '
            f'(red: unowned)</text>']
    idx = {tp: i for i, tp in enumerate(parts)}
    for tp, i in idx.items():
        y = top + i * row_h
        body.append(f'<text x="{label_w - 6}" y="{y + 11}" text-anchor="end">{_e(tp[0])}-{_e(tp[1])}</text>')
        body.append(f'<rect x="{ax.x0}" y="{y + 2}" width="{ax.x1 - ax.x0:.2f}" height="{row_h - 4}" '
                    f'fill="{UNOWNED}" fill-opacity="0.55"/>')
    for iv in intervals:
        i = idx.get((iv["topic"], iv["partition"]))
        if i is None or iv["to_ms"] <= iv["from_ms"]:
            continue
        y = top + i * row_h
        xa, xb = ax.x(iv["from_ms"]), ax.x(iv["to_ms"])
        who = names.get(iv["member_id"]) or _short(iv["member_id"])
        body.append(f'<rect x="{xa}" y="{y + 2}" width="{max(0.5, xb - xa):.2f}" height="{row_h - 4}" '
                    f'fill="{color[iv["member_id"]]}"><title>{_e(iv["topic"])}-{_e(iv["partition"])}: {_e(who)} '
                    f'{_e(iv["from_ms"])}..{_e(iv["to_ms"])} ms</title></rect>')
    body += _time_axis(ax, bottom + 2, bottom - top)
    for j, m in enumerate(owners):
        lx, ly = 10 + (j % 6) * 148, bottom + 26 + (j // 6) * 16
        body.append(f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" fill="{color[m]}"/>'
                    f'<text x="{lx + 14}" y="{ly}">{_e(names.get(m) or _short(m))}</text>')
    return _svg(width, height, body, f"partition ownership of group {group}")


def assignor_svg(rows: list[dict]) -> str:
    """Two bar panels per (scenario, assignor): mean partitions moved per rebalance, mean and p95 stop-the-world."""
    rows = rows[:MAX_ROWS]
    label_w, width, bar_h, gap, top = 230, 900, 14, 6, 40
    panel_w = (width - label_w - 30) // 2
    n = max(1, len(rows))
    height = top + n * (bar_h * 2 + gap) + 20
    body = ['<text x="4" y="14" font-weight="bold">assignors: partitions moved per rebalance, '
            'stop-the-world time per rebalance</text>',
            f'<text x="{label_w}" y="32" fill="#555">moved per rebalance (total)</text>',
            f'<text x="{label_w + panel_w + 20}" y="32" fill="#555">stop-the-world ms: mean (dark), p95 (light)'
            f'</text>']
    max_moved = max([float(r.get("mean_moved_per_rebalance") or 0) for r in rows] + [1e-9])
    max_stw = max([float(r.get("p95_stw_ms") or 0) for r in rows]
                  + [float(r.get("mean_stw_ms") or 0) for r in rows] + [1e-9])
    for i, r in enumerate(rows):
        y = top + i * (bar_h * 2 + gap)
        c = PALETTE[i % len(PALETTE)]
        body.append(f'<text x="{label_w - 6}" y="{y + bar_h + 4}" text-anchor="end">'
                    f'{_e(r.get("scenario"))} · {_e(r.get("assignor"))}</text>')
        mv = float(r.get("mean_moved_per_rebalance") or 0)
        w = mv / max_moved * (panel_w - 60)
        body.append(f'<rect x="{label_w}" y="{y}" width="{w:.2f}" height="{bar_h * 2 - 2}" fill="{c}">'
                    f'<title>{mv:.2f} moved per rebalance, {_e(r.get("partitions_moved"))} in total</title></rect>')
        body.append(f'<text x="{label_w + w + 4:.2f}" y="{y + bar_h + 4}">{mv:.2f} ({_e(r.get("partitions_moved"))})'
                    f'</text>')
        x0 = label_w + panel_w + 20
        mean, p95 = float(r.get("mean_stw_ms") or 0), float(r.get("p95_stw_ms") or 0)
        body.append(f'<rect x="{x0}" y="{y}" width="{p95 / max_stw * (panel_w - 120):.2f}" height="{bar_h * 2 - 2}" '
                    f'fill="{c}" fill-opacity="0.35"><title>p95 {p95:.0f} ms</title></rect>')
        body.append(f'<rect x="{x0}" y="{y + bar_h / 2}" width="{mean / max_stw * (panel_w - 120):.2f}" '
                    f'height="{bar_h - 2}" fill="{c}"><title>mean {mean:.1f} ms</title></rect>')
        body.append(f'<text x="{x0 + max(p95, mean) / max_stw * (panel_w - 120) + 4:.2f}" y="{y + bar_h + 4}">'
                    f'{mean:.0f} / {p95:.0f} ms</text>')
    return _svg(width, height, body, "assignor comparison")


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
            cells.append(f"<td>{_e(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = (f'<p class="note">{len(rows) - MAX_TABLE_ROWS} more rows in the CSV/Parquet output.</p>'
            if len(rows) > MAX_TABLE_ROWS else "")
    return (f"<table><caption>{_e(caption)}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table>{more}")


REBALANCE_COLUMNS = ("run", "group_id", "rebalance_no", "generation_id", "trigger", "start_ms", "end_ms",
                     "duration_ms", "stw_ms", "outcome", "members_before", "members_after", "partitions_revoked",
                     "partitions_assigned", "partitions_moved", "balance", "assignor", "protocol")
MEMBER_COLUMNS = ("run", "group_id", "client_id", "member_id", "lifetime_ms", "without_partitions_ms",
                  "rebalances_joined", "session_expiries", "removed_reason")
PARTITION_COLUMNS = ("run", "group_id", "topic", "partition", "unowned_ms", "owners", "assignments")
ASSIGNOR_COLUMNS = ("scenario", "assignor", "runs", "groups", "rebalances", "mean_stw_ms", "p50_stw_ms",
                    "p95_stw_ms", "max_stw_ms", "partitions_moved", "mean_moved_per_rebalance",
                    "partitions_revoked", "mean_balance", "mean_unowned_ms_per_partition")

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px} h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12px;margin:8px 0} caption{text-align:left;font-weight:bold;padding:4px 0}
th,td{border:1px solid #ddd;padding:2px 6px;text-align:right} th{background:#f4f4f4}
td:first-child,td:nth-child(2){text-align:left} .note{color:#666;font-size:12px} .chart{margin:10px 0;overflow-x:auto}
"""


def render_html(data: dict[str, Any], title: str = "kgroup rebalance report") -> str:
    """The report page from ``collect_for_report`` data."""
    rb, mem, parts = data["rebalances"], data["members"], data["partitions"]
    parts_sections = []
    for run, group in data["chart_groups"]:
        gantt, owners = group_charts(data, run, group)
        parts_sections.append(f"<h3>{_e(run)} · group {_e(group)}</h3>"
                              f'<div class="chart">{gantt}</div><div class="chart">{owners}</div>')
    totals = data.get("totals") or {}
    n_groups = totals.get("groups", len({(r["run"], r["group_id"]) for r in rb}))
    omitted = n_groups - len(data["chart_groups"])
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return "".join([
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="note">{totals.get("runs", len(data["runs"]))} run(s), {n_groups} group(s), '
        f'{totals.get("rebalances", len(rb))} rebalance(s); '
        f"generated {stamp} by kgroup analyze. Times are the coordinator's (virtual) milliseconds; "
        "definitions in docs/analysis.md.</p>",
        "<h2>Assignors</h2>",
        f'<div class="chart">{assignor_svg(data["assignors"])}</div>' if data["assignors"] else "",
        _table(data["assignors"], ASSIGNOR_COLUMNS, "assignor comparison (per scenario)"),
        "<h2>Rebalances over time</h2>",
        "".join(parts_sections),
        f'<p class="note">{omitted} more group(s) not charted (tables below and CSV/Parquet have all).</p>'
        if omitted > 0 else "",
        "<h2>Rebalances</h2>", _table(rb, REBALANCE_COLUMNS, "one row per rebalance"),
        "<h2>Members</h2>", _table(mem, MEMBER_COLUMNS, "per member"),
        "<h2>Partitions</h2>", _table(parts, PARTITION_COLUMNS, "per partition"),
        "</body></html>\n",
    ])


def _rows(df, name: str, limit: Optional[int] = None) -> list[dict]:
    from analysis.metrics import ORDER
    df = df.orderBy(*ORDER[name])
    if limit is not None:
        df = df.limit(limit)          # sort + limit = a top-k per partition, not a global sort
    return [r.asDict(recursive=True) for r in df.collect()]


def collect_for_report(tables, events=None, max_groups: int = MAX_CHART_GROUPS,
                       max_rows: int = 5000) -> dict[str, Any]:
    """Collect what the report shows from the Spark tables (bounded: the charts cover ``max_groups`` groups)."""
    from pyspark.sql import functions as F
    rb = _rows(tables.rebalances.drop("reason", "members"), "rebalances", max_rows)
    mem = _rows(tables.members, "members", max_rows)
    parts = _rows(tables.partitions, "partitions", max_rows)
    assignors = _rows(tables.assignors, "assignors")
    keys = sorted({(r["run"], r["group_id"]) for r in rb})[:max_groups]
    runs = sorted({r["run"] for r in rb} | {m["run"] for m in mem})
    totals = tables.rebalances.agg(
        F.countDistinct("run").alias("runs"), F.countDistinct("run", "group_id").alias("groups"),
        F.count("*").alias("rebalances"), F.sum((F.col("outcome") == "stable").cast("int")).alias("completed"),
        F.sum(F.when(F.col("outcome") == "stable", F.col("stw_ms"))).alias("stw_total"),
        F.max(F.when(F.col("outcome") == "stable", F.col("stw_ms"))).alias("stw_max"),
        F.avg(F.when(F.col("outcome") == "stable", F.col("stw_ms"))).alias("stw_mean"),
        F.sum(F.when(F.col("outcome") == "stable", F.col("partitions_moved"))).alias("moved")).first().asDict()
    sel = None
    for run, group in keys:
        c = (F.col("run") == run) & (F.col("group_id") == group)
        sel = c if sel is None else (sel | c)
    if sel is None:
        ivs, pivs = [], []
    else:
        ivs = _rows(tables.member_intervals.where(sel), "member_intervals", 20000)
        pivs = _rows(tables.intervals.where(sel), "intervals", 20000)
    run_end = {}
    for m in mem:
        run_end[m["run"]] = max(run_end.get(m["run"], 0), m["last_ms"] or 0)
    for p in parts:
        run_end[p["run"]] = max(run_end.get(p["run"], 0), p["window_end_ms"] or 0)
    return {"rebalances": rb, "members": mem, "partitions": parts, "assignors": assignors, "totals": totals,
            "chart_groups": keys, "member_intervals": ivs, "intervals": pivs, "runs": runs, "run_end": run_end}


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


def group_charts(data: dict[str, Any], run: str, group: str) -> list[str]:
    """The Gantt and ownership charts of one (run, group) from ``collect_for_report`` data."""
    members = [m for m in data["members"] if m["run"] == run and m["group_id"] == group]
    t0 = min([m["first_seen_ms"] for m in members] or [0])
    t_end = data["run_end"].get(run, 0)
    ivs = [iv for iv in data["member_intervals"] if iv["run"] == run and iv["group_id"] == group]
    rbs = [r for r in data["rebalances"] if r["run"] == run and r["group_id"] == group]
    pivs = [iv for iv in data["intervals"] if iv["run"] == run and iv["group_id"] == group]
    return [gantt_svg(group, members, ivs, rbs, t_end, t0),
            ownership_svg(group, pivs, t_end, t0, member_names(members))]
