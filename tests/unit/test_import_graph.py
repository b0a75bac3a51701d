"""The layering the README promises, read from the source (AST only, nothing imported).

Edges are every import a module can execute: module-level and function-level `import` /
`from … import`, `importlib.import_module("…")` / `__import__("…")` with a literal name,
and the lazy-attribute tables (`_LAZY = {...}` passed to `lazy_getattr`). Only
`if TYPE_CHECKING:` blocks are skipped: they never run. `from pkg import name` resolves
to `pkg.name` when that is a module, to the module a lazy table maps `name` to when `pkg`
has one, and to `pkg` otherwise.

Two graphs are checked:
- cycles: over those edges. A package's implicit import by its own submodules is left
  out: every lazy `__init__` maps to its submodules, so counting it would make each lazy
  package a cycle by construction.
- what `planning/` can reach: the same edges plus, for each module reached, the eager
  imports of its parent packages' `__init__` (Python runs them on the way in). The lazy
  tables of those parents are not followed, since they run only when an attribute is
  read from the package, which is an explicit edge of its own.
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PACKAGE = "sm_peagle"
ROOT = Path(__file__).resolve().parents[2] / PACKAGE

HEAVY = frozenset({"boto3", "botocore", "rich"})
PURE = f"{PACKAGE}.planning"
PURE_MAY_NOT_IMPORT = tuple(
    f"{PACKAGE}.{p}" for p in ("lifecycle", "sandbox", "runtime", "bench", "cli")
)

# Modules allowed to break a rule, each with the reason. Keep these short and honest.
ALLOWED_CYCLES: dict[frozenset[str], str] = {}
ALLOWED_HEAVY_FROM_PURE: dict[str, str] = {}
# planning/aws_shapes.py is not an exception: it locates botocore's service-2.json with
# importlib.util.find_spec("botocore"), which finds a top-level package without running
# it, and reads the file as data. find_spec is not an import, so it is no edge here.


@dataclass
class Graph:
    edges: dict[str, set[str]] = field(default_factory=dict)  # internal module -> modules
    external: dict[str, set[str]] = field(default_factory=dict)  # module -> top-level names
    lazy: dict[str, dict[str, str]] = field(default_factory=dict)  # package -> name -> module
    packages: set[str] = field(default_factory=set)


def module_name(path: Path, root: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_pkg else parts), is_pkg


def _type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _walk(node: ast.AST) -> Iterable[ast.AST]:
    """ast.walk without the bodies of `if TYPE_CHECKING:`."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        for child in ast.iter_child_nodes(n):
            if isinstance(child, ast.If) and _type_checking(child):
                todo.extend(child.orelse)
                continue
            todo.append(child)


def _lazy_table(tree: ast.Module) -> dict[str, str] | None:
    """The dict literal a module passes to `lazy_getattr(__name__, TABLE)`, if any."""
    tables: dict[str, dict[str, str]] = {}
    used: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    with contextlib.suppress(ValueError):
                        tables[target.id] = ast.literal_eval(node.value)
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name == "lazy_getattr" and len(node.args) == 2:
                arg = node.args[1]
                if isinstance(arg, ast.Name):
                    used.append(arg.id)
    if not used:
        return None
    out: dict[str, str] = {}
    for name in used:
        out.update(tables.get(name, {}))
    return out


def _raw_imports(tree: ast.Module, module: str, is_pkg: bool) -> list[tuple[str, str | None]]:
    """(absolute module, imported name or None) for every import the module can run."""
    package = module if is_pkg else module.rpartition(".")[0]
    out: list[tuple[str, str | None]] = []
    for node in _walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            out += [(target, a.name) for a in node.names]
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name not in ("import_module", "__import__") or not node.args:
                continue
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue
            text = first.value
            if text.startswith("."):
                level = len(text) - len(text.lstrip("."))
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - level + 1])
                text = f"{base}.{text.lstrip('.')}" if text.strip(".") else base
            out.append((text, None))
    return out


def build_graph(sources: Mapping[str, tuple[str, bool]]) -> Graph:
    """sources: module name -> (source text, is_package)."""
    g = Graph()
    trees = {m: ast.parse(text) for m, (text, _) in sources.items()}
    g.packages = {m for m, (_, is_pkg) in sources.items() if is_pkg}
    for m, tree in trees.items():
        table = _lazy_table(tree)
        if table is not None:
            g.lazy[m] = {name: f"{m}.{sub}" for name, sub in table.items()}
    known = set(sources)

    def nearest(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    for m, tree in trees.items():
        edges = g.edges.setdefault(m, set())
        ext = g.external.setdefault(m, set())
        for target, name in _raw_imports(tree, m, sources[m][1]):
            root = target.split(".")[0]
            if root != PACKAGE:
                ext.add(root)
                continue
            if name is not None and f"{target}.{name}" in known:
                edges.add(f"{target}.{name}")
            elif name is not None and name in g.lazy.get(target, {}):
                edges.add(g.lazy[target][name])
            elif (hit := nearest(target)) is not None:
                edges.add(hit)
        edges.update(g.lazy.get(m, {}).values())
        edges.discard(m)
    return g


def find_cycles(edges: Mapping[str, Iterable[str]]) -> list[frozenset[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[frozenset[str]] = []
    counter = 0
    for start in edges:
        if start in index:
            continue
        work = [(start, iter(edges.get(start, ())))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges.get(child, ()))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    scc = set()
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        scc.add(top)
                        if top == node:
                            break
                    if len(scc) > 1:
                        cycles.append(frozenset(scc))
    return cycles


def reachable(g: Graph, starts: Iterable[str]) -> dict[str, str]:
    """module -> the module it was first reached from (with parents' eager imports)."""
    seen: dict[str, str] = {s: s for s in starts}
    todo = list(seen)
    while todo:
        m = todo.pop()
        nexts = set(g.edges.get(m, ()))
        parts = m.split(".")
        for i in range(1, len(parts)):  # parent packages' __init__, eager imports only
            parent = ".".join(parts[:i])
            lazy_targets = set(g.lazy.get(parent, {}).values())
            nexts.add(parent)
            nexts |= set(g.edges.get(parent, ())) - lazy_targets
        if m in g.lazy:  # reached as a package: its own lazy table is not run either
            nexts -= set(g.lazy[m].values()) - _eager_edges(g, m)
        for n in nexts:
            if n not in seen:
                seen[n] = m
                todo.append(n)
    return seen


def _eager_edges(g: Graph, m: str) -> set[str]:
    return g.edges.get(m, set()) - set(g.lazy.get(m, {}).values())


def path_to(seen: Mapping[str, str], m: str) -> list[str]:
    out = [m]
    while seen[out[-1]] != out[-1]:
        out.append(seen[out[-1]])
    return out[::-1]


def package_sources(root: Path = ROOT) -> dict[str, tuple[str, bool]]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        name, is_pkg = module_name(path, root)
        out[name] = (path.read_text(), is_pkg)
    return out


@pytest.fixture(scope="module")
def graph() -> Graph:
    return build_graph(package_sources())


# -- the rules ------------------------------------------------------------------------


def test_no_import_cycles(graph: Graph) -> None:
    cycles = [c for c in find_cycles(graph.edges) if c not in ALLOWED_CYCLES]
    assert not cycles, [sorted(c) for c in cycles]


def test_planning_reaches_no_boto3_botocore_or_rich(graph: Graph) -> None:
    starts = [m for m in graph.edges if m == PURE or m.startswith(PURE + ".")]
    assert len(starts) > 5, starts
    seen = reachable(graph, starts)
    bad = {
        m: sorted(graph.external.get(m, set()) & HEAVY)
        for m in seen
        if graph.external.get(m, set()) & HEAVY and m not in ALLOWED_HEAVY_FROM_PURE
    }
    assert not bad, {m: (names, " -> ".join(path_to(seen, m))) for m, names in bad.items()}


def test_planning_imports_nothing_from_the_layers_above(graph: Graph) -> None:
    starts = [m for m in graph.edges if m == PURE or m.startswith(PURE + ".")]
    seen = reachable(graph, starts)
    bad = [m for m in seen if m.startswith(PURE_MAY_NOT_IMPORT)]
    assert not bad, {m: " -> ".join(path_to(seen, m)) for m in bad}


def test_no_module_shadows_a_public_function() -> None:
    for name in ("plan", "deploy"):
        assert not (ROOT / f"{name}.py").exists()
        assert not (ROOT / name).is_dir()


# -- the checker can fail ---------------------------------------------------------------


def test_cycle_finder_finds_a_planted_cycle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert find_cycles(edges) == [frozenset({"a", "b", "c"})]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_graph_sees_function_level_lazy_and_string_imports() -> None:
    sources = {
        "sm_peagle": (
            'from ._lazy import lazy_getattr\n_LAZY = {"f": "x.y"}\n'
            "__getattr__ = lazy_getattr(__name__, _LAZY)\n",
            True,
        ),
        "sm_peagle._lazy": ("", False),
        "sm_peagle.x": ("", True),
        "sm_peagle.x.y": ("def f():\n    import boto3\n    from .. import z\n", False),
        "sm_peagle.z": (
            "import importlib\nfrom typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    import rich\n"
            "def g():\n    importlib.import_module('sm_peagle.w')\n",
            False,
        ),
        "sm_peagle.w": ("from sm_peagle import f\n", False),
    }
    g = build_graph(sources)
    assert g.edges["sm_peagle"] == {"sm_peagle._lazy", "sm_peagle.x.y"}
    assert g.edges["sm_peagle.x.y"] == {"sm_peagle.z"}
    assert g.external["sm_peagle.x.y"] == {"boto3"}
    assert g.edges["sm_peagle.z"] == {"sm_peagle.w"}
    assert "rich" not in g.external["sm_peagle.z"]  # TYPE_CHECKING never runs
    assert g.edges["sm_peagle.w"] == {"sm_peagle.x.y"}  # through the lazy table
    assert find_cycles(g.edges) == [frozenset({"sm_peagle.x.y", "sm_peagle.z", "sm_peagle.w"})]
    assert "sm_peagle.x.y" in reachable(g, ["sm_peagle.w"])
