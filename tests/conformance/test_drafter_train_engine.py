"""Issue 40's acceptance on the REAL engine: `peagle --sandbox drafter train` trains a
P-EAGLE head for the random tiny target (`tiny-llama-random`) as a sandbox training job
(the same entrypoint a SageMaker job runs, on the sandbox's CPU trainer), then the head is
deployed with P-EAGLE K=3 on real vLLM and benched at temperature 0 on held-out prompts.

What is judged, and from where:

- the trainer's depth-0 validation accuracy: the job's `peagle-training-report.json`, as
  `drafter train --json` returns it (`report.per_depth_val_accuracy[0]`);
- the served position-0 acceptance: vLLM's own counters on the engine's port, accepted
  tokens at position 0 over drafts (`vllm:spec_decode_num_accepted_tokens_per_pos_total
  {position="0"}` / `vllm:spec_decode_num_drafts_total`), over the bench's traffic only;
- acceptance above 0: the bench's own acceptance length (> 1) and the counters.

How close: served position-0 acceptance within `POS0_RATIO` of the depth-0 validation
accuracy. The two are the same quantity measured twice (the share of first drafts the
target accepts at temperature 0, on the trainer's held-out split and on other prompts
served by vLLM), but on this CPU they do not agree as facts §14 reported (52% -> 54%). Measured
here (2 cores, 2026-11-30), depth-0 validation accuracy -> served position-0 acceptance:

- continuations from vLLM (the CPU backend's default with an engine installed): 0 steps
  0.000 -> 0.001; 120 steps 0.339 -> 0.244; 250 steps 0.468 -> 0.340;
- continuations from HF transformers: 120 steps 0.328 -> 0.243; a longer run 0.637 -> 0.442;
- a Llama draft layer instead of speculators' default Qwen3 layer: 120 steps 0.361 -> 0.239.

The served/trained ratio is 0.66-0.74 whichever engine wrote the continuations and
whichever draft layer: not the HF/vLLM divergence of the text, not the layer. Unexplained
(the hidden states still come from HF: vLLM-CPU cannot export its own, facts §14). The band
is wide enough for that measured loss and sampling noise (26 validation rows, ~1500 served
drafts), and fails a report that claims more than the engine delivers or a head the engine
cannot use. A zero-step head (`--steps 0`) is the trained head's starting point: its
report warns that it has not learned, and served it accepts about nothing.

One sandbox for the module, one engine at a time (each deploy is deleted before the next).
"""

from __future__ import annotations

import json
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
# Served position-0 acceptance over the trainer's depth-0 validation accuracy: measured
# 0.66-0.74 (module docstring).
POS0_RATIO = (0.55, 1.05)
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
        "--steps", str(steps), "--yes", "--json",
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
            "-c", "1", "-n", str(HELD_OUT), "--max-tokens", "48", "--json",
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

    served = _served(trainer_sandbox, trained["head_uri"], data["held_out"])
    [level] = served["bench"]["levels"]
    assert level["acceptance"]["mean_acceptance_length"] > 1.0, level["acceptance"]
    low, high = POS0_RATIO
    assert low * acc0 <= served["position0"] <= high * acc0, (served["position0"], acc0, served)


def test_a_zero_step_head_has_not_learned_and_accepts_about_nothing(
    trainer_sandbox: Cli, data: dict[str, Path]
) -> None:
    untrained = _train(trainer_sandbox, data["train"], 0)
    report = untrained["report"]
    assert report["steps"] == 0 and report["per_depth_val_accuracy"][0] <= ZERO_STEP_MAX
    assert [w for w in untrained["warnings"] if "not learned" in w], untrained["warnings"]
    served = _served(trainer_sandbox, untrained["head_uri"], data["held_out"])
    assert served["position0"] <= ZERO_STEP_MAX, served
