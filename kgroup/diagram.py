"""Sequence diagrams of the classic rebalance protocol: a small model, a Mermaid renderer and an SVG renderer.

Theory of operation
-------------------
* A :class:`Diagram` is a title, participants (an id and a label: consumers, the coordinator) and items in time
  order: :class:`Message` (an arrow; ``reply`` draws it dashed, as Mermaid's ``-->>``) and :class:`Note` (a box
  over one or more lifelines: group state changes, generations, the coordinator's decisions).
* :func:`to_mermaid` writes Mermaid's ``sequenceDiagram`` text. It keeps to the grammar of Mermaid's parser
  (``sequenceDiagram.jison``): participant ids are plain ``[A-Za-z0-9_]`` words and the labels go after ``as``;
  message and note texts never contain ``;`` or ``#`` (the parser ends a statement at ``;`` and starts a comment
  or an entity at ``#``) nor a newline (``<br/>`` breaks a line).
* :func:`to_svg` draws the same diagram as a standalone SVG document with the standard library only (no script,
  no web font, no CDN): participant boxes on top and at the bottom, dashed lifelines, one row per item, the time
  of each row in the left margin, arrows with their label above them, notes as boxes across the lifelines.
* What a diagram shows is built elsewhere: :mod:`kgroup.sequence` derives it from a run's records and trace,
  ``kgroup demo --diagrams`` from the live wire and records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Union
from xml.sax.saxutils import escape

from kgroup.catalogue import display_width


@dataclass
class Message:
    t_ms: int
    src: str
    dst: str
    label: str
    reply: bool = False


@dataclass
class Note:
    t_ms: int
    over: tuple[str, ...]
    text: str


Item = Union[Message, Note]


@dataclass
class Diagram:
    title: str
    participants: list[tuple[str, str]] = field(default_factory=list)  # (id, label), left to right
    items: list[Item] = field(default_factory=list)

    def add_participant(self, pid: str, label: str) -> str:
        if not any(p == pid for p, _ in self.participants):
            self.participants.append((pid, label))
        return pid

    def label_of(self, pid: str) -> str:
        return next((label for p, label in self.participants if p == pid), pid)


_ID_OK = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def safe_text(text: str) -> str:
    """A message or note text Mermaid's lexer reads as one TXT token: no ``;``, ``#`` or newline."""
    return (text.replace(";", ",").replace("#", "No.").replace("\r", " ").replace("\n", " ").strip()
            or "-")


def to_mermaid(d: Diagram) -> str:
    lines = ["sequenceDiagram"]
    lines.append(f"    %% {safe_text(d.title)}")
    for pid, label in d.participants:
        if not _ID_OK.match(pid):
            raise ValueError(f"participant id {pid!r} is not a plain word")
        lines.append(f"    participant {pid} as {safe_text(label)}")
    for it in d.items:
        if isinstance(it, Message):
            arrow = "-->>" if it.reply else "->>"
            lines.append(f"    {it.src}{arrow}{it.dst}: {safe_text(it.label)}")
        else:
            over = ",".join(it.over[:1] + it.over[-1:]) if len(it.over) > 1 else it.over[0]
            lines.append(f"    Note over {over}: {safe_text(it.text)}")
    return "\n".join(lines) + "\n"


# --- SVG ---------------------------------------------------------------------------------------------------------

COL_W = 190        # distance between lifelines
MARGIN_L = 78      # room for the time column
TOP = 54           # below the title
BOX_H = 34
CHAR_W = 6.6       # average width of a 12 px sans-serif character (CJK: twice that)
NOTE_LINE_H = 15


def _wrap(text: str, max_cols: int) -> list[str]:
    """Greedy wrap at spaces (or anywhere in CJK text) to ``max_cols`` terminal columns."""
    out: list[str] = []
    for para in text.split("\n"):
        line = ""
        for word in re.split(r"(?<= )", para):
            while display_width(word) > max_cols:  # a word wider than a line: cut it
                room = max_cols - display_width(line)
                head, word = _cut(word, room if room > 4 else max_cols)
                if room <= 4 and line:
                    out.append(line.rstrip())
                    line = ""
                out.append((line + head).rstrip())
                line = ""
            if display_width(line + word) > max_cols and line:
                out.append(line.rstrip())
                line = word
            else:
                line += word
        out.append(line.rstrip())
    return [x for x in out if x] or [""]


def _cut(word: str, cols: int) -> tuple[str, str]:
    w = 0
    for i, ch in enumerate(word):
        w += display_width(ch)
        if w > cols:
            return word[:i], word[i:]
    return word, ""


def _fmt_t(t_ms: int) -> str:
    return f"{t_ms / 1000:.3f}s"


def to_svg(d: Diagram) -> str:
    n = max(1, len(d.participants))
    x_of = {pid: MARGIN_L + COL_W // 2 + i * COL_W for i, (pid, _) in enumerate(d.participants)}
    width = max(MARGIN_L + n * COL_W + 20, int(24 + display_width(d.title) * CHAR_W * 1.25))
    right_edge = MARGIN_L + n * COL_W
    body: list[str] = []
    y = TOP + BOX_H + 16  # the top of the next row
    last_t = None
    for it in d.items:
        if isinstance(it, Message):
            x1, x2 = x_of[it.src], x_of[it.dst]
            span_cols = int(max(abs(x2 - x1), 1.8 * COL_W) / CHAR_W) - 2
            lines = _wrap(it.label, max(12, span_cols))
            cls = "reply" if it.reply else "msg"
            tx = (x1 + x2) / 2 if x1 != x2 else x1 + 30
            anchor = "middle" if x1 != x2 else "start"
            for k, line in enumerate(lines):
                body.append(f'<text class="label" x="{tx:.0f}" y="{y + 12 + NOTE_LINE_H * k}" '
                            f'text-anchor="{anchor}">{escape(line)}</text>')
            arrow_y = y + NOTE_LINE_H * len(lines) + 4
            if x1 == x2:  # a message to itself: a small loop
                body.append(f'<path class="{cls}" d="M{x1},{arrow_y} h24 v10 h-22" marker-end="url(#arrow)"/>')
                arrow_y += 10
            else:
                body.append(f'<line class="{cls}" x1="{x1}" y1="{arrow_y}" x2="{x2 - 4 if x2 > x1 else x2 + 4}" '
                            f'y2="{arrow_y}" marker-end="url(#arrow)"/>')
            time_y = arrow_y + 4
            y = arrow_y + 10
        else:
            xs = [x_of[p] for p in it.over]
            half = COL_W // 2 - 12 if len(it.over) > 1 else int(COL_W * 0.8)
            left = max(MARGIN_L + 4, min(xs) - half)
            right = min(right_edge - 4, max(xs) + half)
            cols = int((right - left - 12) / CHAR_W)
            lines = _wrap(it.text, max(12, cols))
            h = 8 + NOTE_LINE_H * len(lines)
            body.append(f'<rect class="note" x="{left}" y="{y}" width="{right - left}" height="{h}" rx="3"/>')
            for k, line in enumerate(lines):
                body.append(f'<text class="notetext" x="{(left + right) / 2:.0f}" y="{y + 16 + NOTE_LINE_H * k}" '
                            f'text-anchor="middle">{escape(line)}</text>')
            time_y = y + 16
            y += h + 8
        if it.t_ms != last_t:
            body.append(f'<text class="time" x="8" y="{time_y}">{_fmt_t(it.t_ms)}</text>')
            last_t = it.t_ms
    bottom = y + 8
    height = bottom + BOX_H + 16
    head: list[str] = []
    for pid, label in d.participants:
        x = x_of[pid]
        head.append(f'<line class="life" x1="{x}" y1="{TOP + BOX_H}" x2="{x}" y2="{bottom}"/>')
        for by in (TOP, bottom):
            head.append(f'<rect class="actor" x="{x - COL_W // 2 + 8}" y="{by}" width="{COL_W - 16}" '
                        f'height="{BOX_H}" rx="4"/>')
            head.append(f'<text class="actortext" x="{x}" y="{by + 21}" text-anchor="middle">'
                        f'{escape(_wrap(label, int((COL_W - 24) / CHAR_W))[0])}</text>')
    style = (
        "text{font-family:'DejaVu Sans',Arial,'Noto Sans CJK SC',sans-serif;font-size:12px;fill:#1f2328}"
        ".title{font-size:15px;font-weight:bold}.time{fill:#6e7781;font-size:11px}"
        ".actor{fill:#ddeeff;stroke:#3572b0;stroke-width:1.2}.actortext{font-weight:bold}"
        ".life{stroke:#8c959f;stroke-dasharray:4 4}"
        ".msg{stroke:#1f2328;stroke-width:1.3;fill:none}.reply{stroke:#1f2328;stroke-width:1.3;fill:none;"
        "stroke-dasharray:6 3}"
        ".note{fill:#fff5c2;stroke:#b89b00}.notetext{font-size:11.5px}"
    )
    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">',
        f"<title>{escape(d.title)}</title>",
        f"<style>{style}</style>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#1f2328"/></marker></defs>',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text class="title" x="10" y="24">{escape(d.title)}</text>',
        *head,
        *body,
        "</svg>",
        "",
    ])


def render(d: Diagram, fmt: str) -> str:
    if fmt == "mermaid":
        return to_mermaid(d)
    if fmt == "svg":
        return to_svg(d)
    raise ValueError(f"unknown diagram format {fmt!r} (mermaid or svg)")


def participant_id(prefix: str, index: int) -> str:
    return f"{prefix}{index}"


def first_line(text: Optional[str], limit: int = 80) -> str:
    """A reason string cut to one short line (the coordinator's reasons can be long)."""
    if not text:
        return ""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
