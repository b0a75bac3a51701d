"""Train a P-EAGLE head inside a SageMaker training job, with `speculators`.

The job's ContainerEntrypoint (sm_peagle/training/request.py) pip-installs
`requirements.txt` (speculators 0.9.0) under `constraints.txt` and runs this file with
`python3`. It needs only the standard library, torch, transformers and speculators (and
vLLM for the GPU backend): it never imports peagle (the product is not in the training
image).

Inputs, SageMaker's fixed layout (the image has no training toolkit, so no SM_* variables
are set; each path still follows one when it is, as the toolkit's images set them):
  hyperparameters  /opt/ml/input/config/hyperparameters.json  ($SM_INPUT_CONFIG_DIR)
  target model     /opt/ml/input/data/target                  ($SM_CHANNEL_TARGET)
  prompts (jsonl)  /opt/ml/input/data/train                   ($SM_CHANNEL_TRAIN)
  this source      /opt/ml/input/data/code                    (the `code` channel)
Outputs:
  the head         /opt/ml/model ($SM_MODEL_DIR): config.json + model.safetensors +
                   peagle-training-report.json
  on failure       /opt/ml/output/failure ($SM_OUTPUT_DIR), which SageMaker shows as the
                   job's FailureReason; exit 2 for bad input, 1 otherwise.

Steps: prompts -> the target's own greedy continuations -> speculators' prepared dataset
(`prepare-data` on rows carrying input_ids + loss_mask) -> hidden states in speculators'
offline format (`hidden_states/hs_{i}.safetensors`) -> speculators' trainer (P-EAGLE, K
depths) -> the head and the report. Continuations and hidden states go through a
*backend*: one registered under the entry point group `peagle_train.backends` (the
sandbox's CPU backend), else the GPU default (`peagle_train_gpu.py`, beside this file),
which uses vLLM and speculators as upstream does on GPUs.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PREFIX = "peagle-train:"
REPORT_FILE = "peagle-training-report.json"
BACKEND_GROUP = "peagle_train.backends"
GPU = "gpu"  # the default backend's name (peagle_train_gpu.py)
# The drafter check's K range (vLLM's num_speculative_tokens for P-EAGLE) and the layer
# counts peagle offers; the product checks the same bounds before it creates the job.
K_RANGE = (1, 15)
LAYERS_RANGE = (1, 4)
MAX_NEW_TOKENS_RANGE = (1, 4096)
# A toolkit image (image=) passes its own settings as hyperparameters too: not ours to judge.
_TOOLKIT_PREFIX = "sagemaker_"
_KNOWN = {
    *("k", "layers", "draft_vocab_size", "steps", "epochs", "max_new_tokens", "seed"),
    *("target_layer_ids", "val_fraction", "lr", "total_seq_len", "backend"),
}


class TrainError(Exception):
    """A failure with one line for the log and the failure file; `code` 2 = bad input."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class Paths:
    config: Path
    target: Path
    train: Path
    model: Path
    output: Path
    work: Path

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Paths:
        """SageMaker's fixed /opt/ml layout (the primary path: the vLLM DLC sets no SM_*
        variables), or a toolkit's SM_* variables when an image sets them."""
        env = dict(os.environ if env is None else env)
        ml = Path(env.get("PEAGLE_TRAIN_ML_ROOT", "/opt/ml"))
        output = Path(env.get("SM_OUTPUT_DIR", ml / "output"))
        return cls(
            config=Path(env.get("SM_INPUT_CONFIG_DIR", ml / "input" / "config")),
            target=Path(env.get("SM_CHANNEL_TARGET", ml / "input" / "data" / "target")),
            train=Path(env.get("SM_CHANNEL_TRAIN", ml / "input" / "data" / "train")),
            model=Path(env.get("SM_MODEL_DIR", ml / "model")),
            output=output,
            # Scratch (prepared dataset, hidden states, checkpoints), the job's own: never
            # uploaded (SageMaker uploads output/data only), removed after a success.
            work=Path(env.get("PEAGLE_TRAIN_WORK_DIR", output / "peagle-work")),
        )


@dataclass(frozen=True)
class Params:
    k: int
    layers: int
    steps: int | None
    epochs: int | None
    max_new_tokens: int
    seed: int
    target_layer_ids: list[int] | None
    val_fraction: float
    draft_vocab_size: int | None = None
    lr: float = 1e-3
    total_seq_len: int = 2048
    backend: str | None = None
    extra: dict[str, str] = field(default_factory=dict)


def log(message: str) -> None:
    print(f"{PREFIX} {message}", flush=True)


def _int(hp: dict[str, Any], name: str, lo: int, hi: int | None, default: int | None) -> int:
    raw = hp.get(name)
    if raw is None or raw == "":
        if default is None:
            raise TrainError(f"hyperparameter {name} is required", 2)
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise TrainError(f"hyperparameter {name}={raw!r} is not an integer", 2) from None
    if value < lo or (hi is not None and value > hi):
        span = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise TrainError(f"hyperparameter {name}={value} is out of range ({span})", 2)
    return value


def parse_hyperparameters(hp: dict[str, Any]) -> Params:
    """Check and type the job's hyperparameters (SageMaker hands every value as a string)."""
    unknown = sorted(k for k in hp if k not in _KNOWN and not k.startswith(_TOOLKIT_PREFIX))
    if unknown:
        raise TrainError(
            f"unknown hyperparameter(s) {', '.join(unknown)}; known: {', '.join(sorted(_KNOWN))}",
            2,
        )
    has_steps = hp.get("steps") not in (None, "")
    has_epochs = hp.get("epochs") not in (None, "")
    if has_steps == has_epochs:
        raise TrainError("give exactly one of the hyperparameters steps and epochs", 2)
    steps = _int(hp, "steps", 0, None, None) if has_steps else None
    epochs = _int(hp, "epochs", 1, None, None) if has_epochs else None
    layer_ids: list[int] | None = None
    if hp.get("target_layer_ids") not in (None, ""):
        try:
            layer_ids = json.loads(str(hp["target_layer_ids"]))
        except ValueError:
            layer_ids = None
        if (
            not isinstance(layer_ids, list)
            or not layer_ids
            or not all(isinstance(i, int) and not isinstance(i, bool) for i in layer_ids)
            or any(i < 0 for i in layer_ids)
        ):
            raise TrainError(
                f"hyperparameter target_layer_ids={hp['target_layer_ids']!r} is not a JSON "
                "list of layer numbers (e.g. [1, 2, 3])",
                2,
            )
    try:
        val_fraction = float(str(hp.get("val_fraction", "0.1")))
        lr = float(str(hp.get("lr", "0.001")))
    except ValueError as exc:
        raise TrainError(f"hyperparameter is not a number: {exc}", 2) from None
    if not 0.0 < val_fraction < 1.0:
        raise TrainError(f"hyperparameter val_fraction={val_fraction} is not in (0, 1)", 2)
    if not (lr > 0 and math.isfinite(lr)):
        raise TrainError(f"hyperparameter lr={lr} is not a positive number", 2)
    draft_vocab = (
        _int(hp, "draft_vocab_size", 1, None, None)
        if hp.get("draft_vocab_size") not in (None, "")
        else None
    )
    return Params(
        k=_int(hp, "k", *K_RANGE, 3),
        layers=_int(hp, "layers", *LAYERS_RANGE, 1),
        steps=steps,
        epochs=epochs,
        max_new_tokens=_int(hp, "max_new_tokens", *MAX_NEW_TOKENS_RANGE, 256),
        seed=_int(hp, "seed", 0, None, 0),
        target_layer_ids=layer_ids,
        val_fraction=val_fraction,
        draft_vocab_size=draft_vocab,
        lr=lr,
        total_seq_len=_int(hp, "total_seq_len", 16, None, 2048),
        backend=str(hp["backend"]) if hp.get("backend") else None,
        extra={k: str(v) for k, v in hp.items() if k.startswith(_TOOLKIT_PREFIX)},
    )


def read_hyperparameters(config_dir: Path) -> dict[str, Any]:
    path = config_dir / "hyperparameters.json"
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise TrainError(f"no hyperparameters at {path}", 2) from None
    except ValueError as exc:
        raise TrainError(f"{path} is not JSON: {exc}", 2) from None
    if not isinstance(doc, dict):
        raise TrainError(f"{path} is not a JSON object", 2)
    return doc


def read_prompts(train_dir: Path) -> list[dict[str, Any]]:
    """The rows of every *.jsonl in the channel: {"prompt": str} or {"messages": [...]}
    (the rule is `prompt_rows.parse_row`, beside this file, which peagle's preflight reads).

    Returns [{"prompt": str}] or [{"messages": list}] in file order (files sorted by name).
    Blank lines are skipped; anything else that is not such a row is bad input."""
    import prompt_rows  # beside this file: the script's directory is on sys.path

    if not train_dir.is_dir():
        raise TrainError(f"the train channel {train_dir} is missing", 2)
    files = sorted(p for p in train_dir.rglob("*.jsonl") if p.is_file())
    if not files:
        raise TrainError(f"the train channel {train_dir} has no .jsonl file", 2)
    rows: list[dict[str, Any]] = []
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            try:
                row = prompt_rows.parse_row(line)
            except prompt_rows.RowError as exc:
                raise TrainError(f"{path.name} line {n} {exc}", 2) from None
            if row is not None:
                rows.append(row)
    if not rows:
        raise TrainError(f"the training data in {train_dir} has no prompts", 2)
    return rows


def read_target_config(target_dir: Path) -> dict[str, Any]:
    path = target_dir / "config.json"
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise TrainError(f"the target channel {target_dir} has no config.json", 2) from None
    except ValueError as exc:
        raise TrainError(f"{path} is not JSON: {exc}", 2) from None
    return doc.get("text_config", doc) if isinstance(doc, dict) else {}


def check_layer_ids(layer_ids: list[int] | None, num_layers: int) -> list[int]:
    """The aux layer ids (vLLM's convention: id L is the input of decoder layer L), each in
    1..num_layers-1; speculators' default [2, n//2, n-3] when none are given."""
    ids = layer_ids if layer_ids is not None else [2, num_layers // 2, num_layers - 3]
    bad = [i for i in ids if not 0 < i < num_layers]
    if bad or len(set(ids)) != len(ids):  # the default repeats ids on small targets
        raise TrainError(
            f"target_layer_ids {ids} do not fit a {num_layers}-layer target "
            f"(distinct, each in 1..{num_layers - 1})",
            2,
        )
    return list(ids)


def split_counts(rows: int, val_fraction: float) -> tuple[int, int]:
    """speculators' split (`prompt_rows.split_counts`, which peagle's preflight reads): the
    first int(rows * (1 - val_fraction)) rows train, the rest validate. Both non-empty."""
    import prompt_rows  # beside this file

    counts = prompt_rows.split_counts(rows, val_fraction)
    if counts is None:
        raise TrainError(
            f"{rows} usable rows cannot be split with val_fraction={val_fraction} "
            "(each split needs at least one row): give more prompts",
            2,
        )
    return counts


def write_failure(output_dir: Path, message: str) -> None:
    """SageMaker reads /opt/ml/output/failure into DescribeTrainingJob's FailureReason."""
    try:
        output_dir.mkdir(parents=True, exist_ok=True)
        (output_dir / "failure").write_text(message + "\n")
    except OSError:
        pass  # the log line still says it


# ---- backends ---------------------------------------------------------------------------


def find_backend(name: str | None) -> Any:
    """The backend registered under `peagle_train.backends` (by name, or the only one), else
    the GPU default. The sandbox's trainer venv registers `cpu`; the training image none."""
    from importlib.metadata import entry_points

    found = {ep.name: ep for ep in entry_points(group=BACKEND_GROUP)}
    if name and name != GPU:
        if name not in found:
            raise TrainError(
                f"backend {name!r} is not installed (installed: "
                f"{', '.join(sorted(found)) or 'none'}; default: {GPU})",
                2,
            )
        return found[name].load()
    if name == GPU or not found:
        from peagle_train_gpu import GpuBackend  # beside this file in the source dir

        return GpuBackend()
    if len(found) > 1:
        raise TrainError(f"several backends installed ({', '.join(sorted(found))}): name one", 2)
    return next(iter(found.values())).load()


# ---- the pipeline -----------------------------------------------------------------------


def _encode(tokenizer: Any, row: dict[str, Any]) -> list[int]:
    if "prompt" in row:
        return list(tokenizer(row["prompt"], add_special_tokens=True)["input_ids"])
    if getattr(tokenizer, "chat_template", None):
        ids = tokenizer.apply_chat_template(
            row["messages"], add_generation_prompt=True, tokenize=True
        )
        if isinstance(ids, dict) or hasattr(ids, "keys"):
            ids = ids["input_ids"]
        return list(ids)
    text = "\n".join(f"{m['role']}: {m['content']}" for m in row["messages"])
    return list(tokenizer(text, add_special_tokens=True)["input_ids"])


def build_dataset(
    paths: Paths, params: Params, rows: list[dict[str, Any]], backend: Any
) -> tuple[Path, int]:
    """Continuations -> speculators' prepared dataset (its own prepare-data). Returns the
    dataset dir and its row count."""
    from speculators.cli.prepare_data import prepare_data
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(paths.target))
    prompts = [_encode(tokenizer, r) for r in rows]
    prompts = [p[: params.total_seq_len - 1] for p in prompts if p]
    t0 = time.monotonic()
    conts = backend.continuations(paths.target, prompts, params.max_new_tokens, params.seed)
    log(f"continuations {len(conts)} in {time.monotonic() - t0:.1f} s")
    raw = paths.work / "rows.jsonl"
    with raw.open("w") as fh:
        for p, c in zip(prompts, conts, strict=True):
            if not c:
                continue  # nothing to learn from: the target stopped at once
            ids = (p + c)[: params.total_seq_len]
            mask = ([0] * len(p) + [1] * len(c))[: params.total_seq_len]
            fh.write(json.dumps({"input_ids": ids, "loss_mask": mask}) + "\n")
    dataset = paths.work / "dataset"
    prepare_data(
        model=str(paths.target),
        data=[str(raw)],
        output=str(dataset),
        seq_length=params.total_seq_len,
        seed=params.seed,
        num_preprocessing_workers=1,
        skip_token_freq=params.draft_vocab_size is None,
    )
    from datasets import load_from_disk

    n = len(load_from_disk(str(dataset)))
    if n == 0:
        raise TrainError("no usable rows: every continuation was empty", 2)
    return dataset, n


class _Metrics:
    """Collects speculators' metric records (the `speculators.metrics` logger's dicts)."""

    def __init__(self) -> None:
        import logging

        self.train_losses: list[float] = []
        self.val: dict[str, float] = {}
        self.handler = logging.Handler()
        self.handler.emit = self._emit  # type: ignore[method-assign]

    def _emit(self, record: Any) -> None:
        msg = record.msg
        if not isinstance(msg, dict):
            return
        if isinstance(msg.get("train"), dict) and "loss" in msg["train"]:
            loss = float(msg["train"]["loss"])
            self.train_losses.append(loss)
            log(f"step {int(msg.get('global_step', 0)) + 1} loss {loss:.4f}")
        if isinstance(msg.get("val"), dict):
            self.val = {k: float(v) for k, v in msg["val"].items()}
            accs = [f"{a:.3f}" for a in per_depth(self.val)]
            log(f"eval epoch {int(msg.get('epoch', 0)) + 1} accuracy by depth {accs}")


def per_depth(val: dict[str, float]) -> list[float]:
    """speculators' validation accuracy per depth (`position_{d}_acc_epoch`), in order."""
    out: list[float] = []
    d = 0
    while f"position_{d}_acc_epoch" in val:
        out.append(val[f"position_{d}_acc_epoch"])
        d += 1
    return out


def train(paths: Paths, params: Params, dataset: Path, layer_ids: list[int], backend: Any):
    """speculators' own trainer, as `speculators train` runs it; returns the metrics."""
    import logging

    import speculators.train.cli as cli_mod
    from speculators.train.config import TrainConfig

    steps = params.steps
    argv = [
        "--speculator-type=peagle",
        f"--verifier-name-or-path={paths.target}",
        f"--data-path={dataset}",
        f"--save-path={paths.work / 'checkpoints'}",
        f"--log-dir={paths.work / 'logs'}",
        f"--num-layers={params.layers}",
        f"--num-depths={params.k}",
        "--target-layer-ids",  # argparse nargs: one argument per id
        *(str(i) for i in layer_ids),
        f"--total-seq-len={params.total_seq_len}",
        f"--train-data-ratio={1.0 - params.val_fraction}",
        f"--seed={params.seed}",
        # A zero-step run still runs one optimizer step, at learning rate 0: the weights stay
        # the initial ones and validation measures the untrained head.
        f"--lr={params.lr if steps != 0 else 0.0}",
        "--scheduler-type=none" if steps == 0 else "--scheduler-type=linear",
        "--log-freq=1",
        "--no-resume-from-checkpoint",
        "--num-workers=0",
        "--logger=",
    ]
    if params.draft_vocab_size is not None:
        argv.append(f"--draft-vocab-size={params.draft_vocab_size}")
    if steps is not None:
        argv += [f"--max-steps={max(steps, 1)}", "--epochs=1"]
    else:
        argv.append(f"--epochs={params.epochs}")
    argv += backend.train_args()
    backend.patch()
    if steps is not None:
        _epochs_cover_steps(cli_mod, max(steps, 1))
    metrics = _Metrics()
    setup = cli_mod.setup_metric_logger

    def setup_then_listen(*args: Any, **kwargs: Any) -> None:
        # speculators configures its metric logger with dictConfig (replacing handlers):
        # listen once it has.
        setup(*args, **kwargs)
        logging.getLogger("speculators.metrics").addHandler(metrics.handler)

    cli_mod.setup_metric_logger = setup_then_listen
    cfg = TrainConfig.resolve(argv)
    cli_mod.main(cfg)
    return metrics


def _epochs_cover_steps(cli_mod: Any, steps: int) -> None:
    """speculators 0.9.0's run_training loops over `epochs` and each epoch stops at
    max_steps, so a step count past one epoch needs more epochs: count them from the train
    loader cli.main builds, and give that to the TrainerConfig it builds next."""
    make_loaders = cli_mod.create_train_val_loaders
    make_config = cli_mod.TrainerConfig
    per_epoch: list[int] = []

    def loaders(*args: Any, **kwargs: Any) -> Any:
        train_loader, val_loader = make_loaders(*args, **kwargs)
        per_epoch.append(max(1, len(train_loader)))
        return train_loader, val_loader

    def config(**kwargs: Any) -> Any:
        if per_epoch:
            kwargs["num_epochs"] = max(1, math.ceil(steps / per_epoch[-1]))
        return make_config(**kwargs)

    cli_mod.create_train_val_loaders = loaders
    cli_mod.TrainerConfig = config


def write_head(paths: Paths, params: Params, metrics: _Metrics, backend: Any, n: int) -> dict:
    """The last checkpoint (config.json + model.safetensors) and the report, to SM_MODEL_DIR."""
    ckpts = paths.work / "checkpoints"
    epochs = sorted(
        (d for d in ckpts.iterdir() if d.is_dir() and d.name.isdigit()), key=lambda d: int(d.name)
    )
    if not epochs:
        raise TrainError(f"speculators wrote no checkpoint under {ckpts}")
    last = epochs[-1]
    paths.model.mkdir(parents=True, exist_ok=True)
    for name in ("config.json", "model.safetensors"):
        if not (last / name).exists():
            raise TrainError(f"the checkpoint {last} has no {name}")
        shutil.copyfile(last / name, paths.model / name)
    acc = per_depth(metrics.val)
    n_train, n_val = split_counts(n, params.val_fraction)
    from importlib.metadata import version

    report = {
        "steps": params.steps if params.steps is not None else len(metrics.train_losses),
        "k": params.k,
        "per_depth_val_accuracy": [round(a, 6) for a in acc],
        "train_loss_first": metrics.train_losses[0] if metrics.train_losses else None,
        "train_loss_last": metrics.train_losses[-1] if metrics.train_losses else None,
        "samples": n_train,
        "val_samples": n_val,
        "speculators_version": version("speculators"),
        "backend": getattr(backend, "name", type(backend).__name__),
    }
    (paths.model / REPORT_FILE).write_text(json.dumps(report, indent=2) + "\n")
    return report


def run(paths: Paths) -> dict:
    params = parse_hyperparameters(read_hyperparameters(paths.config))
    rows = read_prompts(paths.train)
    cfg = read_target_config(paths.target)
    num_layers = int(cfg.get("num_hidden_layers") or 0)
    if num_layers < 2:
        raise TrainError(f"the target's config.json has num_hidden_layers={num_layers}", 2)
    layer_ids = check_layer_ids(params.target_layer_ids, num_layers)
    vocab = int(cfg.get("vocab_size") or 0)
    if params.draft_vocab_size is not None and vocab and params.draft_vocab_size > vocab:
        raise TrainError(
            f"draft_vocab_size={params.draft_vocab_size} is larger than the target's "
            f"vocabulary ({vocab})",
            2,
        )
    split_counts(len(rows), params.val_fraction)
    backend = find_backend(params.backend)
    log(
        f"{len(rows)} prompts, K={params.k}, layers={params.layers}, "
        f"target layers {layer_ids}, backend {getattr(backend, 'name', '?')}"
    )
    if paths.work.exists():
        shutil.rmtree(paths.work)
    paths.work.mkdir(parents=True)
    dataset, n = build_dataset(paths, params, rows, backend)
    split_counts(n, params.val_fraction)
    t0 = time.monotonic()
    backend.hidden_states(paths.target, dataset, layer_ids)
    log(f"hidden states {n} rows in {time.monotonic() - t0:.1f} s")
    t0 = time.monotonic()
    metrics = train(paths, params, dataset, layer_ids, backend)
    log(f"trained in {time.monotonic() - t0:.1f} s")
    report = write_head(paths, params, metrics, backend, n)
    from round_starts import add_to_report  # beside this file: what vLLM will count

    report = add_to_report(paths, params, dataset, backend, report)
    shutil.rmtree(paths.work, ignore_errors=True)  # hidden states can be large: keep only the head
    log(f"head written to {paths.model}: {json.dumps(report)}")
    return report


class Terminated(BaseException):
    """SIGTERM (StopTrainingJob): a BaseException, so no `except Exception` swallows it."""


def _terminated(_signum: int, _frame: object) -> None:
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    # Any arguments (ContainerArguments, or a toolkit's --name value pairs) are ignored:
    # the hyperparameters file is the one source, its values SageMaker's strings.
    del argv
    paths = Paths.from_env()
    # StopTrainingJob sends SIGTERM; as the container's PID 1 (`exec`) python would ignore
    # it without a handler (the kernel drops default-action signals to a namespace's init),
    # so the job would bill until SIGKILL. Raising unwinds the `finally`s that end vLLM.
    signal.signal(signal.SIGTERM, _terminated)
    try:
        run(paths)
    except Terminated:
        print(f"{PREFIX} stopped (SIGTERM)", file=sys.stderr, flush=True)
        return 143
    except TrainError as exc:
        message = f"{PREFIX} error: {exc}"
        print(message, file=sys.stderr, flush=True)
        write_failure(paths.output, message)
        return exc.code
    except SystemExit as exc:  # speculators ends the process itself (argparse: exit 2)
        code = exc.code if isinstance(exc.code, int) else 1
        if code:
            what = "rejected the training arguments" if code == 2 else "exited; see its log"
            message = f"{PREFIX} error: speculators {what} (exit {code})"
            print(message, file=sys.stderr, flush=True)
            write_failure(paths.output, message)
        return code
    except Exception as exc:  # the job's failure reason must say what broke, in one line
        import traceback

        traceback.print_exc()
        message = f"{PREFIX} error: {type(exc).__name__}: {exc}"
        print(message, file=sys.stderr, flush=True)
        write_failure(paths.output, message[:1000])
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
