"""The `ast` helpers of `vllm_source_facts.py`: a parsed source file with parent links, a
lazily parsed corpus searched by text first, and the small readers every extractor uses.

Maintainer code, imported only by the vLLM facts scripts; never by the package.
"""

from __future__ import annotations

import ast

# --------------------------------------------------------------------------- ast helpers


class Src:
    """A parsed source file with parent links."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.text = text
        self.tree = ast.parse(text, filename=path)
        self.parent: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node

    def seg(self, node: ast.AST) -> str:
        s = ast.get_source_segment(self.text, node)
        return s if s is not None else ast.unparse(node)

    def enclosing(self, node: ast.AST, types) -> ast.AST | None:
        cur = self.parent.get(node)
        while cur is not None and not isinstance(cur, types):
            cur = self.parent.get(cur)
        return cur

    def qualname(self, node: ast.AST) -> str:
        names = []
        cur = node
        while cur is not None:
            if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.append(cur.name)
            cur = self.parent.get(cur)
        return ".".join(reversed(names)) or "<module>"


class Corpus:
    """Lazy ast parsing over a wheel's sources, searched by text first."""

    def __init__(self, sources: dict[str, str]):
        self.sources = sources
        self._parsed: dict[str, Src | None] = {}

    def get(self, path: str) -> Src | None:
        if path not in self._parsed:
            try:
                self._parsed[path] = Src(path, self.sources[path])
            except SyntaxError:
                self._parsed[path] = None
        return self._parsed[path]

    def grep(self, *needles: str) -> list[Src]:
        """Parsed files containing every needle, in path order."""
        out = []
        for path in sorted(self.sources):
            text = self.sources[path]
            if all(n in text for n in needles):
                src = self.get(path)
                if src is not None:
                    out.append(src)
        return out


def in_order(nodes):
    return sorted(nodes, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))


def str_const(node) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def message_of(src: Src, call: ast.AST) -> str | None:
    """The first argument of an exception/logger call as text (f-strings unparsed)."""
    if not isinstance(call, ast.Call) or not call.args:
        return None
    first = call.args[0]
    s = str_const(first)
    if s is not None:
        return s
    if isinstance(first, ast.JoinedStr):
        return ast.unparse(first)
    return src.seg(first)


def names_in(node: ast.AST) -> list[str]:
    """Attribute and Name identifiers used in an expression, in source order, deduped."""
    seen, out = set(), []
    for n in in_order([n for n in ast.walk(node) if isinstance(n, (ast.Attribute, ast.Name))]):
        ident = n.attr if isinstance(n, ast.Attribute) else n.id
        if ident not in seen:
            seen.add(ident)
            out.append(ident)
    return out


def raise_type(node: ast.Raise) -> str | None:
    exc = node.exc
    if isinstance(exc, ast.Call):
        exc = exc.func
    if isinstance(exc, ast.Name):
        return exc.id
    if isinstance(exc, ast.Attribute):
        return exc.attr
    return None


def is_logger_warning(call: ast.AST) -> bool:
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr.startswith("warn")
    )


# --------------------------------------------------------------------------- speculative config


def find_class(corpus: Corpus, name: str) -> tuple[Src, ast.ClassDef] | None:
    for src in corpus.grep(f"class {name}"):
        for node in ast.walk(src.tree):
            if isinstance(node, ast.ClassDef) and node.name == name:
                return src, node
    return None


def literal_values(src: Src, node: ast.AST, depth: int = 0) -> list[str]:
    """Flatten a Literal[...] (with nested Literal aliases defined in the same module)."""
    if depth > 10:
        return []
    if isinstance(node, ast.Name):
        for stmt in src.tree.body:
            if (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id == node.id
            ):
                return literal_values(src, stmt.value, depth + 1)
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and stmt.target.id == node.id
                and stmt.value is not None
            ):
                return literal_values(src, stmt.value, depth + 1)
        return []
    if isinstance(node, ast.Subscript):
        base = node.value
        base_name = base.id if isinstance(base, ast.Name) else getattr(base, "attr", None)
        if base_name != "Literal":
            return []
        elts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        out = []
        for e in elts:
            s = str_const(e)
            if s is not None:
                out.append(s)
            else:
                out.extend(literal_values(src, e, depth + 1))
        return out
    return []
