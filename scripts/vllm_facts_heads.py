"""What `vllm_source_facts.py` reads about drafter heads: the model registry (EAGLE-3 /
P-EAGLE head classes, the target architectures), the EAGLE-3 architecture rewrite, the
mask-token keys, the `mask_hidden` sizing rule and the speculators config types.

Maintainer code, imported only by `scripts/vllm_source_facts.py`; never by the package.
"""

from __future__ import annotations

import ast

from vllm_facts_ast import (
    Corpus,
    Src,
    find_class,
    in_order,
    message_of,
    names_in,
    str_const,
)

TARGET_ARCHITECTURES = [
    "GptOssForCausalLM",
    "Qwen3MoeForCausalLM",
    "Gemma4ForConditionalGeneration",
    "Gemma4ForCausalLM",
    "LlamaForCausalLM",
]
MASK_TOKEN_MARKERS = ("pard_token", "ptd_token_id")


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
