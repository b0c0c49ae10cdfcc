"""The layer rules of docs/architecture.md, checked on the source (every import, including those inside functions).

* Which of our packages may import which (``ALLOWED``): the sans-IO cores (``protocol``, ``coordinator``,
  ``consumer``) import only inward; the I/O packages (``broker``, ``client``) sit around them; ``kgroup`` is on
  top and nothing imports it.
* The sans-IO modules do no I/O: no event loop, sockets, threads, subprocesses, signals, clocks or files
  (``FORBIDDEN_IN_CORE`` and the ``open`` builtin). Time is passed in as ``now_ms``.
* No import cycles between modules.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("protocol", "coordinator", "consumer", "broker", "client", "scenarios", "analysis", "kgroup")

#: package -> the packages of ours it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "protocol": set(),
    "coordinator": {"protocol"},
    "consumer": {"protocol"},
    "broker": {"protocol", "coordinator"},
    "client": {"protocol", "consumer"},
    "scenarios": {"protocol", "coordinator", "consumer", "broker"},
    "analysis": {"protocol", "coordinator", "scenarios"},
    "kgroup": {"protocol", "coordinator", "consumer", "broker", "client", "scenarios", "analysis"},
}

CORE_PACKAGES = ("protocol", "coordinator", "consumer")

#: broker modules without I/O, which the simulator may run (the same broker rules as the TCP server)
SANS_IO_BROKER_MODULES: set[str] = {"broker.admin", "broker.apis", "broker.batchlog", "broker.datapath",
                                    "broker.faultrules"}

#: standard-library modules a sans-IO module must not import (I/O, concurrency, clocks)
FORBIDDEN_IN_CORE = {"asyncio", "socket", "selectors", "ssl", "threading", "subprocess", "multiprocessing",
                     "concurrent", "signal", "time", "datetime", "os", "shutil", "tempfile", "io", "pathlib",
                     "http", "urllib"}


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            out[_module_name(path)] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> list[tuple[str, int]]:
    """(imported module, line) for every import statement in the file, relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    is_pkg = path.name == "__init__.py"
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[:len(base) - node.level + (1 if is_pkg else 0)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            subs = [f"{mod}.{a.name}" for a in node.names if f"{mod}.{a.name}" in MODULES]
            # "from pkg import submodule" depends on the submodule, not on the package's __init__ (whose
            # implicit execution on every import is not a dependency of the importer)
            out += [(m, node.lineno) for m in subs] if len(subs) == len(node.names) else [(mod, node.lineno)] + \
                [(m, node.lineno) for m in subs]
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _ours(mod: str) -> str | None:
    top = mod.split(".")[0]
    return top if top in PACKAGES else None


def test_every_package_imports_only_what_its_layer_allows():
    bad = []
    for name, imports in GRAPH.items():
        pkg = name.split(".")[0]
        for mod, line in imports:
            other = _ours(mod)
            if other is None or other == pkg:
                continue
            if other not in ALLOWED[pkg]:
                bad.append(f"{MODULES[name].relative_to(ROOT)}:{line} imports {mod} ({pkg} may import "
                           f"{sorted(ALLOWED[pkg]) or 'nothing of ours'})")
            elif pkg == "scenarios" and other == "broker" and _owner(mod) not in SANS_IO_BROKER_MODULES:
                bad.append(f"{MODULES[name].relative_to(ROOT)}:{line} imports {mod}: the simulator may use only "
                           f"the sans-IO broker modules {sorted(SANS_IO_BROKER_MODULES)}")
    assert not bad, "\n".join(bad)


def _owner(mod: str) -> str:
    while mod and mod not in MODULES:
        mod = mod.rpartition(".")[0]
    return mod


def test_nothing_imports_kgroup():
    bad = [f"{MODULES[name].relative_to(ROOT)}:{line} imports {mod}"
           for name, imports in GRAPH.items() if not name.startswith("kgroup")
           for mod, line in imports if _ours(mod) == "kgroup"]
    assert not bad, "\n".join(bad)


def _sans_io_modules() -> list[str]:
    return sorted(n for n in MODULES if n.split(".")[0] in CORE_PACKAGES) + sorted(SANS_IO_BROKER_MODULES)


@pytest.mark.parametrize("name", _sans_io_modules())
def test_sans_io_modules_do_no_io(name):
    path = MODULES[name]
    bad = [f"line {line}: imports {mod}" for mod, line in GRAPH[name] if mod.split(".")[0] in FORBIDDEN_IN_CORE]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bad += [f"line {n.lineno}: calls open()" for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "open"]
    assert not bad, f"{path.relative_to(ROOT)} is sans-IO but " + "; ".join(bad)


def test_no_import_cycles():
    """Tarjan's strongly connected components over the module graph; any component of two or more is a cycle."""
    edges = {name: sorted({_owner(m) for m, _ in imports if _owner(m) and _owner(m) != name})
             for name, imports in GRAPH.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_rules_see_the_whole_tree():
    """The checks above are only as good as the module list: every package is found and non-trivial."""
    for pkg in ("protocol", "coordinator", "consumer", "broker", "client", "kgroup"):
        assert any(n == pkg or n.startswith(pkg + ".") for n in MODULES), pkg
    assert len(MODULES) > 60
