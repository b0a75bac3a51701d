"""The training entrypoint, for real: speculators 0.9.0 trains a P-EAGLE head on this CPU.

`peagle_train.py` (the script a SageMaker training job runs) runs in the sandbox's trainer
venv (`peagle sandbox install-trainer`, the CPU backend registered there) against a
temporary `/opt/ml`-like job directory, as the sandbox's training jobs run it: the SM_*
variables name the channels and the model dir, and the working directory is the job's.
The target is the engine's random tiny Llama (`models/tiny-llama-random`, 4 layers), the
prompts are generated here deterministically, K=3, one layer.

Two jobs: 120 steps, and 0 steps (the untrained head, written as it is). The trained head's
depth-0 validation accuracy must be well above the untrained one's (facts §14 measured 0.52
after 150 steps on 256 samples, and 0 for an untrained head).

Both heads are then served by the real engine (vLLM 0.31.0 CPU, K=3, parallel drafting,
temperature 0, 64 held-out prompts), and the trained head's position-0 acceptance must lie
within POS0_RATIO of its depth-0 validation accuracy.

Measured here (2 cores, 2026-11-30), depth-0 validation accuracy -> served position-0
acceptance (overall acceptance):
  continuations from vLLM (the backend's default with an engine installed):
    0 steps 0.000 -> 0.001 (0.000); 120 steps 0.339 -> 0.244 (0.098);
    250 steps 0.468 -> 0.340 (0.173);
  continuations from HF transformers (before): 120 steps 0.328 -> 0.243; a longer run
    0.637 -> 0.442.
So the served/trained ratio is 0.70-0.74 whichever engine wrote the continuations: the
HF/vLLM divergence of the continuations is not what costs the 30%. Unexplained so far (the
hidden states still come from HF; vLLM-CPU cannot export its own, facts §14). The
continuations' vLLM run adds about 20 s (the engine's import and start-up, 256 prompts).
Times: training job 120 steps 164 s and 250 steps 436 s with the machine's load at 6
(the earlier HF-only test took 24 s idle, 76-138 s under load); serving both heads ~3 min
under that load.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import pytest

from peagle_sandbox.trainer_cpu.install import TrainerEnv, trainer_env
from peagle_sandbox.vllm_engine.install import EngineEnv
from tests.conformance.engine_proc import run_engine_module

ENTRYPOINT = (
    Path(__file__).resolve().parents[2] / "sm_peagle" / "training" / "source" / "peagle_train.py"
)
K = 3
LAYER_IDS = [1, 2, 3]  # aux ids for a 4-layer target: inputs of decoder layers 1..3
# Enough to learn: 60 steps on 192 prompts reached only 0.17 at depth 0 here.
N_TRAINED, STEPS = 256, 120
# Served position-0 acceptance over the trainer's depth-0 validation accuracy: measured
# 0.72 (120 steps) and 0.73 (250 steps); see the module docstring.
POS0_RATIO = (0.55, 1.05)
# A sentence of common words, cut into words (one string reads better than 61 quoted ones).
_TEXT = (
    "the a of to and in is it you that he was for on are with as his they be at one have "
    "this from or had by hot word but what some we can out other were all there when up use "
    "your how said an each she which do their time if will way about many then them write"
)
_WORDS = _TEXT.split(" ")


@pytest.fixture(scope="module")
def trainer() -> TrainerEnv:
    """The installed trainer venv, or skip (locally) / fail (CI) naming the install command."""
    env = trainer_env()
    if not env.python.exists():
        message = (
            f"no trainer venv at {env.python.parent.parent}: install it with `peagle sandbox "
            f"install-trainer --home {env.home}` (or `python -m "
            f"peagle_sandbox.trainer_cpu.install --home {env.home}`)"
        )
        if os.environ.get("CI"):
            pytest.fail(f"conformance tier cannot be skipped in CI: {message}")
        pytest.skip(message)
    return env


def prompts(n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 16))) for _ in range(n)]


def run_job(trainer: TrainerEnv, engine: EngineEnv, root: Path, n: int, steps: int) -> Path:
    """One job dir standing for /opt/ml; returns its model dir (the head) after exit 0."""
    (root / "input" / "config").mkdir(parents=True)
    (root / "input" / "data" / "train").mkdir(parents=True)
    hp = {
        "sagemaker_program": "peagle_train.py",
        "k": str(K),
        "layers": "1",
        "steps": str(steps),
        "max_new_tokens": "32",
        "seed": "0",
        "target_layer_ids": json.dumps(LAYER_IDS),
        "val_fraction": "0.1",
        "total_seq_len": "512",
    }
    (root / "input" / "config" / "hyperparameters.json").write_text(json.dumps(hp))
    rows = "".join(json.dumps({"prompt": p}) + "\n" for p in prompts(n))
    (root / "input" / "data" / "train" / "prompts.jsonl").write_text(rows)
    env = {
        **os.environ,
        "SM_INPUT_CONFIG_DIR": str(root / "input" / "config"),
        "SM_CHANNEL_TRAIN": str(root / "input" / "data" / "train"),
        "SM_CHANNEL_TARGET": str(engine.models / "tiny-llama-random"),
        "SM_MODEL_DIR": str(root / "model"),
        "SM_OUTPUT_DIR": str(root / "output"),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        # The backend generates the continuations with this engine (as the sandbox passes
        # its engine home to a training job).
        "PEAGLE_ENGINE_HOME": str(engine.home),
        "PEAGLE_ENGINE_VERSION": engine.version,
    }
    env.pop("PYTHONPATH", None)  # the trainer venv finds the backend through its own .pth
    with (root / "log.txt").open("w") as log:
        code = subprocess.run(
            trainer.train_command(ENTRYPOINT),
            env=env,
            cwd=root,
            stdout=log,
            stderr=subprocess.STDOUT,
            timeout=900,
        ).returncode
    text = (root / "log.txt").read_text()
    assert code == 0, text[-3000:]
    assert not (root / "output" / "peagle-work").exists()  # scratch removed after a success
    assert not (root / "output" / "failure").exists()
    return root / "model"


def _report(model: Path) -> dict:
    return json.loads((model / "peagle-training-report.json").read_text())


def served_acceptance(engine: EngineEnv, heads: dict[str, Path], log_dir: Path) -> dict:
    """Per-position acceptance of each head, served by the real engine on held-out prompts
    (seed 1: none of them is a training prompt) at temperature 0, K=3, parallel drafting.
    One engine process for all heads (vLLM is imported once)."""
    held = prompts(64, seed=1)
    assert not set(held) & set(prompts(N_TRAINED))
    job = {
        "log_dir": str(log_dir),
        "runs": [
            {
                "id": name,
                "model": str(engine.models / "tiny-llama-random"),
                "speculative_config": {
                    "method": "eagle3",
                    "model": str(head),
                    "num_speculative_tokens": K,
                    "parallel_drafting": True,
                },
                "prompts": held,
                "temperature": 0.0,
                "max_tokens": 32,
                "seed": 0,
                "max_model_len": 512,
            }
            for name, head in heads.items()
        ],
    }
    out = run_engine_module(engine, "peagle_sandbox.vllm_engine.offline_runs", job)
    result = {}
    for r in out["results"]:
        assert r["ok"], f"{r['id']}: {r['error']}"
        spec = r["spec"]
        result[r["id"]] = {
            "per_pos": [x / spec["num_drafts"] for x in spec["per_pos"]],
            "overall": spec["num_accepted_tokens"] / spec["num_draft_tokens"],
        }
    return result


def test_trained_head_loads_and_beats_the_untrained_one(
    trainer: TrainerEnv, engine: EngineEnv, tmp_path: Path
) -> None:
    from safetensors import safe_open

    target = json.loads((engine.models / "tiny-llama-random" / "config.json").read_text())
    hidden, vocab = target["hidden_size"], target["vocab_size"]

    trained = run_job(trainer, engine, tmp_path / "trained", n=N_TRAINED, steps=STEPS)
    untrained = run_job(trainer, engine, tmp_path / "untrained", n=64, steps=0)

    # The head vLLM reads: config.json (speculators' P-EAGLE format) + model.safetensors.
    for model in (trained, untrained):
        assert sorted(p.name for p in model.iterdir()) == [
            "config.json",
            "model.safetensors",
            "peagle-training-report.json",
        ]
        config = json.loads((model / "config.json").read_text())
        assert config["speculators_model_type"] == "peagle"
        assert config["speculators_config"]["algorithm"] == "peagle"
        assert config["speculators_config"]["proposal_methods"][0]["speculative_tokens"] == K
        assert config["eagle_aux_hidden_state_layer_ids"] == LAYER_IDS
        with safe_open(str(model / "model.safetensors"), "np") as f:
            shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118
        # The fc fusing the three aux layers (3H -> H), and an output head over the vocab.
        assert (hidden, len(LAYER_IDS) * hidden) in shapes.values(), shapes
        assert (vocab, hidden) in shapes.values(), shapes

    good, zero = _report(trained), _report(untrained)
    assert (good["k"], good["steps"], zero["steps"]) == (K, STEPS, 0)
    assert good["backend"] == zero["backend"] == "cpu"
    assert good["speculators_version"] == "0.9.0"
    assert len(good["per_depth_val_accuracy"]) == len(zero["per_depth_val_accuracy"]) == K
    # At most one row per prompt (a prompt whose continuation is empty is dropped),
    # split as speculators does: int(rows * 0.9) train, the rest validate.
    rows = good["samples"] + good["val_samples"]
    assert 0.8 * N_TRAINED <= rows <= N_TRAINED
    assert good["samples"] == int(rows * 0.9)
    assert good["train_loss_last"] < good["train_loss_first"]
    # The untrained head predicts nothing; the trained one learned the target's next token.
    assert zero["per_depth_val_accuracy"][0] < 0.05
    assert good["per_depth_val_accuracy"][0] > zero["per_depth_val_accuracy"][0] + 0.2

    # One log line per step and per evaluation, with the stable prefix.
    log = (tmp_path / "trained" / "log.txt").read_text()
    steps = [x for x in log.splitlines() if x.startswith("peagle-train: step ")]
    assert [int(x.split()[2]) for x in steps] == list(range(1, STEPS + 1))
    assert any(x.startswith("peagle-train: eval epoch ") for x in log.splitlines())
    # The continuations are the served engine's own (the backend ran vLLM, not HF).
    assert f"peagle-train: continuations from vLLM {engine.version}" in log

    # Served by the real engine on held-out prompts: acceptance above 0, and position-0
    # acceptance near the depth-0 validation accuracy. Measured (module docstring): served
    # position 0 is 0.70-0.74x the trainer's depth 0 at every training length, with HF's
    # or vLLM's continuations alike; the band allows that factor with room for the 26-row
    # validation split's noise, and fails a head the engine cannot use (~0) or a report
    # that claims more than the engine delivers.
    served = served_acceptance(engine, {"trained": trained, "untrained": untrained}, tmp_path)
    acc0 = good["per_depth_val_accuracy"][0]
    pos0 = served["trained"]["per_pos"][0]
    assert served["trained"]["overall"] > 0
    assert POS0_RATIO[0] * acc0 <= pos0 <= POS0_RATIO[1] * acc0, (acc0, served)
    assert served["untrained"]["per_pos"][0] < 0.05, served
