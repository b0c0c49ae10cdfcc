"""Subscription regexes of KIP-848 consumer groups: Google RE2J's syntax, matched with Python's ``re`` where the
two agree exactly (sans-IO).

Kafka 4.4 compiles ``SubscribedTopicRegex`` with ``com.google.re2j.Pattern.compile`` (default flags: Perl
syntax, ``^``/``$`` at the ends of the text, ``.`` not matching ``\\n``) and resolves it with
``matcher(topic).matches()`` -- the whole topic name (``GroupCoordinator`` ``Utils.throwIfRegularExpressionIsInvalid``,
``TopicRegexResolver``). A regex RE2J refuses is answered INVALID_REGULAR_EXPRESSION "SubscribedTopicRegex `R` is
not a valid regular expression: DESC." with RE2J's description (``PatternSyntaxException.getDescription``).

kgroup parses the regex itself, following RE2J's ``Parser`` rule for rule, and builds an equivalent Python
pattern in which every literal is escaped and every class is spelled out, so Python never interprets a construct
its own way. What is accepted (RE2J accepts all of it, and Python matches it identically):

* literals; ``\\`` + any ASCII punctuation; ``\\a \\f \\n \\r \\t \\v``; ``\\xHH``, ``\\x{H...}`` and octal
  ``\\0``-``\\777`` (``\\1``-``\\7`` followed by an octal digit) for ASCII code points; ``\\Q...\\E``;
* ``.`` (any character but ``\\n``; ``(?s)``: any), ``^`` and ``\\A`` (start of text), ``$`` and ``\\z`` (end of
  text -- Python's ``$`` would also match before a final ``\\n``: kgroup emits ``\\Z``);
* ``\\d \\D \\w \\W \\s \\S`` (RE2's ASCII meanings: ``\\s`` is ``[\\t\\n\\f\\r ]``, without ``\\v`` -- Python's
  ``\\s`` differs: kgroup spells the sets out) and ``\\b \\B`` (ASCII word boundaries);
* classes ``[...]``/``[^...]`` of literals, escapes, ranges and the Perl classes above; POSIX classes
  ``[[:alpha:]]`` (spelled out, ASCII);
* groups ``(...)``, ``(?:...)``, named ``(?P<name>...)``/``(?<name>...)``, alternation ``|``;
* repetition ``* + ? {n} {n,} {n,m}`` (counts up to 1000), lazy forms with a trailing ``?``; a ``{`` that does
  not form a repetition is a literal (as RE2J: ``a{``, ``a{,3}``, ``a{01}`` are literals -- Python 3.11 would read
  ``{,3}`` and ``{01}`` as repetitions);
* flags ``(?i)`` ``(?s)`` ``(?is)`` ... at the very start, and scoped ``(?i:...)``, ``(?-s:...)``. Case folding:
  RE2J folds with Unicode simple folding (``k`` also matches KELVIN SIGN), Python with ``re.ASCII`` folds ASCII
  only; the pattern is ASCII and topic names are ``[a-zA-Z0-9._-]``, so no topic name tells them apart.

Refused with INVALID_REGULAR_EXPRESSION although RE2J accepts them (kgroup's own description says why):

* non-ASCII characters in the pattern, ``\\p{...}``/``\\P{...}`` Unicode classes (RE2J's Unicode tables and case
  folding are not Python's);
* the flags ``m`` (multi-line) and ``U`` (ungreedy), and flags set anywhere but at the very start (Python only
  takes global flags there; scoped ``(?i:...)`` is fine);
* group names starting with a digit (Python refuses them);
* a repeated group that contains ``|`` or a repetition, and more than three unbounded repetitions (``*``, ``+``,
  ``{n,}``) in one regex: RE2 matches in linear time, Python backtracks and could take exponential (or
  high-polynomial) time on such patterns -- a broker must not hang on a subscription.

RE2J itself refuses (and so does kgroup, with RE2J's description): backreferences ``\\1``; lookaround
``(?=`` ``(?!`` ``(?<=`` ``(?<!``; atomic groups; possessive ``a*+`` and every other stacked repetition ("invalid
nested repetition operator"); ``\\Z``, ``\\G``, ``\\C`` and unknown escapes ("invalid escape sequence"); counts
over 1000 ("invalid repeat count"); unbalanced parentheses ("missing closing )"; an unmatched ``)`` underflows
RE2J's parse stack: "regexp/syntax: internal error") or brackets ("missing closing ]").

Note the semantics of Java's own ``java.util.regex`` differ from RE2J's in places (``\\Z``, possessive quantifiers,
``$`` before a final line terminator, Unicode classes): Kafka's broker uses RE2J, so kgroup follows RE2J. Topic
names only contain ``[a-zA-Z0-9._-]``, so case folding and Unicode never decide a match against one.
"""

from __future__ import annotations

import re

__all__ = ["RegexError", "compile_topic_regex"]

# RE2J's Parser error descriptions.
ERR_INVALID_CHAR_RANGE = "invalid character class range"
ERR_INVALID_ESCAPE = "invalid escape sequence"
ERR_INVALID_NAMED_CAPTURE = "invalid named capture"
ERR_INVALID_PERL_OP = "invalid or unsupported Perl syntax"
ERR_INVALID_REPEAT_OP = "invalid nested repetition operator"
ERR_INVALID_REPEAT_SIZE = "invalid repeat count"
ERR_MISSING_BRACKET = "missing closing ]"
ERR_MISSING_PAREN = "missing closing )"
ERR_MISSING_REPEAT_ARGUMENT = "missing argument to repetition operator"
ERR_TRAILING_BACKSLASH = "trailing backslash at end of expression"
ERR_DUPLICATE_NAMED_CAPTURE = "duplicate capture group name"
ERR_INTERNAL = "regexp/syntax: internal error"

MAX_UNBOUNDED_REPEATS = 3

_DIGIT = [(0x30, 0x39)]
_WORD = [(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)]
_SPACE = [(0x09, 0x0A), (0x0C, 0x0D), (0x20, 0x20)]
_PERL = {"d": (_DIGIT, False), "D": (_DIGIT, True), "w": (_WORD, False), "W": (_WORD, True),
         "s": (_SPACE, False), "S": (_SPACE, True)}
_POSIX = {
    "alnum": [(0x30, 0x39), (0x41, 0x5A), (0x61, 0x7A)], "alpha": [(0x41, 0x5A), (0x61, 0x7A)],
    "ascii": [(0x00, 0x7F)], "blank": [(0x09, 0x09), (0x20, 0x20)], "cntrl": [(0x00, 0x1F), (0x7F, 0x7F)],
    "digit": _DIGIT, "graph": [(0x21, 0x7E)], "lower": [(0x61, 0x7A)], "print": [(0x20, 0x7E)],
    "punct": [(0x21, 0x2F), (0x3A, 0x40), (0x5B, 0x60), (0x7B, 0x7E)], "space": [(0x09, 0x0D), (0x20, 0x20)],
    "upper": [(0x41, 0x5A)], "word": _WORD, "xdigit": [(0x30, 0x39), (0x41, 0x46), (0x61, 0x66)],
}
_MAX_RUNE = 0x10FFFF


class RegexError(ValueError):
    """A regex kgroup does not accept; ``description`` is what Kafka puts after "is not a valid regular
    expression: " (RE2J's ``getDescription``), or kgroup's reason for refusing a regex RE2J would take."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


def _kgroup(reason: str) -> RegexError:
    return RegexError(f"kgroup cannot match this exactly as Kafka's RE2J does ({reason})")


def _char(cp: int) -> str:
    """A code point as a Python pattern literal (always escaped: never a metacharacter)."""
    return "\\x%02x" % cp if cp < 0x100 else "\\u%04x" % cp if cp < 0x10000 else "\\U%08x" % cp


def _class(ranges: list[tuple[int, int]], negate: bool) -> str:
    body = "".join(_char(lo) if lo == hi else f"{_char(lo)}-{_char(hi)}" for lo, hi in ranges)
    if not body:
        return "[^\\x00-\\U0010ffff]" if not negate else "[\\x00-\\U0010ffff]"
    return f"[{'^' if negate else ''}{body}]"


def _negate(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out, nxt = [], 0
    for lo, hi in sorted(ranges):
        if lo > nxt:
            out.append((nxt, lo - 1))
        nxt = max(nxt, hi + 1)
    if nxt <= _MAX_RUNE:
        out.append((nxt, _MAX_RUNE))
    return out


class _Item:
    """One parsed piece of the pattern: its Python source and what a repetition needs to know about it."""

    __slots__ = ("src", "assertion", "risky", "pseudo", "repeated")

    def __init__(self, src: str, assertion: bool = False, risky: bool = False, pseudo: bool = False,
                 repeated: bool = False) -> None:
        self.src = src
        self.assertion = assertion  # empty-width: Python cannot repeat it bare
        self.risky = risky          # a group containing | or a repetition
        self.pseudo = pseudo        # '(' or '|' marker on the stack
        self.repeated = repeated    # the result of a repetition


class _Parser:
    def __init__(self, regex: str) -> None:
        self.s = regex
        self.i = 0
        self.stack: list[_Item] = []
        self.groups: list[tuple[int, str, bool]] = []  # (stack depth, closing source, saved dot_nl)
        self.dot_nl = False
        self.names: set[str] = set()
        self.unbounded = 0
        self.fold_case = False

    # --- helpers ---------------------------------------------------------------------------------------------

    def more(self) -> bool:
        return self.i < len(self.s)

    def peek(self) -> str:
        return self.s[self.i]

    def push(self, item: _Item) -> None:
        self.stack.append(item)

    # --- the main loop (RE2J Parser.parseInternal) -------------------------------------------------------------

    def parse(self) -> str:
        s = self.s
        for ch in s:
            if ord(ch) > 0x7F:
                raise _kgroup("non-ASCII characters: RE2J's Unicode tables and case folding are not Python's")
        self._leading_flags()
        last_repeat = -1
        while self.more():
            repeat_pos = -1
            c = self.peek()
            if c == "(":
                if s.startswith("(?", self.i):
                    self._perl_flags()
                else:
                    self._open_group("(", ")")
            elif c == "|":
                self.push(_Item("|", pseudo=True))
                self.i += 1
            elif c == ")":
                self._close_group()
                self.i += 1
            elif c in "^":
                self.push(_Item("\\A", assertion=True))
                self.i += 1
            elif c == "$":
                self.push(_Item("\\Z", assertion=True))
                self.i += 1
            elif c == ".":
                self.push(_Item("(?s:.)" if self.dot_nl else "[^\\n]"))
                self.i += 1
            elif c == "[":
                self._class()
            elif c in "*+?":
                repeat_pos = self.i
                self.i += 1
                self._repeat(c, repeat_pos, last_repeat, unbounded=c != "?")
            elif c == "{":
                repeat_pos = self.i
                rep = self._parse_repeat()
                if rep is None:
                    self.i = repeat_pos + 1
                    self.push(_Item(_char(ord("{"))))
                    repeat_pos = -1
                else:
                    lo, hi = rep
                    q = "{%d}" % lo if hi == lo else "{%d,}" % lo if hi == -1 else "{%d,%d}" % (lo, hi)
                    self._repeat(q, repeat_pos, last_repeat, unbounded=hi == -1)
            elif c == "\\":
                self._escape()
            else:
                self.push(_Item(_char(ord(c))))
                self.i += 1
            last_repeat = repeat_pos
        if self.groups:
            raise RegexError(ERR_MISSING_PAREN)
        return ("(?i)" if self.fold_case else "") + self._alternation(0)

    def _leading_flags(self) -> None:
        m = re.match(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?\)", self.s)
        if m is None:
            return
        on, off = m.group(1), m.group(2) or ""
        self._check_flags(on, off, m.group(2) is not None)
        self.fold_case = "i" in on and "i" not in off
        self.dot_nl = "s" in on and "s" not in off
        self.i = m.end()

    @staticmethod
    def _check_flags(on: str, off: str, negated: bool) -> None:
        for f in on + off:
            if f not in "imsU":
                raise RegexError(ERR_INVALID_PERL_OP)
        if negated and not off:
            raise RegexError(ERR_INVALID_PERL_OP)
        for f in on + off:
            if f in "mU":
                raise _kgroup(f"the flag {f}: Python has no {'ungreedy mode' if f == 'U' else 'text-anchored ^/$ with (?m)'} equivalent kgroup accepts")

    # --- groups ----------------------------------------------------------------------------------------------

    def _open_group(self, opener: str, closer: str, advance: int = 1, dot_nl: bool | None = None) -> None:
        self.groups.append((len(self.stack), closer, self.dot_nl))
        self.push(_Item(opener, pseudo=True))
        self.i += advance
        if dot_nl is not None:
            self.dot_nl = dot_nl

    def _close_group(self) -> None:
        if not self.groups:
            raise RegexError(ERR_INTERNAL)  # RE2J: an unmatched ')' underflows its parse stack
        depth, closer, saved = self.groups.pop()
        opener = self.stack[depth].src
        body = self._alternation(depth + 1)
        risky = any(it.src == "|" or it.risky or it.repeated for it in self.stack[depth + 1:])
        del self.stack[depth:]
        self.dot_nl = saved
        self.push(_Item(opener + body + closer, risky=risky))

    def _alternation(self, start: int) -> str:
        return "".join(it.src for it in self.stack[start:])

    def _perl_flags(self) -> None:
        s, start = self.s, self.i
        rest = s[start:]
        if rest.startswith("(?P<") or rest.startswith("(?<"):
            if rest.startswith("(?<=") or rest.startswith("(?<!"):
                raise RegexError(ERR_INVALID_PERL_OP)
            begin = 4 if rest[2] == "P" else 3
            end = rest.find(">", begin)
            if end < 0:
                raise RegexError(ERR_INVALID_NAMED_CAPTURE)
            name = rest[begin:end]
            if not name or not all(ch == "_" or ch.isalnum() for ch in name):
                raise RegexError(ERR_INVALID_NAMED_CAPTURE)
            if name in self.names:
                raise RegexError(ERR_DUPLICATE_NAMED_CAPTURE)
            if name[0].isdigit():
                raise _kgroup("a group name starting with a digit: Python refuses it")
            self.names.add(name)
            self._open_group(f"(?P<{name}>", ")", advance=end + 1)
            return
        m = re.match(r"\(\?([a-zA-Z]*)(?:-([a-zA-Z]*))?([:)])", rest)
        if m is None:
            raise RegexError(ERR_INVALID_PERL_OP)
        on, off, kind = m.group(1), m.group(2) or "", m.group(3)
        self._check_flags(on, off, m.group(2) is not None)
        if kind == ")":
            if on or off:
                raise _kgroup("flags set in the middle of the regex: Python takes global flags only at its start")
            self.i += m.end()
            return
        dot_nl = True if "s" in on else False if "s" in off else self.dot_nl
        fold = ("i" if "i" in on else "") + ("-i" if "i" in off else "")
        self._open_group(f"(?{fold}:" if fold else "(?:", ")", advance=m.end(), dot_nl=dot_nl)

    # --- repetition (RE2J Parser.repeat / parseRepeat) -------------------------------------------------------

    def _repeat(self, op: str, before: int, last_repeat: int, unbounded: bool) -> None:
        lazy = ""
        if self.more() and self.peek() == "?":
            self.i += 1
            lazy = "?"
        if last_repeat != -1:
            raise RegexError(ERR_INVALID_REPEAT_OP)
        if not self.stack or self.stack[-1].pseudo:
            raise RegexError(ERR_MISSING_REPEAT_ARGUMENT)
        sub = self.stack[-1]
        if sub.risky:
            raise _kgroup("a repeated group containing | or a repetition: Python's backtracking could take "
                          "exponential time where RE2 is linear")
        if unbounded:
            self.unbounded += 1
            if self.unbounded > MAX_UNBOUNDED_REPEATS:
                raise _kgroup(f"more than {MAX_UNBOUNDED_REPEATS} unbounded repetitions: Python's backtracking "
                              "could take very long where RE2 is linear")
        self.stack[-1] = _Item(f"(?:{sub.src}){op}{lazy}", repeated=True)

    def _parse_repeat(self) -> tuple[int, int] | None:
        """``parseRepeat``: (min, max; -1 = none) or None when ``{`` is a literal; raises for a bad count."""
        m = re.match(r"\{(0|[1-9][0-9]*)(,((0|[1-9][0-9]*))?)?\}", self.s[self.i:])
        if m is None:
            return None
        lo_s, comma, hi_s = m.group(1), m.group(2), m.group(3)
        lo = int(lo_s) if len(lo_s) <= 8 else -2
        hi = lo if comma is None else (-1 if hi_s is None else (int(hi_s) if len(hi_s) <= 8 else -2))
        self.i += m.end()
        if lo < 0 or lo > 1000 or hi == -2 or hi > 1000 or (hi >= 0 and lo > hi):
            raise RegexError(ERR_INVALID_REPEAT_SIZE)
        return lo, hi

    # --- escapes (RE2J parseEscape, parsePerlClassEscape, \Q...\E) -------------------------------------------

    def _escape(self) -> None:
        s, i = self.s, self.i
        if i + 1 >= len(s):
            raise RegexError(ERR_TRAILING_BACKSLASH)
        c = s[i + 1]
        if c == "A":
            self.push(_Item("\\A", assertion=True))
            self.i += 2
        elif c in "bB":
            self.push(_Item("\\" + c, assertion=True))  # compiled with re.ASCII: ASCII word boundary, as RE2
            self.i += 2
        elif c == "z":
            self.push(_Item("\\Z", assertion=True))
            self.i += 2
        elif c == "C":
            raise RegexError(ERR_INVALID_ESCAPE)
        elif c == "Q":
            end = s.find("\\E", i + 2)
            lit = s[i + 2:] if end < 0 else s[i + 2:end]
            self.i = len(s) if end < 0 else end + 2
            for ch in lit:
                self.push(_Item(_char(ord(ch))))
        elif c in "pP":
            raise _kgroup("Unicode classes \\p{...}: RE2J's Unicode tables are not Python's")
        elif c in _PERL:
            ranges, neg = _PERL[c]
            self.push(_Item(_class(ranges, neg)))
            self.i += 2
        else:
            self.push(_Item(_char(self._single_escape())))

    def _single_escape(self) -> int:
        """``parseEscape``: the code point of an ordinary escape at ``self.i`` (advances past it)."""
        s = self.s
        self.i += 1
        if not self.more():
            raise RegexError(ERR_TRAILING_BACKSLASH)
        c = s[self.i]
        self.i += 1
        if ord(c) <= 0x7F and not c.isalnum():
            return ord(c)
        if c in "1234567" and not (self.more() and "0" <= self.peek() <= "7"):
            raise RegexError(ERR_INVALID_ESCAPE)  # a backreference: not supported
        if c in "01234567":
            r = int(c)
            for _ in range(2):
                if self.more() and "0" <= self.peek() <= "7":
                    r = r * 8 + int(self.peek())
                    self.i += 1
            return r
        if c == "x":
            if not self.more():
                raise RegexError(ERR_INVALID_ESCAPE)
            if self.peek() == "{":
                m = re.match(r"\{([0-9a-fA-F]+)\}", s[self.i:])
                if m is None or int(m.group(1), 16) > _MAX_RUNE:
                    raise RegexError(ERR_INVALID_ESCAPE)
                self.i += m.end()
                return int(m.group(1), 16)
            m = re.match(r"[0-9a-fA-F]{2}", s[self.i:])
            if m is None:
                raise RegexError(ERR_INVALID_ESCAPE)
            self.i += 2
            return int(m.group(0), 16)
        simple = {"a": 7, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11}
        if c in simple:
            return simple[c]
        raise RegexError(ERR_INVALID_ESCAPE)

    # --- classes (RE2J parseClass) ---------------------------------------------------------------------------

    def _class(self) -> None:
        s = self.s
        start = self.i
        self.i += 1
        negate = False
        if self.more() and self.peek() == "^":
            negate = True
            self.i += 1
        ranges: list[tuple[int, int]] = []
        first = True
        while not self.more() or self.peek() != "]" or first:
            first = False
            if not self.more():
                raise RegexError(ERR_MISSING_BRACKET)
            if s.startswith("[:", self.i):
                end = s.find(":]", self.i)
                if end >= 0:
                    name = s[self.i + 2:end]
                    neg = name.startswith("^")
                    group = _POSIX.get(name[1:] if neg else name)
                    if group is None:
                        raise RegexError(ERR_INVALID_CHAR_RANGE)
                    ranges += _negate(group) if neg else group
                    self.i = end + 2
                    continue
            if s.startswith("\\p", self.i) or s.startswith("\\P", self.i):
                raise _kgroup("Unicode classes \\p{...}: RE2J's Unicode tables are not Python's")
            if self.peek() == "\\" and self.i + 1 < len(s) and s[self.i + 1] in _PERL:
                group, neg = _PERL[s[self.i + 1]]
                ranges += _negate(group) if neg else group
                self.i += 2
                continue
            lo = self._class_char()
            hi = lo
            if self.more() and self.peek() == "-":
                self.i += 1
                if self.more() and self.peek() == "]":
                    self.i -= 1  # [a-] is a and -
                else:
                    hi = self._class_char()
                    if hi < lo:
                        raise RegexError(ERR_INVALID_CHAR_RANGE)
            ranges.append((lo, hi))
        self.i += 1
        merged: list[tuple[int, int]] = []
        for lo, hi in sorted(ranges):
            if merged and lo <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))
        self.push(_Item(_class(merged, negate)))
        del start

    def _class_char(self) -> int:
        if not self.more():
            raise RegexError(ERR_MISSING_BRACKET)
        if self.peek() == "\\":
            return self._single_escape()
        c = self.peek()
        self.i += 1
        return ord(c)


def translate(regex: str) -> str:
    """The Python pattern (for ``re.fullmatch`` with ``re.ASCII``) equivalent to the RE2J ``regex``; raises
    :class:`RegexError` with RE2J's (or kgroup's) description."""
    return _Parser(regex).parse()


def compile_topic_regex(regex: str) -> re.Pattern:
    """``Pattern.compile(regex)`` as kgroup can honour it; match topic names with ``.fullmatch``."""
    source = translate(regex)
    try:
        return re.compile(source, re.ASCII)
    except re.error as e:  # a translation kgroup did not foresee: refuse rather than guess
        raise _kgroup(f"internal translation failed: {e}") from None
