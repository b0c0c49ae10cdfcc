"""A checker for Mermaid's ``sequenceDiagram`` text, written from the grammar of Mermaid's own parser
(``packages/mermaid/src/diagrams/sequence/parser/sequenceDiagram.jison``) -- the mermaid CLI needs a headless
browser download and cannot run offline here.

What the jison grammar says and this checker enforces, statement by statement (one per line; ``;`` also ends a
statement in Mermaid, so it may not appear inside a text):

* the document starts with ``sequenceDiagram``; ``%%`` lines are comments;
* ``participant ID`` / ``participant ID as LABEL`` (also ``actor``): ID is the lexer's ``<ID>`` token -- no
  ``-``-``>``, ``:``, ``,``, ``;`` (a ``-`` only between other characters); LABEL is ``restOfLine``:
  no ``#`` (comment) nor ``;``;
* a signal ``ACTOR ARROW [+|-] ACTOR TXT``: ACTOR excludes ``+ - > : , ;`` (inner ``-`` allowed unless it makes
  ``-x`` or ``-)``); ARROW is one of ``->> -->> -> --> -x --x -) --)``; TXT is ``:`` followed by at least one
  character that is not ``#``, ``;`` or a newline;
* ``Note left of A: TXT`` / ``Note right of A: TXT`` / ``Note over A: TXT`` / ``Note over A,B: TXT``
  (keywords case-insensitive);
* ``autonumber``, ``activate A``, ``deactivate A``, and blocks ``loop|rect|opt|alt|par|critical|break ... end``
  (with ``else``/``and``/``option`` inside).

Beyond the grammar, :func:`check` can require every actor used to be declared with ``participant`` (kgroup
always declares them, so the lifelines keep their order).
"""

from __future__ import annotations

import re

ACTOR = r"[^+\->:\n,;]+(?:(?!-x|--x|-\)|--\))-*[^+\->:\n,;]+)*"
ID = r"[^\->:\n,;]+?(?:-*[^\->:\n,;]+?)*?"
ARROWS = r"(?:-->>|->>|-->|->|--x|-x|--\)|-\))"
TXT = r":[^#\n;]+"

RE_PARTICIPANT = re.compile(rf"^(participant|actor)\s+(?P<id>{ID})(?:\s+as\s+(?P<label>[^#\n;]*))?\s*$")
RE_SIGNAL = re.compile(rf"^(?P<a>{ACTOR}?)\s*(?P<arrow>{ARROWS})\s*[+-]?\s*(?P<b>{ACTOR}?)\s*(?P<txt>{TXT})$")
RE_NOTE = re.compile(rf"^note\s+(?:(?:left of|right of)\s+(?P<one>{ACTOR}?)|over\s+(?P<a>{ACTOR}?)"
                     rf"(?:\s*,\s*(?P<b>{ACTOR}?))?)\s*(?P<txt>{TXT})$", re.IGNORECASE)
RE_ACTIVATE = re.compile(rf"^(?:activate|deactivate)\s+{ACTOR}$")
BLOCKS = ("loop", "rect", "opt", "alt", "par", "critical", "break")


class MermaidSyntaxError(ValueError):
    pass


def check(text: str, require_declared: bool = True) -> dict:
    """Parse ``text``; returns {"participants": [(id, label)], "signals": [(a, arrow, b, txt)], "notes": [...]}.
    Raises MermaidSyntaxError naming the line."""
    participants: list[tuple[str, str]] = []
    signals: list[tuple[str, str, str, str]] = []
    notes: list[tuple[tuple[str, ...], str]] = []
    depth = 0
    seen_header = False
    for n, raw in enumerate(text.split("\n"), 1):
        line = raw.strip()
        if not line or line.startswith("%%"):
            continue
        if not seen_header:
            if line != "sequenceDiagram":
                raise MermaidSyntaxError(f"line {n}: expected 'sequenceDiagram', got {line!r}")
            seen_header = True
            continue
        if m := RE_PARTICIPANT.match(line):
            pid = m.group("id").strip()
            if pid in dict(participants):
                raise MermaidSyntaxError(f"line {n}: participant {pid!r} declared twice")
            participants.append((pid, (m.group("label") or pid).strip()))
            continue
        if line.lower().startswith("note"):
            m = RE_NOTE.match(line)
            if not m:
                raise MermaidSyntaxError(f"line {n}: not a note statement: {line!r}")
            over = tuple(x.strip() for x in (m.group("one"), m.group("a"), m.group("b")) if x)
            notes.append((over, m.group("txt")[1:].strip()))
            used = over
        elif line == "autonumber" or RE_ACTIVATE.match(line):
            continue
        elif line.split(" ")[0] in BLOCKS:
            depth += 1
            continue
        elif line.split(" ")[0] in ("else", "and", "option"):
            if depth == 0:
                raise MermaidSyntaxError(f"line {n}: {line.split()[0]!r} outside a block")
            continue
        elif line == "end":
            if depth == 0:
                raise MermaidSyntaxError(f"line {n}: 'end' without a block")
            depth -= 1
            continue
        else:
            m = RE_SIGNAL.match(line)
            if not m or not m.group("txt")[1:].strip():
                raise MermaidSyntaxError(f"line {n}: not a statement of sequenceDiagram: {line!r}")
            a, b = m.group("a").strip(), m.group("b").strip()
            if not a or not b:
                raise MermaidSyntaxError(f"line {n}: a signal needs two actors: {line!r}")
            signals.append((a, m.group("arrow"), b, m.group("txt")[1:].strip()))
            used = (a, b)
        if require_declared:
            for actor in used:
                if actor not in dict(participants):
                    raise MermaidSyntaxError(f"line {n}: actor {actor!r} is not declared")
    if not seen_header:
        raise MermaidSyntaxError("empty document")
    if depth:
        raise MermaidSyntaxError("a block is not closed with 'end'")
    return {"participants": participants, "signals": signals, "notes": notes}
