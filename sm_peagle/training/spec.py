"""`TrainSpec`: the arguments of `drafter train`, each checked before anything is read or
sent (SpecError, exit 2 in the CLI, one line naming the parameter and the fix).

The ranges and where they come from:
- `k` 1..15: the range issue 40's design fixes for training. Deploy takes K up to 128
  (vLLM's rejection-sampler limit), but a head serves the K it was trained for, each
  depth costs a parallel group in every training step, and the published heads train
  K <= 10 (gpt-oss-20b's: 10);
- `layers` 1..4: the published P-EAGLE heads have 4 layers (facts 1), the CPU-trained one
  1 (facts 14);
- `max_new_tokens` 1..4096: the length of each continuation the target writes;
- `max_runtime` 1 s..28 days: CreateTrainingJob's StoppingCondition.MaxRuntimeInSeconds
  (the SageMaker API reference: "The maximum value is 28 days"; botocore's model gives
  only its minimum, 1);
- `instance_type`: botocore's TrainingInstanceType enum, and a family the training image
  runs on (TRAINING_FAMILIES: CUDA 13.0, x86, bf16).
Pure: no AWS, no file reads (the data and the target are `training/checks.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import Param, SpecError, text

__all__ = [
    "DEFAULT_INSTANCE",
    "DEFAULT_MAX_RUNTIME",
    "K_RANGE",
    "LAYERS_RANGE",
    "MAX_NEW_TOKENS_RANGE",
    "MAX_RUNTIME_LIMIT",
    "MIN_VOLUME_GB",
    "TRAINING_FAMILIES",
    "TrainSpec",
    "check_train_args",
]

K_RANGE = (1, 15)
LAYERS_RANGE = (1, 4)
MAX_NEW_TOKENS_RANGE = (1, 4096)
# StoppingCondition.MaxRuntimeInSeconds: at most 28 days (SageMaker API reference).
MAX_RUNTIME_LIMIT = 28 * 24 * 3600
DEFAULT_MAX_RUNTIME = 6 * 3600
DEFAULT_INSTANCE = "ml.g7e.2xlarge"
DEFAULT_MAX_NEW_TOKENS = 256
DEFAULT_VAL_FRACTION = 0.1
# The job's VolumeSizeInGB unless its disk estimate (training/checks.py) asks for more.
MIN_VOLUME_GB = 200
# The families (botocore's TrainingInstanceType) the training image runs on: AWS's vLLM
# SageMaker DLC is CUDA 13.0 on x86, and CUDA 13 supports compute capability 7.5 and up
# (Turing onwards: the CUDA 13.0 release notes drop Maxwell, Pascal and Volta). A10G (g5)
# 8.6, L4 (g6) and L40S (g6e) 8.9, RTX PRO 6000 Blackwell (g7e) 12.0, A100 (p4d, p4de)
# 8.0, H100/H200 (p5, p5e, p5en) 9.0, B200 (p6-b200) 10.0, B300 (p6-b300) 10.3; every
# one has bf16, which speculators trains in.
TRAINING_FAMILIES = (
    "g5", "g6", "g6e", "g7e", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "p6-b300",
)  # fmt: skip
# The GPU families in the enum the image cannot run on, and why.
_REFUSED = {
    "p2": "has Kepler GPUs (K80), which CUDA 13 (the training image's) no longer supports",
    "p3": "has Volta GPUs (V100), which CUDA 13 (the training image's) no longer supports",
    "p3dn": "has Volta GPUs (V100), which CUDA 13 (the training image's) no longer supports",
    "g4dn": "has T4 GPUs, which have no bfloat16, the precision the trainer uses",
    "p6e-gb200": "is Arm (Grace CPUs); the training image is x86",
}


@dataclass(frozen=True, kw_only=True)
class TrainSpec:
    """What one `drafter train` job is: the target, the data and how to train, checked.
    Made by `check_train_args` (which raises SpecError with the fix); an unknown key is a
    TypeError. A dataclass, not a pydantic model: `peagle --help` must not load pydantic."""

    target: str
    data: str
    k: int = 3
    layers: int = 1
    draft_vocab_size: int | None = None
    steps: int | None = None
    epochs: int | None = None
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    instance_type: str = DEFAULT_INSTANCE
    role: str | None = None
    bucket: str | None = None
    image: str | None = None
    max_runtime: int = DEFAULT_MAX_RUNTIME
    seed: int = 0
    val_fraction: float = DEFAULT_VAL_FRACTION
    deploy: bool = False
    # Set from the disk estimate once the data and the target are read (`plan_disk`).
    volume_gb: int = MIN_VOLUME_GB


def _int(name: str, value: Any, lo: int, hi: int | None, example: int) -> int:
    """`value` if it is an integer in lo..hi (hi None: no upper bound), else SpecError."""
    rule = f"an integer {lo}..{hi}" if hi is not None else f"an integer >= {lo}"
    if isinstance(value, bool) or not isinstance(value, int):
        problem = text("{v!r} is not an integer", v=value)
    elif value < lo or (hi is not None and value > hi):
        problem = text("{v} is out of range ({rule})", v=value, rule=rule)
    else:
        return value
    raise SpecError(
        text("{p}: {problem}", p=Param(name), problem=problem),
        remedy=text("give e.g. {p}", p=Param(name, example)),
        field=name,
        value=value,
        rule=rule,
    )


def check_instance_type(instance_type: Any) -> str:
    """A SageMaker training instance type of a family the training image runs on
    (TRAINING_FAMILIES), or SpecError saying why not."""
    from ..planning.steps.aws_shapes import shape_enum

    known = isinstance(instance_type, str) and instance_type in shape_enum(
        "sagemaker", "TrainingInstanceType"
    )
    family = instance_type.split(".")[1] if known else None
    if family in TRAINING_FAMILIES:
        return instance_type
    if not known:
        why = "is not a SageMaker training instance type"
    elif family in _REFUSED:
        why = _REFUSED[family]
    elif family.startswith(("g", "p")):
        why = "is not a family the training image (CUDA 13.0, x86) is known to run on"
    else:
        why = "has no NVIDIA GPU; the trainer needs CUDA"
    raise SpecError(
        text("{p}: {v!r} {why}", p=Param("instance_type"), v=instance_type, why=why),
        remedy=text(
            "give e.g. {p} (families {f})",
            p=Param("instance_type", DEFAULT_INSTANCE),
            f=", ".join(TRAINING_FAMILIES),
        ),  # fmt: skip
        field="instance_type",
        value=instance_type,
        rule="a TrainingInstanceType of family " + ", ".join(TRAINING_FAMILIES),
    )


def check_train_args(
    target: Any,
    *,
    data: Any,
    k: Any = 3,
    layers: Any = 1,
    draft_vocab_size: Any = None,
    steps: Any = None,
    epochs: Any = None,
    max_new_tokens: Any = DEFAULT_MAX_NEW_TOKENS,
    instance_type: Any = DEFAULT_INSTANCE,
    role: Any = None,
    bucket: Any = None,
    image: Any = None,
    max_runtime: Any = DEFAULT_MAX_RUNTIME,
    seed: Any = 0,
    deploy: bool = False,
) -> TrainSpec:
    """Every argument of `drafter_train` checked on its own (no file or AWS read), in the
    order a user reads them; the first bad one raises SpecError naming it."""
    if not isinstance(target, str) or not target.strip():
        raise SpecError(
            text("{p}: a target model is needed", p=Param("target")),
            remedy="give a catalog alias, an s3://bucket/prefix/ or a local directory",
            field="target",
            value=target,
        )
    if not isinstance(data, str) or not data.strip():
        raise SpecError(
            text("{p}: training data is needed (a jsonl of prompts)", p=Param("data")),
            remedy=text("give {p} (local or s3://)", p=Param("data", "prompts.jsonl")),
            field="data",
            value=data,
        )
    _int("k", k, *K_RANGE, 3)
    _int("layers", layers, *LAYERS_RANGE, 1)
    if draft_vocab_size is not None:
        _int("draft_vocab_size", draft_vocab_size, 1, None, 32000)
    if steps is not None and epochs is not None:
        raise SpecError(
            text("give {s} or {e}, not both", s=Param("steps"), e=Param("epochs")),
            remedy=text("keep one, e.g. {s}", s=Param("steps", 2000)),
            field="epochs",
            value=epochs,
        )
    if steps is None and epochs is None:
        raise SpecError(
            text("how long to train: give {s} or {e}", s=Param("steps"), e=Param("epochs")),
            remedy=text("e.g. {s}", s=Param("steps", 2000)),
            field="steps",
            value=None,
        )
    if steps is not None:
        _int("steps", steps, 0, None, 2000)
    if epochs is not None:
        _int("epochs", epochs, 1, None, 1)
    _int("max_new_tokens", max_new_tokens, *MAX_NEW_TOKENS_RANGE, DEFAULT_MAX_NEW_TOKENS)
    check_instance_type(instance_type)
    if role is not None and (not isinstance(role, str) or not role.startswith("arn:")):
        raise SpecError(
            text("{p}: {v!r} is not an IAM role ARN", p=Param("role"), v=role),
            remedy=text("give {p}", p=Param("role", "arn:aws:iam::<account>:role/<name>")),
            field="role",
            value=role,
        )
    if bucket is not None:
        _check_bucket(bucket)
    if image is not None and (not isinstance(image, str) or "/" not in image or " " in image):
        raise SpecError(
            text("{p}: {v!r} is not an image URI", p=Param("image"), v=image),
            remedy="give <account>.dkr.ecr.<region>.amazonaws.com/<repo>:<tag>",
            field="image",
            value=image,
        )
    runtime = _runtime(max_runtime)
    _int("seed", seed, 0, None, 0)
    return TrainSpec(
        target=target.strip(),
        data=data.strip(),
        k=k,
        layers=layers,
        draft_vocab_size=draft_vocab_size,
        steps=steps,
        epochs=epochs,
        max_new_tokens=max_new_tokens,
        instance_type=instance_type,
        role=role,
        bucket=bucket,
        image=image,
        max_runtime=runtime,
        seed=seed,
        deploy=bool(deploy),
    )


def _check_bucket(bucket: Any) -> None:
    # S3's bucket naming rules: 3-63 lower-case letters, digits, dots and hyphens.
    if not isinstance(bucket, str) or not re.fullmatch(
        r"[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]", bucket
    ):
        raise SpecError(
            text("{p}: {v!r} is not an S3 bucket name", p=Param("bucket"), v=bucket),
            remedy="give a bucket name (3-63 lower-case letters, digits, dots, hyphens)",
            field="bucket",
            value=bucket,
        )


_DURATION = re.compile(r"(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s?)?")


def _seconds(value: Any) -> float | None:
    """A duration in seconds: a number, or "6h", "90m", "1h30m", "2d", "600s", "600"."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        return None
    m = _DURATION.fullmatch(value.strip())
    if not value.strip() or m is None or not any(m.groups()):
        return None
    d, h, mins, s = (int(g or 0) for g in m.groups())
    return float(((d * 24 + h) * 60 + mins) * 60 + s)


def _runtime(value: Any) -> int:
    rule = f"1 s to 28 days ({MAX_RUNTIME_LIMIT} s), CreateTrainingJob's MaxRuntimeInSeconds"
    secs = _seconds(value)
    if secs is None or secs < 1 or secs > MAX_RUNTIME_LIMIT:
        raise SpecError(
            text(
                "{p}: {v!r} is not a duration of {rule}", p=Param("max_runtime"), v=value, rule=rule
            ),  # fmt: skip
            remedy=text("give e.g. {p}", p=Param("max_runtime", "6h")),
            field="max_runtime",
            value=value,
            rule=rule,
        )
    return int(secs)
