"""Model Runner V2 and P-EAGLE, judged by the real engine (vLLM CPU) and by peagle (issue 28).

peagle refuses `VLLM_USE_V2_MODEL_RUNNER=1` with P-EAGLE because vLLM's
`VllmConfig._get_v2_model_runner_unsupported_features` lists "parallel drafting for EAGLE
speculative decoding" for a parallel-drafting EAGLE config and `_validate_v2_model_runner`
raises for it (read per version into the source data). Here the engine builds its own
`VllmConfig` from the argv peagle plans (the `vllm serve` parser and
`create_engine_config()`, as `peagle_sandbox.vllm_engine.validate_args` does) and is asked
that same question: P-EAGLE's config must be on V2's unsupported list, EAGLE-3's must not.
The CPU build has no Triton, so forcing V2 there fails earlier for that reason ("Model
Runner V2 requires Triton."); the unsupported list is the part that speaks about P-EAGLE.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from sm_peagle.planning.build import plan
from sm_peagle.vllm.lossy import V2_ENV, runner_unsupported
from sm_peagle.vllm.versions import VllmVersion
from tests.conformance import config_cases as cc
from tests.conformance.engine_proc import run_engine_module

pytestmark = pytest.mark.conformance

FEATURE = "parallel drafting for EAGLE speculative decoding"

# Runs in the engine venv: argv -> VllmConfig -> what V2 does not support for it.
PROBE = textwrap.dedent(
    """
    import json, sys
    from peagle_sandbox.vllm_engine import validate_args
    from vllm.engine.arg_utils import AsyncEngineArgs
    import argparse

    argparse.ArgumentParser.exit = validate_args._raise_instead_of_exit
    root, cmd = validate_args._parser()
    out = []
    for case in json.load(sys.stdin):
        args = root.parse_args(case["argv"][1:])
        if getattr(args, "model_tag", None) is not None:
            args.model = args.model_tag
        cmd.validate(args)
        config = AsyncEngineArgs.from_cli_args(args).create_engine_config()
        out.append({
            "id": case["id"],
            "v2_unsupported": config._get_v2_model_runner_unsupported_features(),
        })
    print(json.dumps({"results": out}))
    """
)


def planned(mode: str, version: str, env: dict[str, str] | None = None) -> Any:
    p = cc.plan_for("gpt-oss-20b", mode, 3, version)
    if env is None:
        return p
    container = p.spec.container.model_copy(update={"env": {**p.spec.container.env, **env}})
    return plan(p.spec.model_copy(update={"container": container}))


@pytest.fixture(scope="module")
def engine_says(engine, tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    probe_dir = tmp_path_factory.mktemp("v2probe")
    (probe_dir / "peagle_v2_probe.py").write_text(PROBE)
    cases = []
    for mode in ("p-eagle", "eagle3"):
        argv, _ = cc.engine_argv(planned(mode, engine.version), engine.models, mode)
        cases.append({"id": mode, "argv": argv})
    out = run_engine_module(
        engine,
        "peagle_v2_probe",
        cases,
        timeout=600,
        extra_env={"PYTHONPATH": str(probe_dir)},
        stderr_path=Path(probe_dir) / "probe.stderr",
    )
    said = {r["id"]: r["v2_unsupported"] for r in out["results"]}
    print(f"\nvLLM {engine.version}, Model Runner V2 does not support: {json.dumps(said)}")
    return said


def test_the_engine_puts_p_eagle_on_v2s_unsupported_list(engine_says) -> None:
    assert FEATURE in engine_says["p-eagle"]
    assert FEATURE not in engine_says["eagle3"]


def test_peagle_data_and_plan_say_the_same(engine, engine_says) -> None:
    v = VllmVersion(engine.version)
    features = {e["feature"] for e in runner_unsupported("v2", v)}
    assert FEATURE in features
    refused = planned("p-eagle", engine.version, {V2_ENV: "1"})
    fails = {c.name: c.message for c in refused.checks if c.status == "fail"}
    assert FEATURE in fails[f"container.env.{V2_ENV}"]
    eagle3 = planned("eagle3", engine.version, {V2_ENV: "1"})
    assert f"container.env.{V2_ENV}" not in {c.name for c in eagle3.checks if c.status == "fail"}
