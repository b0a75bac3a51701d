"""Per-request acceptance in the plan and in the container entrypoint.

The rules (vLLM's, `config/vllm.py` and `config/observability.py`; the version boundary and
the values from the vLLM source facts, never written here):
- a speculative mode on a vLLM >= `per_request_metrics_min()` gets
  SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS=summary; baseline and older vLLMs never do;
- `detailed` (or `none`) is asked for as an engine arg, the same in the SDK's spec and the
  CLI's `-f` file; container.env's null removes it;
- what vLLM would refuse at start-up fails the plan (and the entrypoint, before exec):
  the flag without a speculative config, on a vLLM that predates it, or a value it does
  not take;
- the DLC rule turns the variable into `--per-request-spec-decode-metrics <value>`.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from sm_peagle.container.entrypoint import build_argv, main
from sm_peagle.planning.build import plan
from sm_peagle.planning.spec.loading import spec_from_data
from sm_peagle.vllm.versions import (
    VllmVersion,
    covered_versions,
    per_request_metrics_min,
    per_request_metrics_values,
)
from tests.plan_helpers import make_offline, run_cli

VAR = "SM_VLLM_PER_REQUEST_SPEC_DECODE_METRICS"
FIRST = per_request_metrics_min()
assert FIRST is not None
BEFORE = max(v for v in covered_versions() if v < FIRST)
FLAG = "--per-request-spec-decode-metrics"


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    make_offline(monkeypatch, tmp_path)


def planned(mode: str = "p-eagle", version: Any = FIRST, **container: Any):
    data = {
        "model": "tiny-llama",
        "speculative": {"mode": mode},
        "container": {"vllm_version": str(version), **container},
    }
    return plan(spec_from_data(data))


def env_of(p: Any) -> dict[str, str]:
    return p.create_model["PrimaryContainer"]["Environment"]


def check(p: Any) -> tuple[str, str, str | None]:
    [c] = [c for c in p.checks if "per_request" in c.name or VAR in c.name]
    return c.status, c.name, c.message


def test_the_facts_say_what_the_tests_rely_on() -> None:
    # the boundary is a real one: the version before has no values, the first has summary
    assert per_request_metrics_values(BEFORE) == ()
    assert "summary" in per_request_metrics_values(FIRST)
    assert "detailed" in per_request_metrics_values(FIRST)


@pytest.mark.parametrize("mode", ["p-eagle", "eagle3"])
def test_speculative_modes_get_summary_from_the_first_version(mode: str) -> None:
    p = planned(mode, FIRST)
    assert env_of(p)[VAR] == "summary"
    assert check(p)[0] == "pass"


@pytest.mark.parametrize(("mode", "version"), [("baseline", FIRST), ("p-eagle", BEFORE)])
def test_baseline_and_older_images_never_get_it(mode: str, version: VllmVersion) -> None:
    p = planned(mode, version)
    assert VAR not in env_of(p)
    assert not [c for c in p.checks if "per_request" in c.name]


def test_detailed_and_none_are_engine_args() -> None:
    p = planned(engine_args={"per_request_spec_decode_metrics": "detailed"})
    assert env_of(p)[VAR] == "detailed"
    assert check(p)[:2] == ("pass", "container.engine_args.per_request_spec_decode_metrics")
    p = planned(engine_args={"per_request_spec_decode_metrics": "none"})
    assert env_of(p)[VAR] == "none" and check(p)[0] == "pass"


def test_a_null_in_container_env_removes_it() -> None:
    p = planned(env={VAR: None})
    assert VAR not in env_of(p)


@pytest.mark.parametrize(
    ("mode", "version", "value", "needle"),
    [
        ("baseline", FIRST, "summary", "without a speculative config"),
        ("p-eagle", BEFORE, "summary", f"vLLM {BEFORE} has no {FLAG}"),
        ("p-eagle", BEFORE, "detailed", f"vLLM >= {FIRST}"),
        ("p-eagle", FIRST, "verbose", "takes none, summary, detailed"),
    ],
)
def test_what_vllm_would_refuse_fails_the_plan(
    mode: str, version: VllmVersion, value: str, needle: str
) -> None:
    p = planned(mode, version, engine_args={"per_request_spec_decode_metrics": value})
    status, name, message = check(p)
    assert status == "fail" and name == "container.engine_args.per_request_spec_decode_metrics"
    assert needle in (message or "")


def test_the_cli_refuses_it_with_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "model": "tiny-llama",
                "speculative": {"mode": "baseline"},
                "container": {"engine_args": {"per_request_spec_decode_metrics": "summary"}},
            }
        )
    )
    code, out, err = run_cli(capsys, "plan", "-f", str(spec))
    lines = [ln for ln in err.splitlines() if ln.startswith("error")]
    assert code == 2 and len(lines) == 1 and "(fix: " in lines[0], err
    assert "per_request_spec_decode_metrics" in lines[0] and "Traceback" not in err + out


def test_the_dlc_rule_makes_it_one_flag_with_its_value() -> None:
    argv = build_argv(env_of(planned()), model_dir_nonempty=lambda: True)
    i = argv.index(FLAG)
    assert argv[i + 1] == "summary"
    assert argv.count(FLAG) == 1


# --- the container entrypoint: refuses before exec what vLLM refuses at start-up ----------
SPEC = json.dumps({"method": "eagle3", "num_speculative_tokens": 3})


def run(env: dict[str, str], version: VllmVersion | None) -> tuple[int, str, list]:
    calls: list = []
    err = io.StringIO()
    code = main(
        [],
        env={"HF_MODEL_ID": "m", **env},
        exec_fn=lambda _f, a: calls.append(a),
        model_dir="/nonexistent-model-dir",
        vllm_probe=lambda _e: (None, version),
        err=err,
    )
    return code, err.getvalue(), calls


@pytest.mark.parametrize("value", ["summary", "detailed"])
def test_entrypoint_execs_the_flag_with_a_speculative_config(value: str) -> None:
    code, _log, calls = run({"SM_VLLM_SPECULATIVE_CONFIG": SPEC, VAR: value}, FIRST)
    assert code == 0
    argv = calls[0]
    assert argv[argv.index(FLAG) + 1] == value


@pytest.mark.parametrize(
    ("env", "version", "needle"),
    [
        ({VAR: "summary"}, FIRST, "needs speculative decoding"),
        ({VAR: "summary"}, None, "needs speculative decoding"),  # no vLLM to ask: still sure
        ({"SM_VLLM_SPECULATIVE_CONFIG": SPEC, VAR: "summary"}, BEFORE, f"vLLM {BEFORE} has no"),
        ({"SM_VLLM_SPECULATIVE_CONFIG": SPEC, VAR: "none"}, BEFORE, f"vLLM >= {FIRST}"),
        ({"SM_VLLM_SPECULATIVE_CONFIG": SPEC, VAR: "verbose"}, FIRST, "is not one of"),
        ({"SM_VLLM_SPECULATIVE_CONFIG": SPEC, VAR: ""}, FIRST, "is not one of"),  # bare flag
    ],
)
def test_entrypoint_refuses_what_vllm_refuses(
    env: dict[str, str], version: VllmVersion | None, needle: str
) -> None:
    code, log, calls = run(env, version)
    fatal = [ln for ln in log.splitlines() if "FATAL" in ln]
    assert code == 2 and not calls and len(fatal) == 1, log
    assert fatal[0].startswith("peagle-entrypoint: FATAL ") and "(fix: " in fatal[0]
    assert needle in fatal[0]


@pytest.mark.parametrize(("value", "in_argv"), [("none", True), ("false", False)])
def test_entrypoint_lets_none_and_false_through_without_speculation(
    value: str, in_argv: bool
) -> None:
    code, _log, calls = run({VAR: value}, FIRST)
    assert code == 0 and (FLAG in calls[0]) is in_argv
