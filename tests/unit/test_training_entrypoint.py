"""The training job's entrypoint (`sm_peagle/training/source/peagle_train.py`): its pure parts.

The script runs inside a SageMaker training image where peagle is not installed, so it is
loaded here by path, and run as SageMaker runs it: a subprocess reading SageMaker's fixed
/opt/ml layout (the vLLM DLC has no training toolkit, so no SM_* variables), with
`PEAGLE_TRAIN_ML_ROOT` standing for /opt/ml.
Bad input needs neither torch nor speculators: it is refused before either is imported.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "sm_peagle" / "training" / "source"
ENTRYPOINT = SOURCE / "peagle_train.py"


def _load() -> ModuleType:
    # The job runs the entrypoint as a script, so its directory is on sys.path and it
    # imports its neighbours (prompt_rows.py) by name: the same here.
    if str(SOURCE) not in sys.path:
        sys.path.insert(0, str(SOURCE))
    spec = importlib.util.spec_from_file_location("peagle_train_under_test", ENTRYPOINT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


pt = _load()

# What the product sends (the design's hyperparameters, every value a string; no toolkit
# keys: the image has no toolkit).
GOOD = {
    "k": "3",
    "layers": "1",
    "steps": "40",
    "max_new_tokens": "32",
    "seed": "7",
    "target_layer_ids": "[1, 2, 3]",
    "val_fraction": "0.1",
}


def test_hyperparameters_are_typed_from_sagemaker_strings() -> None:
    p = pt.parse_hyperparameters(GOOD)
    assert (p.k, p.layers, p.steps, p.epochs, p.max_new_tokens, p.seed) == (3, 1, 40, None, 32, 7)
    assert p.target_layer_ids == [1, 2, 3]
    assert p.val_fraction == 0.1
    assert p.draft_vocab_size is None


def test_a_toolkit_images_own_hyperparameters_are_ignored() -> None:
    """With `image=` a toolkit image may add its `sagemaker_*` settings: not the trainer's."""
    extra = {"sagemaker_program": "x.py", "sagemaker_region": "us-east-1"}
    got = pt.parse_hyperparameters({**GOOD, **extra})
    assert dataclasses.replace(got, extra={}) == pt.parse_hyperparameters(GOOD)


def test_zero_steps_is_accepted() -> None:
    assert pt.parse_hyperparameters({**GOOD, "steps": "0"}).steps == 0


@pytest.mark.parametrize(
    ("change", "words"),
    [
        # K: the drafter check's range, 1..15.
        ({"k": "0"}, "k=0 is out of range (1..15)"),
        ({"k": "16"}, "k=16 is out of range (1..15)"),
        ({"layers": "5"}, "layers=5 is out of range (1..4)"),
        ({"k": "three"}, "k='three' is not an integer"),
        ({"steps": "-1"}, "steps=-1 is out of range (>= 0)"),
        ({"epochs": "2"}, "exactly one of the hyperparameters steps and epochs"),
        ({"steps": None}, "exactly one of the hyperparameters steps and epochs"),
        ({"max_new_tokens": "4097"}, "max_new_tokens=4097 is out of range (1..4096)"),
        ({"target_layer_ids": "1,2,3"}, "is not a JSON list of layer numbers"),
        ({"target_layer_ids": "[]"}, "is not a JSON list of layer numbers"),
        ({"val_fraction": "1"}, "val_fraction=1.0 is not in (0, 1)"),
        ({"learning_rate": "0.1"}, "unknown hyperparameter(s) learning_rate"),
    ],
)
def test_bad_hyperparameters_are_bad_input(change: dict, words: str) -> None:
    hp = {k: v for k, v in {**GOOD, **change}.items() if v is not None}
    with pytest.raises(pt.TrainError) as err:
        pt.parse_hyperparameters(hp)
    assert err.value.code == 2
    assert words in str(err.value)


def test_prompts_and_conversations_are_read_in_order(tmp_path: Path) -> None:
    (tmp_path / "b.jsonl").write_text(json.dumps({"prompt": "second file"}) + "\n")
    conv = [{"role": "user", "content": "hi"}]
    (tmp_path / "a.jsonl").write_text(
        json.dumps({"prompt": "one"}) + "\n\n" + json.dumps({"messages": conv}) + "\n"
    )
    assert pt.read_prompts(tmp_path) == [
        {"prompt": "one"},
        {"messages": conv},
        {"prompt": "second file"},
    ]


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "has no prompts"),
        (json.dumps({"prompt": "   "}) + "\n", "has no prompts"),
        ("not json\n", "line 1 is not JSON"),
        (json.dumps({"text": "x"}) + "\n", 'line 1 is neither {"prompt"'),
        (json.dumps({"messages": [{"role": "user"}]}) + "\n", 'line 1 is neither {"prompt"'),
    ],
)
def test_data_without_prompts_is_bad_input(tmp_path: Path, text: str, words: str) -> None:
    (tmp_path / "d.jsonl").write_text(text)
    with pytest.raises(pt.TrainError) as err:
        pt.read_prompts(tmp_path)
    assert err.value.code == 2
    assert words in str(err.value)


def test_a_channel_without_jsonl_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "d.csv").write_text("prompt\nx\n")
    with pytest.raises(pt.TrainError, match="has no .jsonl file"):
        pt.read_prompts(tmp_path)


def test_layer_ids_must_fit_the_target() -> None:
    # vLLM's convention: aux id L is the input of decoder layer L, so 1..n-1 on an n-layer
    # target (0 would be the embeddings, n the final norm's input, which speculators adds).
    assert pt.check_layer_ids([1, 2, 3], 4) == [1, 2, 3]
    with pytest.raises(pt.TrainError, match=r"each in 1\.\.3"):
        pt.check_layer_ids([1, 2, 4], 4)
    # speculators' default [2, n//2, n-3] is [2, 2, 1] on the 4-layer tiny target (facts:
    # invalid there): a repeated id is refused.
    with pytest.raises(pt.TrainError, match=r"do not fit a 4-layer"):
        pt.check_layer_ids(None, 4)


def test_the_split_is_speculators_and_both_parts_are_non_empty() -> None:
    # speculators' ArrowDataset: split_idx = int(rows * train_ratio).
    assert pt.split_counts(256, 0.1) == (230, 26)
    with pytest.raises(pt.TrainError, match="give more prompts"):
        pt.split_counts(1, 0.1)


def test_per_depth_accuracy_is_read_from_speculators_val_metrics() -> None:
    val = {
        "loss_epoch": 0.1,
        "full_acc_epoch": 0.3,
        "position_1_acc_epoch": 0.25,
        "position_0_acc_epoch": 0.5,
        "position_2_acc_epoch": 0.125,
    }
    assert pt.per_depth(val) == [0.5, 0.25, 0.125]


def _job(tmp_path: Path, hp: dict, rows: str) -> dict[str, str]:
    """A job laid out as SageMaker's File mode does under /opt/ml (here `tmp_path`)."""
    config, data = tmp_path / "input" / "config", tmp_path / "input" / "data"
    config.mkdir(parents=True)
    (config / "hyperparameters.json").write_text(json.dumps(hp))
    (data / "train").mkdir(parents=True)
    (data / "train" / "data.jsonl").write_text(rows)
    (data / "target").mkdir()
    (data / "target" / "config.json").write_text(
        json.dumps({"num_hidden_layers": 4, "vocab_size": 512})
    )
    return {"PEAGLE_TRAIN_ML_ROOT": str(tmp_path)}


@pytest.mark.parametrize(
    ("change", "rows", "words"),
    [
        ({"k": "16"}, '{"prompt": "x"}\n' * 20, "k=16 is out of range (1..15)"),
        ({}, "", "has no prompts"),
        ({"target_layer_ids": "[1, 2, 4]"}, '{"prompt": "x"}\n' * 20, "do not fit a 4-layer"),
        ({"draft_vocab_size": "1024"}, '{"prompt": "x"}\n' * 20, "larger than the target's"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_the_failure_file(
    tmp_path: Path, change: dict, rows: str, words: str
) -> None:
    env = _job(tmp_path, {**GOOD, **change}, rows)
    run = subprocess.run(
        [sys.executable, str(ENTRYPOINT)],
        env={"PATH": "/usr/bin:/bin", **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("peagle-train: error: "), run.stderr
    assert words in lines[0]
    # SageMaker shows /opt/ml/output/failure as the job's FailureReason.
    assert (tmp_path / "output" / "failure").read_text().strip() == lines[0]
    assert not (tmp_path / "model").exists()  # nothing written as a head


def test_the_source_dir_imports_no_peagle() -> None:
    """The training image has no peagle: the scripts import the standard library, the ML
    stack the image and requirements.txt provide, and each other."""
    allowed = {"torch", "transformers", "speculators", "vllm", "datasets", "safetensors"}
    allowed |= {p.stem for p in SOURCE.glob("*.py")}
    for path in SOURCE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and node.level == 0
                else []
            )
            for name in names:
                top = name.split(".")[0]
                assert top in allowed or top in sys.stdlib_module_names, (path.name, name)


def _lines(name: str) -> list[str]:
    text = (SOURCE / name).read_text()
    return [x.strip() for x in text.splitlines() if x.strip() and not x.startswith("#")]


def test_requirements_pin_speculators() -> None:
    assert _lines("requirements.txt") == ["speculators==0.9.0"]


def test_constraints_hold_pip_to_the_vllm_images_torch_and_transformers() -> None:
    """vLLM 0.31.0's metadata (the training image's vLLM) pins torch==2.13.0 and
    transformers>=5.10.4,<5.18.0; speculators 0.9.0 allows torch >=2.9.0,<=2.14.1 and
    transformers >=5.0.0,<=5.19.0, so both pins are inside its ranges and pip keeps them."""
    pins = {re.split(r"[<>=!~]", x, maxsplit=1)[0].lower(): x for x in _lines("constraints.txt")}
    assert pins["torch"] == "torch==2.13.0"
    assert pins["transformers"] == "transformers>=5.10.4,<5.18.0"
    assert "speculators" not in pins  # requirements.txt's own pin decides it


def test_paths_are_opt_ml_else_a_toolkits_variables(tmp_path: Path) -> None:
    """SageMaker's fixed layout is the primary path (the vLLM DLC sets no SM_* variables); a
    toolkit image's variables (SM_*) name every directory when set. The job's scratch lives
    under its output dir, so two jobs on one machine never share it."""
    env = {
        "SM_INPUT_CONFIG_DIR": str(tmp_path / "c"),
        "SM_CHANNEL_TARGET": str(tmp_path / "t"),
        "SM_CHANNEL_TRAIN": str(tmp_path / "d"),
        "SM_MODEL_DIR": str(tmp_path / "m"),
        "SM_OUTPUT_DIR": str(tmp_path / "o"),
    }
    p = pt.Paths.from_env(env)
    assert (p.config, p.target, p.train, p.model, p.output, p.work) == (
        tmp_path / "c",
        tmp_path / "t",
        tmp_path / "d",
        tmp_path / "m",
        tmp_path / "o",
        tmp_path / "o" / "peagle-work",
    )
    # SageMaker's fixed layout.
    d = pt.Paths.from_env({})
    assert (d.config, d.target, d.train, d.model, d.output) == (
        Path("/opt/ml/input/config"),
        Path("/opt/ml/input/data/target"),
        Path("/opt/ml/input/data/train"),
        Path("/opt/ml/model"),
        Path("/opt/ml/output"),
    )


@pytest.mark.parametrize(
    ("code", "words"),
    [(2, "speculators rejected the training arguments (exit 2)"),
     (1, "speculators exited; see its log (exit 1)")],
)  # fmt: skip
def test_speculators_exiting_is_reported_by_its_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, words: str
) -> None:
    """argparse exits 2 on bad arguments; speculators' generate_offline_data and others
    `sys.exit(1)` on any failure, which is not an argument problem."""

    def ends(_paths: object) -> None:
        raise SystemExit(code)

    monkeypatch.setattr(pt, "run", ends)
    monkeypatch.setenv("PEAGLE_TRAIN_ML_ROOT", str(tmp_path))
    assert pt.main([]) == code
    assert words in (tmp_path / "output" / "failure").read_text()


def test_sigterm_stops_the_job_with_143_not_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """StopTrainingJob sends SIGTERM to the container's main process, the `exec`ed python
    (PID 1 ignores SIGTERM unless it has a handler): the run unwinds and exits 128+15,
    writing no failure file (the job is Stopped, not Failed)."""
    import os
    import signal

    def run(_paths: object) -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the run")

    monkeypatch.setenv("PEAGLE_TRAIN_ML_ROOT", str(tmp_path))
    monkeypatch.setattr(pt, "run", run)
    before = signal.getsignal(signal.SIGTERM)
    try:
        assert pt.main([]) == 143
    finally:
        signal.signal(signal.SIGTERM, before)
    assert "stopped (SIGTERM)" in capsys.readouterr().err
    assert not (tmp_path / "output" / "failure").exists()
