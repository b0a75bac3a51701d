"""Heads, differentially: peagle's `drafter check` verdict equals what the real engine does.

Each head (built by `peagle_sandbox/vllm_engine/heads.py`; one property varied from
the aligned P-EAGLE head) is judged twice:

- peagle: `check_drafter` + `check_drafter_loading` on `inspect_local(dir)` with
  vllm_version=<engine>, mode="p-eagle", K=3, target hidden 256, vocab 512, 4 layers
  (what `peagle drafter check DIR --vllm-version V --mode p-eagle --target-hidden-size
  256 --target-vocab-size 512 --target-layers 4` prints);
- the engine: tiny-llama + that head with `parallel_drafting: true`, K=3, real weights
  (never `load_format=dummy`, which skips the `mask_hidden` check), enforce_eager, greedy,
  2 prompts x 24 tokens; all heads in ONE engine process (`offline_runs`), the issue-25
  classes (`head_classes.py`, judged by test_head_classes.py) included.

peagle "fail" <=> the engine fails to start or serve. For a failure, both must name the
same property (the regexes of `HEADS`, searched in peagle's failing checks and in the
engine's exception + traceback). Where peagle only warns (draft vocab 128 without `d2t`)
the engine starts, and the measured acceptance collapse vs the same head with `d2t` is
asserted (aligned pair: with `d2t` every greedy draft is accepted by design).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.conformance import head_classes
from tests.conformance.engine_proc import run_engine_module

_MASK_KEYS = r"ptd_token_id|pard_token|mask_token_id"
# head dir (under models/) -> regexes the failure must name on BOTH sides (empty: starts)
HEADS: dict[str, list[str]] = {
    "p-eagle-aligned": [],  # LlamaForCausalLMEagle3, the control
    "eagle3-aligned": [_MASK_KEYS],  # an EAGLE-3 head: no mask token, no mask_hidden
    "variants/no-mask-token-key": [_MASK_KEYS],
    "variants/mask-token-pard": [],
    "variants/mask-token-top-level": [],  # top-level mask_token_id (vLLM >= 0.28)
    "variants/mask-token-dflash": [],  # dflash_config.mask_token_id (vLLM >= 0.20)
    "variants/no-mask-hidden": ["mask_hidden"],
    "variants/mask-hidden-wrong-size": ["mask_hidden", "512", "768"],
    "variants/fc-wrong-width": [r"256, 512\]", r"256, 768\]"],
    "variants/aux-layers-2-fc-768": ["mask_hidden", "512", "768"],
    "variants/arch-llama": [],  # LlamaForCausalLM -> Eagle3LlamaForCausalLM
    "variants/arch-peagle-plain": ["Eagle3PEagleDraftModel"],
    "variants/speculators-mask-token-id": [],
    "variants/speculators-no-mask-token-id": ["mask_token_id"],
    "variants/draft-vocab-128": [],
    "variants/draft-vocab-128-no-d2t": [],  # peagle warns; acceptance collapses
    "variants/full-draft-vocab": [],
    "variants/no-config-json": [r"config\.json"],
    "variants/sharded-3": [],
    "variants/fp32-weights": [],
}
PROMPTS = ["user: how many tokens does the drafter propose?\nassistant:", "the verifier"]


def _peagle(path: Path, version: str) -> tuple[str, str, list[Any]]:
    checks = head_classes.peagle_checks(path, version)
    fails = [f"{c.name}: {c.message}" for c in checks if c.status == "fail"]
    return ("fail" if fails else "starts"), " | ".join(fails), checks


# The silent heads and their control load their drafter poisoned (uninitialised memory is
# NaN, see offline_runs): otherwise a parameter no tensor supplied holds whatever the
# allocator returned, and a zero-paged extra layer passes its input through; CI's run at
# 74f3b0d served layers-2-weights-1 at 100% that way, where this machine's collapsed.
POISONED = {n for n, c in head_classes.CLASSES.items() if c.behaviour == head_classes.SILENT}
POISONED.add("relay")


def _run(engine: Any, run_id: str, head: Path) -> dict[str, Any]:
    return {
        "poison_uninitialized": run_id in POISONED,
        "id": run_id,
        "model": str(engine.models / "tiny-llama"),
        "speculative_config": {
            "model": str(head),
            "method": "eagle3",
            "num_speculative_tokens": 3,
            "parallel_drafting": True,
        },
        "prompts": PROMPTS,
        "temperature": 0.0,
        "max_tokens": 24,
        "max_model_len": 512,
    }


@pytest.fixture(scope="module")
def engine_runs(engine, class_heads, tmp_path_factory) -> dict[str, dict[str, Any]]:
    """One engine process for every head of this module, issue 25's included. The
    heads that fail on their first request go last: the engine survives their failed
    generate (measured), and the runs before them are safe whatever happens."""
    last = head_classes.FIRST_REQUEST_HEADS
    runs = [_run(engine, head, engine.models / head) for head in HEADS]
    runs += [_run(engine, name, p) for name, p in class_heads.items() if name not in last]
    runs += [_run(engine, name, class_heads[name]) for name in last]
    logs = tmp_path_factory.mktemp("heads")
    out = run_engine_module(
        engine,
        "peagle_sandbox.vllm_engine.offline_runs",
        {"log_dir": str(logs), "runs": runs},
        stderr_path=logs / "offline_runs.stderr",
    )
    return {r["id"]: r for r in out["results"]}


_engine_text = head_classes.engine_text


@pytest.mark.parametrize("head", list(HEADS))
def test_peagle_verdict_equals_engine(engine, engine_runs, head) -> None:
    verdict, said, _ = _peagle(engine.models / head, engine.version)
    r = engine_runs[head]
    served = r["ok"] and all(len(x) == 24 for x in r["token_ids"])
    actual = "starts" if served else "fail"
    assert verdict == actual, (
        f"{head}: peagle says {verdict!r} ({said or 'no failing check'}) but vLLM "
        f"{engine.version} {'starts and serves' if served else 'fails: ' + str(r['error'])}"
    )
    want = HEADS[head]
    assert bool(want) == (actual == "fail"), f"{head}: HEADS table expects the other outcome"
    text = _engine_text(r)
    for pattern in want:
        assert re.search(pattern, said), (
            f"{head}: the engine's error names {pattern!r} but peagle's does not: {said}"
        )
        assert re.search(pattern, text), (
            f"{head}: peagle names {pattern!r} but the engine's error does not: {r['error']}"
        )


def test_small_draft_vocab_without_d2t_warns_and_collapses(engine, engine_runs) -> None:
    with_d2t = engine_runs["variants/draft-vocab-128"]["spec"]
    without = engine_runs["variants/draft-vocab-128-no-d2t"]["spec"]
    rate = {
        k: s["num_accepted_tokens"] / s["num_draft_tokens"]
        for k, s in (("with", with_d2t), ("without", without))
    }
    print(
        f"\ndraft vocab 128: acceptance with d2t {rate['with']:.1%}, without {rate['without']:.1%}"
    )
    _, _, checks = _peagle(engine.models / "variants/draft-vocab-128-no-d2t", engine.version)
    vocab = next(c for c in checks if c.name == "drafter.vocab")
    assert vocab.status == "warn" and "d2t" in vocab.message, (
        f"peagle does not warn about the missing d2t: {vocab}"
    )
    assert rate["with"] >= 0.9, (
        f"aligned head with d2t accepts only {rate['with']:.1%} ({with_d2t})"
    )
    assert rate["without"] <= 0.1, (
        f"no d2t, yet acceptance {rate['without']:.1%} did not collapse ({without}): "
        "peagle's warning would be unfounded"
    )


# -- issue 25: the head classes peagle's first pass did not see ---------------------------
CLASS_CASES = head_classes.CLASSES


def _class_run(engine_runs: dict[str, dict[str, Any]], name: str) -> tuple[str, dict[str, Any]]:
    r = engine_runs[name]
    return head_classes.engine_behaviour(r, 24), r


# oneDNN's linear (vLLM's CPU path on a host without AMX tiles, e.g. AMD Zen 4) reports a
# width mismatch as a flat size: "shape '[-1, 768]' is invalid for input of size 14336",
# rows x the width it got (28 x 512). It names the width it expected (768) as written, and
# the width it got as the factor of that size which the expected width does not divide.
_FLAT = re.compile(r"shape '\[-1, (\d+)\]' is invalid for input of size (\d+)")


def _flat_size_names(pattern: str, text: str) -> bool:
    """Whether `text` holds a oneDNN flat-size error whose input is a whole number of rows
    of the width `pattern` names (a bare number), and not of the width expected."""
    width = re.fullmatch(r"\\b(\d+)\\b", pattern)
    if not width:
        return False
    got = int(width.group(1))
    return any(
        int(size) % got == 0 and int(size) % int(expected) != 0
        for expected, size in _FLAT.findall(text)
    )


@pytest.mark.parametrize("name", [n for n, c in CLASS_CASES.items() if c.behaviour != "silent"])
def test_class_verdict_equals_engine(engine, engine_runs, class_heads, name) -> None:
    """Refused at start, failing on the first request, or served: the engine's run says
    which; peagle fails exactly the heads the engine does not serve, in the check the
    table names, saying what vLLM does, and names what the engine's error names."""
    case = CLASS_CASES[name]
    actual, r = _class_run(engine_runs, name)
    assert actual == case.behaviour, (
        f"{name}: the table expects vLLM {engine.version} to {case.behaviour!r}, it did "
        f"{actual!r}: {r['error']}"
    )
    checks = head_classes.peagle_checks(class_heads[name], engine.version)
    fails = [c for c in checks if c.status == "fail"]
    if actual == head_classes.SERVES:
        assert not fails, f"{name}: vLLM serves it, peagle fails {[c.message for c in fails]}"
        loading = [c for c in checks if c.name in LOADING and c.status != "pass"]
        assert not loading, f"{name}: {[(c.name, c.message) for c in loading]}"
        return
    named = [c for c in fails if c.name == case.check]
    assert named, f"{name}: peagle does not fail {case.check}: {[c.name for c in fails]}"
    said = named[0].message
    assert head_classes.PHRASE[actual] in said, f"{name}: does not say what vLLM does: {said}"
    text = head_classes.engine_text(r)
    for pattern in case.both:
        assert re.search(pattern, said), f"{name}: engine names {pattern!r}, peagle not: {said}"
        assert re.search(pattern, text) or _flat_size_names(pattern, text), (
            f"{name}: peagle names {pattern!r}, engine not: {text[-800:]}"
        )
    assert named[0].fix, f"{name}: no fix"
    for pattern in case.peagle:  # the config key, the value: in the message or its fix
        assert re.search(pattern, f"{said} -> {named[0].fix}"), f"{name}: no {pattern!r}: {said}"


LOADING = (
    "drafter.dtypes",
    "drafter.config_keys",
    "drafter.tensor_names",
    "drafter.tensor_shapes",
    "drafter.token_ids",
    "drafter.aux_layers",
    "drafter.unloaded",
    "drafter.borrowed",
)


@pytest.mark.parametrize("name", [n for n, c in CLASS_CASES.items() if c.behaviour == "silent"])
def test_silent_partial_load_warns_and_acceptance_collapses(
    engine, engine_runs, class_heads, name
) -> None:
    """The engine serves the head; its greedy acceptance on the aligned target collapses
    against `relay` (the same head, whole), which drafts what the target accepts. Both load
    their drafter with uninitialised memory poisoned (NaN), so the collapse shows the head
    runs on something its checkpoint did not write, the same way on every machine, and the
    control shows the poison alone collapses nothing. peagle warns in the named check,
    saying vLLM loads it silently wrong; --strict fails it."""
    case = CLASS_CASES[name]
    actual, r = _class_run(engine_runs, name)
    control = engine_runs["relay"]
    assert actual == head_classes.SERVES, (
        f"{name}: vLLM {engine.version} did not serve it: {r['error']}"
    )
    assert control["ok"], f"relay: vLLM {engine.version} did not serve it: {control['error']}"
    assert r["poisoned_loads"] == control["poisoned_loads"] == 1, (
        f"{name}: the drafter did not load through the poisoned get_model "
        f"({r['poisoned_loads']}, relay {control['poisoned_loads']}): vLLM moved it"
    )
    # The poison took, and only where no tensor was written: no module of the whole head
    # outputs NaN, and the head missing its second layer has that layer (model.layers.1)
    # output NaN.
    assert control["nan_outputs"] == [], control["nan_outputs"]
    if case.check == "drafter.unloaded":
        assert any(n.startswith("model.layers.1.") for n in r["nan_outputs"]), r["nan_outputs"]
    rate, base = head_classes.acceptance(r), head_classes.acceptance(control)
    print(
        f"\n{name}: acceptance {rate:.1%} (relay, whole: {base:.1%}); poisoned, NaN out of: "
        f"{', '.join(r['nan_outputs'] or []) or 'nothing'}"
    )
    assert base >= 0.9, (
        f"relay accepts only {base:.1%}: no baseline to collapse from ({control['spec']})"
    )
    assert rate <= 0.1, (
        f"{name}: acceptance {rate:.1%} did not collapse ({r['spec']}): peagle's warning "
        "would be unfounded"
    )
    checks = head_classes.peagle_checks(class_heads[name], engine.version)
    assert not [c for c in checks if c.status == "fail"], f"{name}: vLLM starts it"
    warned = next(c for c in checks if c.name == case.check)
    assert warned.status == "warn", f"{name}: {case.check} is {warned.status}: {warned.message}"
    assert head_classes.PHRASE[head_classes.SILENT] in warned.message, warned.message
    shown = f"{warned.message} -> {warned.fix}"
    for pattern in case.peagle:
        assert re.search(pattern, shown), f"{name}: {pattern!r} missing: {shown}"
    strict = head_classes.peagle_checks(class_heads[name], engine.version, strict=True)
    assert next(c for c in strict if c.name == case.check).status == "fail"


def test_pickled_weights_load_in_vllm_and_peagle_refuses_them_saying_so(
    engine, engine_runs, class_heads
) -> None:
    """pytorch_model.bin: vLLM loads and serves it (the aligned head: full acceptance);
    peagle refuses pickled weights by policy, and its message says vLLM would load them."""
    actual, r = _class_run(engine_runs, head_classes.PICKLED)
    assert actual == head_classes.SERVES, r["error"]
    assert head_classes.acceptance(r) >= 0.9, r["spec"]
    checks = head_classes.peagle_checks(class_heads[head_classes.PICKLED], engine.version)
    weights = next(c for c in checks if c.name == "drafter.weights")
    assert weights.status == "fail"
    assert (
        "pytorch_model.bin" in weights.message
        and f"vLLM {engine.version} would load" in weights.message
    )
    assert "unpickling runs code" in weights.message and "safetensors" in weights.fix


def test_the_synthetic_head_loads_and_serves(engine, engine_runs) -> None:
    """peagle's own generator (`peagle_sandbox.synthetic_head`, what the sandbox and the
    lifecycle tests deploy): the real engine starts it and serves every token asked."""
    r = engine_runs["synthetic"]
    assert r["ok"], r["error"]
    assert [len(x) for x in r["token_ids"]] == [24] * len(PROMPTS)
    assert r["spec"] and r["spec"]["num_drafts"] > 0, "the head drafted nothing"
