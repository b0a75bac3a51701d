"""What `vllm_source_facts.py` reads from vLLM's config classes beyond the speculative
config's fields: `--per-request-spec-decode-metrics` (`config/observability.py`), the
Literal values of the speculative-config fields and their defaults as written, the
settings vLLM calls lossy, the fields a docstring restricts to one model runner, and what
Model Runner V1 / V2 do not support (`config/vllm.py`).

Maintainer code, imported only by `scripts/vllm_source_facts.py`; never by the package.
"""

from __future__ import annotations

import ast
import re

from vllm_facts_ast import (
    Corpus,
    Src,
    find_class,
    in_order,
    is_logger_warning,
    literal_values,
    message_of,
    names_in,
    raise_type,
    str_const,
)

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


def _written_default(value: ast.AST | None) -> tuple[bool, object]:
    """(has a default, that default) of a dataclass field's right-hand side: a constant,
    or `field(default=CONSTANT)`; anything else (a factory, an expression) is no constant
    default we can state, so (False, None)."""
    if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "field":
        value = next((k.value for k in value.keywords if k.arg == "default"), None)
    if isinstance(value, ast.Constant):
        return True, value.value
    return False, None


def field_defaults_facts(corpus: Corpus) -> dict:
    """The default, as written in `SpeculativeConfig`, of each field `field_values_facts`
    lists (the Literal-typed ones): field -> {'default', 'path', 'line'}. A field the
    version does not have is absent; one without a constant default is left out too (a
    consumer must not mistake "unknown" for a value)."""
    found = find_class(corpus, "SpeculativeConfig")
    if found is None:
        return {}
    src, cls = found
    typed = field_values_facts(corpus)
    out = {}
    for stmt in cls.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        if stmt.target.id not in typed:
            continue
        has, default = _written_default(stmt.value)
        if has:
            out[stmt.target.id] = {"default": default, "path": src.path, "line": stmt.lineno}
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
