"""Issue 40's acceptance on the REAL engine: `peagle --sandbox drafter train` trains a
P-EAGLE head for the random tiny target (`tiny-llama-random`) as a sandbox training job
(the same entrypoint a SageMaker job runs, on the sandbox's CPU trainer), then the head is
deployed with P-EAGLE K=3 on real vLLM and benched at temperature 0 on held-out prompts.

What is judged, and from where:

- what the report expects: the job's `peagle-training-report.json`, as `drafter train
  --json` returns it: `report.expected_position0_acceptance`, the entrypoint's per-round
  estimate (`round_starts.py`), beside speculators' own depth-0 validation accuracy
  (`report.per_depth_val_accuracy[0]`);
- the served position-0 acceptance: vLLM's own counters on the engine's port, accepted
  tokens at position 0 over drafts (`vllm:spec_decode_num_accepted_tokens_per_pos_total
  {position="0"}` / `vllm:spec_decode_num_drafts_total`), over the bench's traffic only;
- acceptance above 0: the bench's own acceptance length (> 1) and the counters.

Why not the depth-0 accuracy itself: speculators counts it per TOKEN (every position of the
validation rows), vLLM per DRAFT ROUND (a round that accepts j drafts skips the next j
positions), and right drafts cluster on this target, so the served rate is lower: measured
here (2 cores, 2026-11-30) 0.339 -> 0.244, 0.468 -> 0.340, 0.361 -> 0.239, whichever engine
wrote the continuations and whichever draft layer. An offline check on those heads (the
head's per-position depth-0 correctness on the served traffic, averaged over vLLM's round
starts) gave 0.244, 0.347 and 0.237 for them: the rounds explain the gap.

How close. The estimate has the trained head draft K tokens from every validation position
and walks vLLM's rounds over how many are right; the bench serves other prompts from the
same generator. Two things separate the numbers:

- the walk itself, and bf16 HF vs vLLM (the served token differs from HF's on ~2% of
  positions): the same walk over two earlier heads' drafts on the traffic they served gave
  0.240 and 0.235 against served 0.244 and 0.239, per position too. `BIAS` = 0.01 covers it;
- prompt sampling, which dominates: prompts differ far more than positions within one. The
  report gives its estimate's standard error over the validation rows
  (`expected_position0_stderr`, row-clustered: 0.049 for this test's head and 26 rows;
  offline, 64 served prompts of another head gave 0.029); the bench's 32 prompts vary
  alike, so its error is that times sqrt(rows / 32), and the difference's is the two
  combined (0.066 here).

Why not bench the validation prompts themselves: they are not the file's last rows
(speculators' prepare-data shuffles the rows with the seed before its ArrowDataset splits
them), so the last 10% of the file is mostly training rows (served 0.485 on them, above the
per-token 0.378: measured 2026-11-30); a same-prompt comparison needs the job to name its
validation rows.

So served position-0 must be within `BIAS` + `Z` = 3 standard errors of the difference (0.21
here). That is wide: one run of this size cannot tell the estimate from a 0.08 error (this
test's head, deterministic, served 0.296 in two runs against a per-token 0.378, a
ratio-of-accuracies walk's 0.208 and this walk's 0.231: 0.065 apart, one standard error).
The walk's arithmetic is pinned by tests/unit/test_round_starts.py and its agreement with
vLLM by the offline check above; this test holds the pipeline end to end: the job's pass
runs on the real trainer, its per-token depth-0 rate repeats speculators' (`EVAL_TOLERANCE`:
same rows, same forward, a bf16 checkpoint), the served head is accepted (> 0) near the
estimate, and below the per-token rate as measured every time here (`POS0_RATIO`, served /
depth-0 accuracy: 0.66-0.78 over six heads). A zero-step head (`--steps 0`) is the trained
head's starting point: its report warns that it has not learned and expects about nothing,
and served it accepts about nothing.

One sandbox for the module, one engine at a time (each deploy is deleted before the next).
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from peagle_sandbox.vllm_engine.install import EngineEnv
from tests.e2e.test_sandbox_engine_host import Cli, assert_nothing_left

TARGET = "tiny-llama-random"
K = 3
STEPS = 120
TRAIN_PROMPTS = 256
HELD_OUT = 32
# Served position-0 acceptance vs the report's per-round estimate: within BIAS + Z standard
# errors of their difference; served over the per-token depth-0 accuracy: measured
# 0.66-0.78; the pass's per-token rate vs speculators' own (module docstring).
BIAS = 0.01
Z = 3.0
POS0_RATIO = (0.55, 1.05)
EVAL_TOLERANCE = 0.02
# Tokens per continuation, in training and in the bench: the estimate describes rows like the
# validation rows.
MAX_TOKENS = 48
ZERO_STEP_MAX = 0.05  # "about 0": a few lucky first drafts out of ~1500
CLOCK_RATE = "20"  # the training job's Starting/Downloading/Uploading phases, sped up

_WORDS = [
    "the",
    "a",
    "one",
    "two",
    "three",
    "red",
    "green",
    "blue",
    "small",
    "large",
    "river",
    "stone",
    "tree",
    "house",
    "light",
    "dark",
    "runs",
    "walks",
    "jumps",
    "falls",
    "over",
    "under",
    "near",
    "far",
    "old",
    "new",
    "quick",
    "slow",
    "bright",
    "cold",
    "warm",
]


def _prompts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(5, 10))) for _ in range(n)]


def _jsonl(path: Path, prompts: list[str]) -> Path:
    path.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts))
    return path


def trainer_or_skip(engine: EngineEnv) -> Path:
    home = Path(os.environ.get("PEAGLE_TRAINER_HOME") or engine.home)
    if not (home / "trainer-venv-0.9.0" / "bin" / "python").exists():
        message = (
            f"no trainer environment at {home}: install it with `peagle sandbox "
            f"install-trainer --home {home}`"
        )
        if os.environ.get("CI"):
            pytest.fail(f"conformance tier cannot be skipped in CI: {message}")
        pytest.skip(message)
    return home


@pytest.fixture(scope="module")
def trainer_sandbox(engine: EngineEnv, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    home = trainer_or_skip(engine)
    root = tmp_path_factory.mktemp("drafter-train")
    cli = Cli(root, engine.home, timeout=1200)  # bounded; training on a busy machine
    cli.env["PEAGLE_ENGINE_VERSION"] = engine.version
    cli.env["PEAGLE_TRAINER_HOME"] = str(home)
    out = cli("sandbox", "start", "--engine", "vllm", "--clock-rate", CLOCK_RATE)
    assert f"engine: vllm {engine.version} (CPU, tiny model)" in out.stderr
    yield cli
    cli("sandbox", "stop", code=None)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("train-data")
    train = _prompts(TRAIN_PROMPTS, seed=1)
    held_out = [p for p in _prompts(HELD_OUT * 2, seed=2) if p not in train][:HELD_OUT]
    return {
        "train": _jsonl(root / "train.jsonl", train),
        "held_out": _jsonl(root / "held-out.jsonl", held_out),
    }


def _train(cli: Cli, data: Path, steps: int) -> dict[str, Any]:
    out = cli(
        "--sandbox", "drafter", "train", TARGET, "--data", str(data), "-k", str(K),
        "--steps", str(steps), "--max-new-tokens", str(MAX_TOKENS), "--yes", "--json",
    )  # fmt: skip
    # The job's own log lines, streamed by the wait: the entrypoint ran on the sandbox's CPU
    # backend, whose continuations came from the real engine.
    assert "peagle-train: continuations from vLLM" in out.stderr, out.stderr[-3000:]
    return json.loads(out.stdout)


def _engine_counters(url: str) -> dict[str, Any]:
    """Drafts and the per-position accepted tokens from the engine's own /metrics."""
    import re
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    text = opener.open(f"{url}/metrics", timeout=10).read().decode()
    drafts = re.search(r"^vllm:spec_decode_num_drafts_total{[^}]*} ([0-9.e+]+)$", text, re.M)
    per = re.findall(
        r'^vllm:spec_decode_num_accepted_tokens_per_pos_total{[^}]*position="(\d+)"[^}]*} '
        r"([0-9.e+]+)$",
        text,
        re.M,
    )
    return {
        "drafts": float(drafts.group(1)) if drafts else 0.0,
        "per_pos": [v for _, v in sorted((int(p), float(v)) for p, v in per)],
    }


def _settled(url: str) -> dict[str, Any]:
    last = _engine_counters(url)
    while True:
        time.sleep(0.5)
        now = _engine_counters(url)
        if now == last:
            return now
        last = now


def _served(cli: Cli, head: str, held_out: Path) -> dict[str, Any]:
    """Deploy the target with `head`, bench it at temperature 0 on the held-out prompts,
    delete it; the bench's result and the engine's position-0 acceptance over its traffic."""
    name = f"peagle-{TARGET}-p-eagle"
    try:
        cli("--sandbox", "deploy", TARGET, "--drafter", head, "-k", str(K), "--yes")
        [engine] = [e for e in cli.engines() if e["endpoint"] == name]
        url = f"http://127.0.0.1:{engine['port']}"
        before = _settled(url)
        bench = cli(
            "--sandbox", "bench", name, "--dataset", str(held_out), "--temperature", "0",
            "-c", "1", "-n", str(HELD_OUT), "--max-tokens", str(MAX_TOKENS), "--json",
        )  # fmt: skip
        after = _settled(url)
    finally:  # one engine at a time, even after a failure
        gone = cli("--sandbox", "delete", name, "--yes", code=None)
    assert gone.returncode == 0, gone.stderr
    assert_nothing_left(cli)
    drafts = after["drafts"] - before["drafts"]
    accepted0 = after["per_pos"][0] - (before["per_pos"] or [0.0])[0]
    assert drafts > 0, (before, after)
    return {"bench": json.loads(bench.stdout), "position0": accepted0 / drafts, "drafts": drafts}


def test_a_trained_head_is_accepted_as_its_report_says(
    trainer_sandbox: Cli, data: dict[str, Path]
) -> None:
    trained = _train(trainer_sandbox, data["train"], STEPS)
    report = trained["report"]
    assert trained["status"] == "Completed" and report["backend"] == "cpu", trained
    assert trained["check"]["ok"], trained["check"]  # the drafter check deploy runs
    acc0 = report["per_depth_val_accuracy"][0]
    assert len(report["per_depth_val_accuracy"]) == K and acc0 > 0.15, report
    assert not [w for w in trained["warnings"] if "not learned" in w], trained["warnings"]
    # The entrypoint's pass measured what speculators measured, and made a per-round estimate.
    assert report["expected_per_round"] is True, report
    assert abs(report["eval_position0_accuracy"] - acc0) <= EVAL_TOLERANCE, report
    expected = report["expected_position0_acceptance"]

    served = _served(trainer_sandbox, trained["head_uri"], data["held_out"])
    # bench read the report beside the served head and put the measure beside it.
    beside = served["bench"]["drafter_training"]
    assert beside["expected_position0_acceptance"] == expected, beside
    assert beside["measured_position0_acceptance"] > 0 and beside["k"] == K, beside
    [level] = served["bench"]["levels"]
    assert level["acceptance"]["mean_acceptance_length"] > 1.0, level["acceptance"]
    assert served["position0"] > 0
    stderr, rows = report["expected_position0_stderr"], report["val_samples"]
    assert 0 < stderr < 0.1, report  # measured, and small enough to say something
    tolerance = BIAS + Z * stderr * math.sqrt(1 + rows / HELD_OUT)
    diff = abs(served["position0"] - expected)
    assert diff <= tolerance, (diff, tolerance, expected, acc0, served)
    low, high = POS0_RATIO
    assert low * acc0 <= served["position0"] <= high * acc0, (served["position0"], acc0)


def test_a_zero_step_head_has_not_learned_and_accepts_about_nothing(
    trainer_sandbox: Cli, data: dict[str, Path]
) -> None:
    untrained = _train(trainer_sandbox, data["train"], 0)
    report = untrained["report"]
    assert report["steps"] == 0 and report["per_depth_val_accuracy"][0] <= ZERO_STEP_MAX
    assert report["expected_position0_acceptance"] <= ZERO_STEP_MAX, report
    assert [w for w in untrained["warnings"] if "not learned" in w], untrained["warnings"]
    served = _served(trainer_sandbox, untrained["head_uri"], data["held_out"])
    assert served["position0"] <= ZERO_STEP_MAX, served
