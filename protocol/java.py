"""Java semantics that leak into Kafka's results, in one place (sans-IO).

Kafka's assignors, its coordinator and its partitioner are Java: wherever they hash a string or iterate a
``java.util.HashMap``, Java's rules decide who gets what. This module owns those rules; everything else in kgroup
imports them from here.

Values
  * :func:`string_hash` -- ``String.hashCode``: ``h = 31*h + u`` over the UTF-16 code units, int32 wrap-around.
    An astral character is two units (a surrogate pair); a lone surrogate in a Python ``str`` is one unit.
  * :func:`string_sort_key` / :func:`java_sorted` -- ``String.compareTo`` order: by UTF-16 code unit, which
    differs from Python's code-point order only for astral characters (they sort *below* U+E000..U+FFFF).
  * :func:`uuid_bits` / :func:`uuid_string` / :func:`uuid_hash` / :func:`uuid_sort_key` -- Kafka's
    ``org.apache.kafka.common.Uuid``: URL-safe base64 (no padding) of 16 bytes read as two signed longs;
    ``hashCode`` folds ``msb ^ lsb`` to 32 bits; ``compareTo`` compares ``msb`` then ``lsb`` as *signed* longs.
  * :func:`topic_partition_hash` -- ``TopicPartition.hashCode``: ``31 * (31 + partition) + topic.hashCode()``.
  * ``Integer.hashCode`` is the value itself.

Hash tables (``java.util.HashMap``; ``HashSet`` is a ``HashMap`` with dummy values)
  The iteration order of a ``HashMap`` is: buckets ``0 .. capacity-1``, and within a bucket the order of the
  bucket's linked list. The bucket of a key is ``spread(h) & (capacity - 1)`` with ``spread(h) = h ^ (h >>> 16)``.
  What decides the order, all reproduced by :class:`JavaHashMap`:

  * *Capacity.* ``new HashMap<>()`` allocates 16 buckets at the first insertion; ``new HashMap<>(n)`` allocates
    ``tableSizeFor(n)`` (the next power of two, 1 for ``n <= 1``). The table doubles when an insertion makes
    ``size > threshold`` (``threshold = (int) (capacity * 0.75f)``). Resizing splits every bucket into a "low" and
    a "high" bucket *keeping the relative order*, so a put-only map iterates by (bucket, insertion order).
  * *Where a new key goes in its bucket.* ``put``/``putIfAbsent``/``add`` append it at the tail;
    ``computeIfAbsent`` pushes it at the *head*, and resizes *before* inserting (only if the size already
    exceeds the threshold), not after.
  * *Treeification.* A bucket that reaches 9 entries by ``put`` (8 by ``computeIfAbsent``) calls
    ``treeifyBin``: below 64 buckets (``MIN_TREEIFY_CAPACITY``) that only doubles the table; from 64 on the
    bucket becomes a red-black tree ordered by (spread hash, then ``compareTo`` for ``Comparable`` keys). A tree
    bucket still iterates along its linked list, but that list is permuted: the tree's root is moved to the
    front after every structural change (``moveRootToFront``) and a new key is linked right *after its tree
    parent*, not at the tail. Splitting a tree bucket on resize keeps the list order; a half of six or fewer
    entries turns back into a plain list (``untreeify``), a larger half is re-treeified (a new root moves to
    the front). Removing from a small tree (``root.right``, ``root.left`` or ``root.left.left`` missing) turns it
    back into a list. :class:`JavaHashMap` implements this tree exactly (same rotations, same colours), so its
    order is Java's even in a tree bucket. Keys that are not ``Comparable`` and have *equal* hashes are ordered in
    a tree by ``System.identityHashCode``, i.e. not reproducibly even in Java: :class:`JavaHashMap` raises
    :class:`JavaOrderUndefined` there unless given a ``tie_break``.
  * *Removal* unlinks the entry (order of the others kept); capacity never shrinks.
  * *Constructors that size themselves:* ``new HashMap<>(Map m)`` / ``putAll`` pre-size to ``s / 0.75f + 1``
    (JDK 17) or ``ceil(s / 0.75)`` (JDK 19+); ``new HashSet<>(Collection c)`` uses
    ``new HashMap<>(max((int) (n / .75f) + 1, 16))`` up to JDK 18 and ``HashMap.newHashMap(max(n, 12))`` =
    ``new HashMap<>(ceil(max(n, 12) / 0.75))`` from JDK 19 (JDK-8186958, JDK-8281631). They differ for
    ``n = 12, 24, 48, 96, ...`` (JDK 17 doubles the table). Kafka 4.x brokers run on JDK 17+ and the issue pins
    JDK 21: ``jdk=21`` is the default everywhere here; ``jdk=17`` is kept for the JDK 17 cross-check.

:func:`hashmap_order` gives the order of a put-only ``HashMap`` quickly (a stable sort by bucket) and falls back
to the exact :class:`JavaHashMap` when a bucket could have reached the treeify threshold. :class:`JavaIntSet` is
a ``HashSet<Integer>`` with the same fast/exact split, built for the server-side assignors' partition sets.
``tests/protocol/test_java_semantics.py`` checks all of this against a Java program compiled at test time.
"""

from __future__ import annotations

import base64
import struct
from collections import Counter
from functools import lru_cache
from typing import Callable, Hashable, Iterable, Iterator, Sequence

__all__ = [
    "JavaHashMap", "JavaIntSet", "JavaOrderUndefined", "DEFAULT_JDK",
    "int32", "string_hash", "java_string_hash", "string_key", "string_sort_key", "java_sort_key", "java_sorted",
    "topic_partition_hash", "uuid_bits", "uuid_string", "uuid_hash", "uuid_sort_key", "spread",
    "table_size_for", "threshold_for", "hashset_copy_capacity", "hashmap_copy_capacity", "new_hashmap_capacity",
    "float_capacity", "hashmap_order", "compute_if_absent_order",
]

DEFAULT_JDK = 21
_MASK32 = 0xFFFFFFFF
MAXIMUM_CAPACITY = 1 << 30
DEFAULT_INITIAL_CAPACITY = 16
TREEIFY_THRESHOLD = 8
UNTREEIFY_THRESHOLD = 6
MIN_TREEIFY_CAPACITY = 64


class JavaOrderUndefined(RuntimeError):
    """Java itself would order these keys by ``System.identityHashCode`` (not reproducible)."""


# --- ints and strings ----------------------------------------------------------------------------------------------

def int32(n: int) -> int:
    """``n`` wrapped to a signed 32-bit int, as Java's ``int`` arithmetic does."""
    n &= _MASK32
    return n - 0x1_0000_0000 if n & 0x8000_0000 else n


def _f32(x: float) -> float:
    """``x`` rounded to a Java ``float`` (IEEE binary32)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


_ASTRAL = "\U00010000"


def _has_astral(s: str) -> bool:
    return bool(s) and max(s) >= _ASTRAL


@lru_cache(maxsize=1 << 16)
def string_hash(s: str) -> int:
    """``java.lang.String.hashCode`` as a signed 32-bit int (over UTF-16 code units)."""
    h = 0
    if _has_astral(s):
        data = s.encode("utf-16-be", "surrogatepass")
        units: Iterable[int] = [(data[i] << 8) | data[i + 1] for i in range(0, len(data), 2)]
    else:
        units = map(ord, s)
    for u in units:
        h = (31 * h + u) & _MASK32
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


java_string_hash = string_hash  # the name the rest of kgroup has used


def string_key(s: str) -> bytes:
    """A sort key for one string giving ``String.compareTo`` order: its big-endian UTF-16 bytes (they compare like
    the code-unit sequence; lone surrogates pass through as units)."""
    return s.encode("utf-16-be", "surrogatepass")


_utf16_key = string_key


def string_sort_key(strings: Iterable[str]) -> Callable[[str], object]:
    """A sort key giving ``String.compareTo`` order for every string in ``strings`` (``str`` itself if no
    astral character occurs, as code-point and code-unit order then agree)."""
    if any(_has_astral(s) for s in strings):
        return _utf16_key
    return _identity


def _identity(x):
    return x


java_sort_key = string_sort_key


def java_sorted(strings: Iterable[str]) -> list[str]:
    """``strings`` sorted by ``String.compareTo``."""
    items = list(strings)
    return sorted(items, key=string_sort_key(items))


def topic_partition_hash(topic_hash: int, partition: int) -> int:
    """``org.apache.kafka.common.TopicPartition.hashCode`` given ``topic.hashCode()``."""
    return int32(31 * (31 + partition) + topic_hash)


# --- Kafka's Uuid --------------------------------------------------------------------------------------------------

def _signed64(n: int) -> int:
    return n - (1 << 64) if n & (1 << 63) else n


@lru_cache(maxsize=1 << 14)
def uuid_bits(s: str) -> tuple[int, int]:
    """``Uuid.fromString``: (mostSignificantBits, leastSignificantBits) as signed longs.

    Raises ``ValueError`` like Kafka's ``IllegalArgumentException`` for a string that is not 16 bytes of
    URL-safe base64."""
    if not isinstance(s, str):
        raise ValueError(f"topic id must be a base64 Uuid string, got {s!r}")
    if len(s) > 24:
        raise ValueError(f"Input string with prefix `{s[:24]}` is too long to be decoded as a base64 UUID")
    try:
        raw = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
    except (ValueError, TypeError):
        raise ValueError(f"Input string `{s}` is not a base64 UUID") from None
    if len(raw) != 16:
        raise ValueError(f"Input string `{s}` decoded as {len(raw)} bytes, which is not equal to the expected "
                         "16 bytes of a base64-encoded UUID")
    msb, lsb = struct.unpack(">qq", raw)
    return msb, lsb


def uuid_string(msb: int, lsb: int) -> str:
    """``Uuid.toString``: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(struct.pack(">qq", _signed64(msb & (2**64 - 1)),
                                                _signed64(lsb & (2**64 - 1)))).decode().rstrip("=")


def uuid_hash(s: str) -> int:
    """``Uuid.hashCode``: ``(int) (x >> 32) ^ (int) x`` with ``x = msb ^ lsb``."""
    msb, lsb = uuid_bits(s)
    x = (msb ^ lsb) & (2**64 - 1)
    return int32((x >> 32) ^ x)


def uuid_sort_key(s: str) -> tuple[int, int]:
    """A sort key giving ``Uuid.compareTo`` order (signed ``msb``, then signed ``lsb``)."""
    return uuid_bits(s)


# --- HashMap sizing ------------------------------------------------------------------------------------------------

def spread(h: int) -> int:
    """``HashMap.hash``: ``h ^ (h >>> 16)`` as a signed int (what tree bins compare)."""
    h &= _MASK32
    h ^= h >> 16
    return h - 0x1_0000_0000 if h & 0x8000_0000 else h


def table_size_for(cap: int) -> int:
    """``HashMap.tableSizeFor``: the power of two ``>= cap`` (1 for ``cap <= 1``), capped at 2**30."""
    if cap <= 1:
        return 1
    n = 1 << (cap - 1).bit_length()
    return min(n, MAXIMUM_CAPACITY)


def threshold_for(capacity: int) -> int:
    """``(int) (capacity * 0.75f)``: the resize threshold of a table of ``capacity`` buckets (a power of two, so
    the float product is exact)."""
    return (3 * capacity) >> 2


def float_capacity(n: int) -> int:
    """``(int) (n / 0.75f + 1)``: the capacity argument Kafka computes in several places (float arithmetic)."""
    return int(_f32(_f32(_f32(float(n)) / _f32(0.75)) + 1.0))


def new_hashmap_capacity(n: int) -> int:
    """``HashMap.newHashMap(n)`` (JDK 19+): the initial-capacity argument ``ceil(n / 0.75)``."""
    return -(-n * 4 // 3)  # exact: ceil(n / 0.75) == ceil(4n / 3)


def hashset_copy_capacity(n: int, jdk: int = DEFAULT_JDK) -> int:
    """The initial-capacity argument ``new HashSet<>(Collection c)`` passes to its map for ``c.size() == n``."""
    if jdk >= 19:
        return new_hashmap_capacity(max(n, 12))
    return max(int(_f32(_f32(float(n)) / _f32(0.75))) + 1, 16)


def hashmap_copy_capacity(n: int, jdk: int = DEFAULT_JDK) -> int:
    """The threshold ``new HashMap<>(Map m)`` (``putMapEntries`` on an empty map) pre-sizes to, for ``m.size() == n``
    (0 means "not pre-sized": the default 16 buckets)."""
    if n <= 0:
        return 0
    if jdk >= 19:
        t = new_hashmap_capacity(n)
    else:
        t = int(_f32(_f32(_f32(float(n)) / _f32(0.75)) + 1.0))
    return table_size_for(t)


# --- the exact emulation -------------------------------------------------------------------------------------------

class _Node:
    """A ``HashMap.TreeNode``: red-black links plus the bucket's doubly linked list."""
    __slots__ = ("key", "hash", "parent", "left", "right", "prev", "next", "red")

    def __init__(self, key, h: int, nxt: "_Node | None" = None):
        self.key = key
        self.hash = h
        self.parent = self.left = self.right = self.prev = None
        self.next = nxt
        self.red = False


class _Tree:
    """A treeified bucket: ``first`` is the head of its linked list (iteration order)."""
    __slots__ = ("first", "nodes")

    def __init__(self):
        self.first: _Node | None = None
        self.nodes: dict = {}

    def keys(self) -> list:
        out = []
        e = self.first
        while e is not None:
            out.append(e.key)
            e = e.next
        return out

    def root(self) -> _Node:
        r = self.first
        while r.parent is not None:
            r = r.parent
        return r


# The red-black balancing of HashMap.TreeNode, written once for both mirror images: ``d`` is a side ("left" or
# "right"), ``o`` the other one. rotate(root, p, "left") is Java's rotateLeft, rotate(root, p, "right") its
# rotateRight; the same colours change in the same order, so the tree -- and the bucket's order -- is Java's.
_OTHER = {"left": "right", "right": "left"}


def _rotate(root: _Node, p: _Node, d: str) -> _Node:
    """Rotate ``p`` down to side ``d``: its child on the other side takes its place."""
    o = _OTHER[d]
    c = getattr(p, o)
    if c is not None:
        inner = getattr(c, d)
        setattr(p, o, inner)
        if inner is not None:
            inner.parent = p
        pp = c.parent = p.parent
        if pp is None:
            root = c
            c.red = False
        elif pp.left is p:
            pp.left = c
        else:
            pp.right = c
        setattr(c, d, p)
        p.parent = c
    return root


def _balance_insertion(root: _Node, x: _Node) -> _Node:
    x.red = True
    while True:
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        if not xp.red:
            return root
        xpp = xp.parent
        if xpp is None:
            return root
        d = "left" if xp is xpp.left else "right"  # the side of x's parent under its grandparent
        o = _OTHER[d]
        uncle = getattr(xpp, o)
        if uncle is not None and uncle.red:
            uncle.red = False
            xp.red = False
            xpp.red = True
            x = xpp
        else:
            if x is getattr(xp, o):
                x = xp
                root = _rotate(root, x, d)
                xp = x.parent
                xpp = None if xp is None else xp.parent
            if xp is not None:
                xp.red = False
                if xpp is not None:
                    xpp.red = True
                    root = _rotate(root, xpp, o)


def _black(n: _Node | None) -> bool:
    return n is None or not n.red


def _balance_deletion(root: _Node, x: _Node | None) -> _Node:
    while True:
        if x is None or x is root:
            return root
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        if x.red:
            x.red = False
            return root
        d = "left" if xp.left is x else "right"  # x's side; its sibling w is on the other
        o = _OTHER[d]
        w = getattr(xp, o)
        if w is not None and w.red:
            w.red = False
            xp.red = True
            root = _rotate(root, xp, d)
            xp = x.parent
            w = None if xp is None else getattr(xp, o)
        if w is None:
            x = xp
            continue
        near, far = getattr(w, d), getattr(w, o)
        if _black(far) and _black(near):
            w.red = True
            x = xp
            continue
        if _black(far):
            if near is not None:
                near.red = False
            w.red = True
            root = _rotate(root, w, o)
            xp = x.parent
            w = None if xp is None else getattr(xp, o)
        if w is not None:
            w.red = False if xp is None else xp.red
            far = getattr(w, o)
            if far is not None:
                far.red = False
        if xp is not None:
            xp.red = False
            root = _rotate(root, xp, d)
        x = root


class JavaHashMap:
    """A ``java.util.HashMap`` reduced to what decides its iteration order (keys; values kept aside).

    ``hash_of(key)`` is the key's Java ``hashCode``; ``order_key(key)`` a sort key consistent with the key class's
    ``compareTo`` when the class is ``Comparable`` (``None`` if it is not). ``initial_capacity`` mirrors
    ``new HashMap<>(initialCapacity)`` (``None``: ``new HashMap<>()``). ``tie_break(a, b) -> int`` replaces Java's
    identity-hash tie-break for non-comparable keys with equal hashes; without it such a tie raises
    :class:`JavaOrderUndefined`.
    """

    __slots__ = ("_hash_of", "_order_key", "_tie", "_tab", "_size", "_thr", "_vals", "_h")

    def __init__(self, hash_of: Callable[[Hashable], int], order_key: Callable | None = None,
                 initial_capacity: int | None = None, tie_break: Callable | None = None):
        self._hash_of = hash_of
        self._order_key = order_key
        self._tie = tie_break
        self._tab: list | None = None
        self._size = 0
        if initial_capacity is not None and initial_capacity < 0:
            raise ValueError(f"Illegal initial capacity: {initial_capacity}")
        self._thr = 0 if initial_capacity is None else table_size_for(initial_capacity)
        self._vals: dict = {}
        self._h: dict = {}

    # -- constructors named after Java's -------------------------------------------------------------------------

    @classmethod
    def copy_of(cls, other: "JavaHashMap", jdk: int = DEFAULT_JDK) -> "JavaHashMap":
        """``new HashMap<>(other)``: pre-sized by ``putMapEntries``, filled in ``other``'s iteration order."""
        m = cls(other._hash_of, other._order_key, None, other._tie)
        m._thr = hashmap_copy_capacity(len(other), jdk)
        for k in other:
            m.put(k, other._vals[k])
        return m

    @classmethod
    def hash_set_of(cls, items: Iterable, hash_of: Callable, order_key: Callable | None = None,
                    jdk: int = DEFAULT_JDK, size: int | None = None, tie_break: Callable | None = None) -> "JavaHashMap":
        """``new HashSet<>(collection)`` (``size`` overrides ``collection.size()`` when it differs, e.g. Kafka's
        ``TopicIds`` counts unresolved names)."""
        items = list(items)
        n = len(items) if size is None else size
        m = cls(hash_of, order_key, hashset_copy_capacity(n, jdk), tie_break)
        for k in items:
            m.put(k)
        return m

    # -- queries -------------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._size

    def __contains__(self, key) -> bool:
        return key in self._vals

    def get(self, key, default=None):
        return self._vals.get(key, default)

    def __getitem__(self, key):
        return self._vals[key]

    @property
    def capacity(self) -> int:
        """Buckets allocated (0 before the first insertion)."""
        return 0 if self._tab is None else len(self._tab)

    def __iter__(self) -> Iterator:
        return iter(self.keys())

    def keys(self) -> list:
        """Keys in Java iteration order."""
        out: list = []
        if self._tab is None:
            return out
        for b in self._tab:
            if b is None:
                continue
            if type(b) is list:
                out.extend(b)
            else:
                out.extend(b.keys())
        return out

    def items(self) -> list:
        vals = self._vals
        return [(k, vals[k]) for k in self.keys()]

    def first(self):
        """The first key in iteration order (``iterator().next()``); ``KeyError`` if empty."""
        if self._tab is not None and self._size:
            for b in self._tab:
                if b is not None:
                    return b[0] if type(b) is list else b.first.key
        raise KeyError("empty map")

    # -- updates -------------------------------------------------------------------------------------------------

    def _spread(self, key) -> int:
        h = self._h.get(key)
        if h is None:
            h = self._h[key] = spread(self._hash_of(key))
        return h

    def put(self, key, value=None) -> None:
        """``put`` / ``putIfAbsent`` / ``HashSet.add`` (value replaced in place if present)."""
        if key in self._vals:
            self._vals[key] = value
            return
        h = self._spread(key)
        if self._tab is None or not self._tab:
            self._resize()
        tab = self._tab
        i = h & (len(tab) - 1)
        b = tab[i]
        self._vals[key] = value
        if b is None:
            tab[i] = [key]
        elif type(b) is list:
            b.append(key)
            if len(b) > TREEIFY_THRESHOLD:  # binCount >= TREEIFY_THRESHOLD - 1: the 9th entry
                self._treeify_bin(h)
        else:
            self._tree_put(b, key, h)
        self._size += 1
        if self._size > self._thr:
            self._resize()

    add = put

    def compute_if_absent(self, key, factory: Callable[[], object] | None = None):
        """``HashMap.computeIfAbsent``: resize first if overdue, a new key at the *head* of its bucket; returns the
        key's value (``factory()`` for a new key; ``True`` without a factory)."""
        h = self._spread(key)
        if self._size > self._thr or self._tab is None or not self._tab:
            self._resize()
        if key in self._vals:
            return self._vals[key]
        value = True if factory is None else factory()
        tab = self._tab
        i = h & (len(tab) - 1)
        b = tab[i]
        self._vals[key] = value
        if b is not None and type(b) is not list:
            self._tree_put(b, key, h)
        else:
            bin_count = 0 if b is None else len(b)
            tab[i] = [key] if b is None else [key] + b
            if bin_count >= TREEIFY_THRESHOLD - 1:
                self._treeify_bin(h)
        self._size += 1
        return value

    def get_or_compute(self, key, factory: Callable[[], object] | None = None):
        """:meth:`compute_if_absent`, skipping the work Java does for a present key when no resize is overdue
        (none: it only walks the bucket) -- the hot path of the assignors."""
        v = self._vals.get(key)
        if v is None or self._size > self._thr:
            return self.compute_if_absent(key, factory)
        return v

    def remove(self, key) -> bool:
        """``remove(key)``; returns whether it was present."""
        if key not in self._vals:
            return False
        del self._vals[key]
        h = self._h[key]
        tab = self._tab
        i = h & (len(tab) - 1)
        b = tab[i]
        if type(b) is list:
            b.remove(key)
            if not b:
                tab[i] = None
        else:
            self._tree_remove(b, i, b.nodes.pop(key))
        self._size -= 1
        return True

    discard = remove

    # -- table mechanics (HashMap.resize / treeifyBin / TreeNode) ------------------------------------------------

    def _resize(self) -> None:
        old = self._tab
        old_cap = 0 if old is None else len(old)
        old_thr = self._thr
        new_thr = 0
        if old_cap > 0:
            if old_cap >= MAXIMUM_CAPACITY:
                self._thr = 2**31 - 1
                return
            new_cap = old_cap << 1
            if new_cap < MAXIMUM_CAPACITY and old_cap >= DEFAULT_INITIAL_CAPACITY:
                new_thr = old_thr << 1
        elif old_thr > 0:
            new_cap = old_thr
        else:
            new_cap = DEFAULT_INITIAL_CAPACITY
            new_thr = 12
        if new_thr == 0:
            new_thr = threshold_for(new_cap) if new_cap < MAXIMUM_CAPACITY else 2**31 - 1
        self._thr = new_thr
        tab: list = [None] * new_cap
        self._tab = tab
        if not old:
            return
        hs = self._h
        mask = new_cap - 1
        for j, b in enumerate(old):
            if b is None:
                continue
            if type(b) is list:
                if len(b) == 1:
                    tab[hs[b[0]] & mask] = b
                    continue
                lo = [k for k in b if not hs[k] & old_cap]
                hi = [k for k in b if hs[k] & old_cap]
                if lo:
                    tab[j] = lo
                if hi:
                    tab[j + old_cap] = hi
            else:
                self._split(b, j, old_cap)

    def _treeify_bin(self, h: int) -> None:
        tab = self._tab
        if len(tab) < MIN_TREEIFY_CAPACITY:
            self._resize()
            return
        i = h & (len(tab) - 1)
        b = tab[i]
        if b is None or type(b) is not list:
            return
        tree = _Tree()
        prev = None
        for k in b:
            node = _Node(k, self._h[k])
            tree.nodes[k] = node
            if prev is None:
                tree.first = node
            else:
                node.prev = prev
                prev.next = node
            prev = node
        tab[i] = tree
        self._treeify(tree)

    def _dir(self, k, h: int, pk) -> int:
        """The comparison ``treeify``/``putTreeVal`` make between a new key and a tree key of equal hash."""
        ok = self._order_key
        if ok is not None:
            a, b = ok(k), ok(pk)
            if a < b:
                return -1
            if a > b:
                return 1
        if self._tie is not None:
            return self._tie(k, pk)
        raise JavaOrderUndefined(
            f"keys {k!r} and {pk!r} have equal hashes and no compareTo: Java orders them by identity hash")

    def _treeify(self, tree: _Tree) -> None:
        root = None
        x = tree.first
        while x is not None:
            nxt = x.next
            x.left = x.right = None
            if root is None:
                x.parent = None
                x.red = False
                root = x
            else:
                xp, d = self._descend(root, x.key, x.hash)
                x.parent = xp
                if d <= 0:
                    xp.left = x
                else:
                    xp.right = x
                root = _balance_insertion(root, x)
            x = nxt
        self._move_root_to_front(tree, root)

    @staticmethod
    def _move_root_to_front(tree: _Tree, root: _Node | None) -> None:
        if root is None:
            return
        first = tree.first
        if root is not first:
            rp, rn = root.prev, root.next
            if rn is not None:
                rn.prev = rp
            if rp is not None:
                rp.next = rn
            if first is not None:
                first.prev = root
            root.next = first
            root.prev = None
            tree.first = root

    def _descend(self, root: _Node, key, h: int) -> tuple[_Node, int]:
        """Where a new key goes (``treeify``/``putTreeVal``): its parent-to-be, and -1 (left) or 1 (right)."""
        p = root
        while True:
            ph = p.hash
            if ph > h:
                d = -1
            elif ph < h:
                d = 1
            else:
                d = self._dir(key, h, p.key)
            child = p.left if d <= 0 else p.right
            if child is None:
                return p, d
            p = child

    def _tree_put(self, tree: _Tree, key, h: int) -> None:
        """``putTreeVal`` for a new key: linked into the bucket's list right after its tree parent."""
        root = tree.root()
        xp, d = self._descend(root, key, h)
        xpn = xp.next
        x = _Node(key, h, xpn)
        tree.nodes[key] = x
        if d <= 0:
            xp.left = x
        else:
            xp.right = x
        xp.next = x
        x.parent = x.prev = xp
        if xpn is not None:
            xpn.prev = x
        self._move_root_to_front(tree, _balance_insertion(root, x))

    def _untreeify(self, tree: _Tree) -> list:
        return tree.keys()

    def _tree_remove(self, tree: _Tree, index: int, node: _Node) -> None:
        tab = self._tab
        first = tree.first
        succ, pred = node.next, node.prev
        if pred is None:
            tree.first = first = succ
        else:
            pred.next = succ
        if succ is not None:
            succ.prev = pred
        if first is None:
            tab[index] = None
            return
        root = first
        if root.parent is not None:
            while root.parent is not None:
                root = root.parent
        if root.right is None or root.left is None or root.left.left is None:
            tab[index] = self._untreeify(tree)  # too small
            return
        p, pl, pr = node, node.left, node.right
        if pl is not None and pr is not None:
            s = pr
            while s.left is not None:
                s = s.left
            s.red, p.red = p.red, s.red
            sr = s.right
            pp = p.parent
            if s is pr:
                p.parent = s
                s.right = p
            else:
                sp = s.parent
                p.parent = sp
                if sp is not None:
                    if s is sp.left:
                        sp.left = p
                    else:
                        sp.right = p
                s.right = pr
                if pr is not None:
                    pr.parent = s
            p.left = None
            p.right = sr
            if sr is not None:
                sr.parent = p
            s.left = pl
            if pl is not None:
                pl.parent = s
            s.parent = pp
            if pp is None:
                root = s
            elif p is pp.left:
                pp.left = s
            else:
                pp.right = s
            replacement = sr if sr is not None else p
        elif pl is not None:
            replacement = pl
        elif pr is not None:
            replacement = pr
        else:
            replacement = p
        if replacement is not p:
            pp = replacement.parent = p.parent
            if pp is None:
                root = replacement
                replacement.red = False
            elif p is pp.left:
                pp.left = replacement
            else:
                pp.right = replacement
            p.left = p.right = p.parent = None
        r = root if p.red else _balance_deletion(root, replacement)
        if replacement is p:  # detach
            pp = p.parent
            p.parent = None
            if pp is not None:
                if p is pp.left:
                    pp.left = None
                elif p is pp.right:
                    pp.right = None
        self._move_root_to_front(tree, r)

    def _split(self, tree: _Tree, index: int, bit: int) -> None:
        tab = self._tab
        lo: list[_Node] = []
        hi: list[_Node] = []
        e = tree.first
        while e is not None:
            (hi if e.hash & bit else lo).append(e)
            e = e.next
        for part, at, other in ((lo, index, hi), (hi, index + bit, lo)):
            if not part:
                continue
            if len(part) <= UNTREEIFY_THRESHOLD:
                tab[at] = [n.key for n in part]
                continue
            t = _Tree()
            prev = None
            for n in part:
                n.prev = prev
                n.next = None
                if prev is None:
                    t.first = n
                else:
                    prev.next = n
                prev = n
                t.nodes[n.key] = n
            tab[at] = t
            if other:  # otherwise the tree is intact (same nodes, same root at the front)
                self._treeify(t)


# --- fast paths ----------------------------------------------------------------------------------------------------

def _capacity_after(initial_table: int, peak: int) -> int:
    """The table size of a map whose first table had ``initial_table`` buckets after its size peaked at ``peak``
    (no treeify-resize: see the guards)."""
    cap = initial_table
    while peak > threshold_for(cap) and cap < MAXIMUM_CAPACITY:
        cap <<= 1
    return cap


def _puts_never_treeify(spreads: Sequence[int], first_table: int, limit: int = TREEIFY_THRESHOLD) -> bool:
    """Does inserting keys with these spread hashes, in order, into a table that starts with ``first_table``
    buckets never fill a bucket past ``limit`` (8 for ``put``, 7 for ``computeIfAbsent``: then ``treeifyBin``, a
    resize or a tree)? Phase by phase: while the table has ``c`` buckets it receives keys up to the one that takes
    the size past ``threshold(c)`` (both insert paths resize before the next insertion); a bucket overflows exactly
    when more than ``limit`` of the keys inserted so far share its index at ``c``."""
    n = len(spreads)
    if n <= limit:
        return True
    cap = first_table
    while True:
        end = min(n, threshold_for(cap) + 1)
        if end > limit:
            mask = cap - 1
            if max(Counter(h & mask for h in spreads[:end]).values()) > limit:
                return False
        if end == n or cap >= MAXIMUM_CAPACITY:
            return True
        cap <<= 1


_AUTO = object()


def hashmap_order(keys: Sequence, hash_of: Callable[[Hashable], int] = string_hash,
                  initial_capacity: int | None = None, order_key=_AUTO) -> list:
    """Iteration order of a ``HashMap`` into which ``keys`` (distinct) were ``put`` in this order.

    ``initial_capacity`` as in ``new HashMap<>(n)``; ``order_key`` the ``compareTo`` key (default: ``String``
    order for strings, the value for ints; ``None`` for a class that is not ``Comparable``). Fast (a stable sort by
    bucket) unless some bucket could have reached the treeify threshold, then exact through :class:`JavaHashMap`."""
    keys = list(keys)
    n = len(keys)
    if not n:
        return []
    first_table = DEFAULT_INITIAL_CAPACITY if initial_capacity is None else table_size_for(initial_capacity)
    spreads = [spread(hash_of(k)) for k in keys]
    if not _puts_never_treeify(spreads, first_table):
        if order_key is _AUTO:
            order_key = string_sort_key(keys) if all(isinstance(k, str) for k in keys) else _identity
        m = JavaHashMap(hash_of, order_key, initial_capacity)
        for k in keys:
            m.put(k)
        return m.keys()
    mask = _capacity_after(first_table, n) - 1
    idx = sorted(range(n), key=lambda i: spreads[i] & mask)
    return [keys[i] for i in idx]


def compute_if_absent_order(keys: Sequence, called_after_last: bool, hash_of: Callable[[Hashable], int] = string_hash,
                            order_key=_AUTO) -> list:
    """Iteration order of a ``new HashMap<>()`` filled only by ``computeIfAbsent``: ``keys`` are the distinct keys
    in the order they were first asked for; ``called_after_last`` tells whether any call came after the last of
    those insertions (it performs a resize the insertion left overdue).

    Every insertion goes to the head of its bucket and splits keep order, so a bucket lists its keys newest first;
    the table doubles before the next call once the size passes the threshold. Exact through
    :class:`JavaHashMap` if a bucket could have reached 8 keys (``treeifyBin``)."""
    keys = list(keys)
    n = len(keys)
    if not n:
        return []
    spreads = [spread(hash_of(k)) for k in keys]
    if not _puts_never_treeify(spreads, DEFAULT_INITIAL_CAPACITY, TREEIFY_THRESHOLD - 1):
        if order_key is _AUTO:
            order_key = string_sort_key(keys) if all(isinstance(k, str) for k in keys) else _identity
        m = JavaHashMap(hash_of, order_key)
        for k in keys:
            m.compute_if_absent(k)
        if called_after_last:
            m.compute_if_absent(keys[-1])
        return m.keys()
    mask = _capacity_after(DEFAULT_INITIAL_CAPACITY, n if called_after_last else n - 1) - 1
    idx = sorted(range(n), key=lambda i: (spreads[i] & mask, -i))
    return [keys[i] for i in idx]


class JavaIntSet:
    """A ``java.util.HashSet<Integer>`` of non-negative ints (partitions): cheap operations, exact iteration order.

    Operations are recorded; :meth:`order` computes Java's iteration order when asked. Integer keys hash to
    themselves, so unless some bucket could have reached the treeify threshold (checked table size by table size
    for a set only added to; with removals, over every key ever added at the first, coarsest table size) the order
    is the live keys in last-insertion order, stably sorted by bucket of the final table (whose size follows from
    the peak size). Otherwise the recorded history is replayed through :class:`JavaHashMap`.
    """

    __slots__ = ("_init", "_ops", "_live", "_peak", "_order", "_removals", "_lo", "_hi")

    def __init__(self, initial_capacity: int | None = None):
        self._init = initial_capacity
        self._ops: list[int] = []          # p >= 0: add p; ~p (< 0): remove p
        self._live: dict[int, None] = {}   # insertion-ordered, like a bucket's list when nothing treeified
        self._peak = 0
        self._order: list[int] | None = None
        self._removals = 0
        self._lo = 1 << 62                 # smallest and largest key ever added
        self._hi = -1

    @classmethod
    def from_collection(cls, items: Iterable[int], jdk: int = DEFAULT_JDK) -> "JavaIntSet":
        """``new HashSet<>(items)``."""
        items = items if isinstance(items, list) else list(items)
        s = cls(hashset_copy_capacity(len(items), jdk))
        s.add_all(items)
        return s

    def copy(self, jdk: int = DEFAULT_JDK) -> "JavaIntSet":
        """``new HashSet<>(this)``: a fresh table filled in this set's iteration order."""
        return JavaIntSet.from_collection(self.order(), jdk)

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, p: int) -> bool:
        return p in self._live

    def __iter__(self) -> Iterator[int]:
        return iter(self.order())

    def unordered(self):
        """The keys in no particular order (cheap: no iteration order is computed)."""
        return self._live.keys()

    def __repr__(self) -> str:
        return f"JavaIntSet({self.order()})"

    def add(self, p: int) -> None:
        live = self._live
        if p in live:
            return
        live[p] = None
        self._ops.append(p)
        if len(live) > self._peak:
            self._peak = len(live)
        if p < self._lo:
            self._lo = p
        if p > self._hi:
            self._hi = p
        self._order = None

    def add_all(self, ps: Iterable[int]) -> None:
        """``add`` each of ``ps`` in order (C-level when all are new and distinct)."""
        ps = ps if isinstance(ps, list) else list(ps)
        if not ps:
            return
        fresh = dict.fromkeys(ps)
        live = self._live
        if len(fresh) == len(ps) and (not live or live.keys().isdisjoint(fresh)):
            live.update(fresh)
            self._ops.extend(ps)
            if len(live) > self._peak:
                self._peak = len(live)
            lo, hi = min(ps), max(ps)
            if lo < self._lo:
                self._lo = lo
            if hi > self._hi:
                self._hi = hi
            self._order = None
            return
        for p in ps:
            self.add(p)

    def remove(self, p: int) -> bool:
        if p not in self._live:
            return False
        del self._live[p]
        self._ops.append(~p)
        self._removals += 1
        self._order = None
        return True

    discard = remove

    def _first_table(self) -> int:
        return DEFAULT_INITIAL_CAPACITY if self._init is None else table_size_for(self._init)

    def _risky(self) -> bool:
        """Could some bucket ever have held 9 keys (treeifyBin)? Checked at the first table size."""
        ops = self._ops
        if len(ops) - self._removals <= TREEIFY_THRESHOLD:
            return False
        table = self._first_table()
        # Keys in a window of width w put at most ceil(w / table) in a bucket; within one 65536-block the spread
        # XORs the bucket with a constant (a permutation), so each block adds at most that much again.
        blocks = (self._hi >> 16) - (self._lo >> 16) + 1
        if blocks * -(-(self._hi - self._lo + 1) // table) <= TREEIFY_THRESHOLD:
            return False
        if not self._removals:  # adds only: follow the table through its sizes
            return not _puts_never_treeify([p ^ (p >> 16) for p in ops], table)
        mask = table - 1  # with removals: every key ever added, at the first (coarsest) table size
        ever = (p for p in ops if p >= 0)
        return max(Counter(((p ^ (p >> 16)) & mask) for p in ever).values()) > TREEIFY_THRESHOLD

    def order(self) -> list[int]:
        """The keys in Java's iteration order."""
        if self._order is not None:
            return self._order
        live = self._live
        if not live:
            self._order = []
        elif self._risky():
            m = JavaHashMap(_int_hash, _identity, self._init)
            for op in self._ops:
                if op >= 0:
                    m.put(op)
                else:
                    m.remove(~op)
            self._order = m.keys()
        else:
            mask = _capacity_after(self._first_table(), self._peak) - 1
            if self._hi <= mask:
                self._order = sorted(live)       # every key is its own bucket
            elif self._hi < 65536:
                self._order = sorted(live, key=mask.__and__)
            else:
                self._order = sorted(live, key=lambda p: (p ^ (p >> 16)) & mask)
        return self._order


def _int_hash(p: int) -> int:
    return int32(p)
