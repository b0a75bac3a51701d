"""Configs: vLLM's own `vllm serve` parser and `create_engine_config()` judge what peagle emits.

Every catalog model x mode x K (config_cases.case_ids) is planned for the engine's vLLM
version, turned into argv by the container entrypoint, pointed at the tiny models with
only the CPU/tiny overrides of `config_cases.CPU_OVERRIDES`, and judged in ONE engine
process (`peagle_sandbox.vllm_engine.validate_args`): all must be accepted, and
peagle's entrypoint must accept the same speculative config. Then the bad-config table
(`config_cases.BAD`): peagle refuses each (entrypoint, and `plan` where a spec can
express it) naming a field, and vLLM refuses it naming the same field; the two rows
that only the engine's start-up catches are started for real (`offline_runs`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from sm_peagle.container.entrypoint import Fatal, validate_speculative_config
from sm_peagle.errors import SpecError
from sm_peagle.planning.build import plan
from sm_peagle.planning.spec.options import spec_from_options
from sm_peagle.vllm.versions import VllmVersion
from tests.conformance import config_cases as cc
from tests.conformance.engine_proc import AMX_TILES, run_engine_module

GOOD = cc.case_ids()
VALIDATOR = "peagle_sandbox.vllm_engine.validate_args"


def _gid(case: tuple[str, str, int | None]) -> str:
    alias, mode, k = case
    return f"{alias}-{mode}" + (f"-k{k}" if k else "")


@pytest.fixture(scope="module")
def judged(engine, tmp_path_factory) -> dict[str, Any]:
    """Plan every case, then judge all argv (good and bad) in one engine process."""
    good: dict[str, dict[str, Any]] = {}
    for case in GOOD:
        p = cc.plan_for(*case, engine.version)
        argv, applied = cc.engine_argv(p, engine.models, case[1])
        good[_gid(case)] = {"plan": p, "argv": argv, "applied": applied}
    base = good[_gid(("gpt-oss-20b", "p-eagle", 3))]["argv"]
    i = base.index("--speculative-config")
    head = engine.models / "p-eagle-aligned"
    bad = {
        name: [*base[: i + 1], cc.bad_raw(row[0], head), *base[i + 2 :]]
        for name, row in cc.BAD.items()
    }
    cases = [{"id": f"good:{k}", "argv": v["argv"]} for k, v in good.items()]
    cases += [{"id": f"bad:{k}", "argv": v} for k, v in bad.items()]
    log = tmp_path_factory.mktemp("configs") / "validate_args.stderr"
    out = run_engine_module(engine, VALIDATOR, cases, timeout=600, stderr_path=log)
    verdicts = {r["id"]: r for r in out["results"]}
    print(f"\nvLLM {out['vllm_version']} judged {len(cases)} argv ({len(good)} planned)")
    return {"good": good, "bad": bad, "verdicts": verdicts, "head": head}


@pytest.mark.parametrize("case", GOOD, ids=_gid)
def test_planned_config_is_accepted_by_vllm(judged, engine, case) -> None:
    g = judged["good"][_gid(case)]
    p = g["plan"]
    assert p.vllm_version == str(VllmVersion(engine.version)), (
        f"plan targets vLLM {p.vllm_version}, the engine is {engine.version}"
    )
    fails = [f"{c.name}: {c.message}" for c in p.checks if c.status == "fail"]
    assert not fails, f"peagle's plan refuses {_gid(case)}: {fails}"
    v = judged["verdicts"][f"good:{_gid(case)}"]
    assert v["ok"], (
        f"vLLM {engine.version} refuses peagle's {_gid(case)} at {v['stage']}: {v['error']}\n"
        f"argv: {g['argv']}\noverrides: {g['applied']}"
    )
    if "--speculative-config" in g["argv"]:
        raw = g["argv"][g["argv"].index("--speculative-config") + 1]
        try:
            validate_speculative_config(raw, None, version=VllmVersion(engine.version), target_tp=1)
        except Fatal as e:
            pytest.fail(f"vLLM accepts {raw} but peagle's entrypoint refuses it: {e.what}")


def test_overrides_are_only_the_cpu_table(judged) -> None:
    used = sorted({a for g in judged["good"].values() for a in g["applied"]})
    table = "\n".join(f"  {k}: {v}" for k, v in cc.CPU_OVERRIDES.items())
    print(f"\nCPU/tiny overrides (used: {used}):\n{table}")
    assert set(used) <= set(cc.CPU_OVERRIDES)


def _plan_refusal(fields: dict[str, Any], version: str) -> str:
    """What `plan` says about a p-eagle spec with `fields` (empty if it accepts it)."""
    base = {"model": "gpt-oss-20b", "speculative": {"mode": "p-eagle", **fields}}
    try:
        p = plan(spec_from_options("gpt-oss-20b", base=base, vllm_version=version))
    except (SpecError, ValueError) as e:
        return str(e)
    return " | ".join(f"{c.name}: {c.message}" for c in p.checks if c.status == "fail")


@pytest.mark.parametrize("name", list(cc.BAD))
def test_bad_config_refused_by_both(judged, engine, name) -> None:
    config, peagle_says, vllm_says, when, spec_fields, note = cc.BAD[name]
    raw = cc.bad_raw(config, judged["head"])
    try:
        validate_speculative_config(raw, None, version=VllmVersion(engine.version), target_tp=1)
        refusal = ""
    except Fatal as e:
        refusal = f"{e.what} (fix: {e.fix})"
    assert refusal, f"peagle's entrypoint accepts bad config {name}: {raw}"
    assert re.search(peagle_says, refusal), f"peagle refuses {name} but names {refusal!r}"
    if spec_fields is not None:
        said = _plan_refusal(spec_fields, engine.version)
        assert said, f"peagle's plan accepts {name} ({spec_fields})"
        field = next(iter(spec_fields))
        assert field in said, f"plan refuses {name} but does not name {field}: {said}"
    v = judged["verdicts"][f"bad:{name}"]
    if when == "config":
        assert not v["ok"], f"vLLM {engine.version} ACCEPTS {name} that peagle refuses: {raw}"
        assert re.search(vllm_says, v["error"]), (
            f"{name}: peagle names {peagle_says!r} but vLLM's error ({v['stage']}) does not "
            f"match {vllm_says!r}: {v['error'][:600]}"
        )
    else:  # only start-up catches it: proven in test_startup_only_refusals
        assert v["ok"] or re.search(vllm_says, v["error"]), (name, v)


STARTUP_ROWS = [k for k, r in cc.BAD.items() if r[3] == "startup"]


@pytest.mark.parametrize("name", STARTUP_ROWS)
def test_startup_only_refusals(engine, tmp_path, name) -> None:
    """The rows vLLM's config accepts are refused when the engine starts or first runs.
    Each row in its own engine process: one that kills the process takes no other row's
    verdict with it."""
    head = engine.models / "p-eagle-aligned"
    row = cc.BAD[name]
    run = {
        "id": name,
        "model": str(engine.models / "tiny-llama"),
        "speculative_config": json.loads(cc.bad_raw(row[0], head)),
        "prompts": ["the drafter proposes"],
        "max_tokens": 4,
        "max_model_len": 512,
    }
    job = {"log_dir": str(tmp_path / "logs"), "runs": [run]}
    if name == "k-129" and AMX_TILES:
        # engine_proc.AMX_TILES: the AMX kernels trap on K > 128 (SIGILL) before the
        # rejection sampler's assert can name MAX_SPEC_LEN. Still refused: the engine
        # dies on the first step and serves nothing.
        with pytest.raises(AssertionError, match=r"exited -4 without a JSON result"):
            run_engine_module(engine, "peagle_sandbox.vllm_engine.offline_runs", job)
        return
    out = run_engine_module(engine, "peagle_sandbox.vllm_engine.offline_runs", job)
    (r,) = out["results"]
    text = f"{r['error']} {r.get('log_errors', '')} " + _log_tail(r["log"])
    assert not r["ok"], f"vLLM {engine.version} starts AND serves {name}; peagle refuses it"
    assert re.search(row[2], text), (
        f"{name}: engine failed, but not naming {row[2]!r}: {r['error']}"
    )


def _log_tail(path: str) -> str:
    p = Path(path)
    return "\n".join(p.read_text(errors="replace").splitlines()[-60:]) if p.exists() else ""
