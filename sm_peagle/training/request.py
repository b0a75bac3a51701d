"""The exact CreateTrainingJob request of a `drafter train` job, its name, its S3 layout
and the source files it runs. Pure: the caller uploads and sends.

The image (training/images.py: AWS's vLLM DLC) has no SageMaker training toolkit, so
there is no script mode: the source dir `sm_peagle/training/source/` is uploaded file by
file under `peagle/training/<job>/source/` and given to the job as a third File channel,
`code` (SageMaker copies it to `/opt/ml/input/data/code/`), and
`AlgorithmSpecification.ContainerEntrypoint` (botocore's TrainingContainerEntrypoint, up
to 100 strings) pip-installs `requirements.txt` under `constraints.txt` and runs
`peagle_train.py`, which reads SageMaker's fixed layout: the hyperparameters from
`/opt/ml/input/config/hyperparameters.json`, the channels from `/opt/ml/input/data/<name>/`.
Every hyperparameter is a string (SageMaker's rule: the map is `String -> String`, values
at most 2500 characters, at most 100 entries). The output is uncompressed
(`CompressionType: NONE`), so the head lands as files under
`<output path>/<job>/output/model/`, the prefix `deploy --drafter` takes.

Channels are `S3Prefix`: S3 data given as an object key also brings any object whose key
starts with it (`prompts.jsonl` brings `prompts.jsonl.bak.jsonl`); data uploaded from a
local file is alone under the job's own prefix.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from importlib import resources
from typing import Any

from .spec import TrainSpec

__all__ = [
    "CODE_CHANNEL",
    "CODE_DIR",
    "CONTAINER_ENTRYPOINT",
    "ENTRYPOINT",
    "JOB_PREFIX",
    "TrainingLayout",
    "build_request",
    "job_name",
    "source_files",
]

ENTRYPOINT = "peagle_train.py"
CODE_CHANNEL = "code"  # the source files, a File channel: /opt/ml/input/data/code/
CODE_DIR = f"/opt/ml/input/data/{CODE_CHANNEL}"
# The job's command. `constraints.txt` holds pip to the image's torch and vLLM's pins, so
# installing speculators adds packages and replaces none of the image's.
# PIP_BREAK_SYSTEM_PACKAGES: pip refuses an "externally managed" system python (PEP 668,
# Ubuntu 24.04's) without it; an older pip ignores the variable. `exec`: the trainer is the
# container's main process, so StopTrainingJob's SIGTERM reaches it (it installs a handler:
# a PID 1 without one ignores SIGTERM).
CONTAINER_ENTRYPOINT = [
    "bash",
    "-c",
    f"PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --quiet --no-input "
    f"-c {CODE_DIR}/constraints.txt -r {CODE_DIR}/requirements.txt "
    f"&& exec python3 {CODE_DIR}/{ENTRYPOINT}",
]
JOB_PREFIX = "peagle-train-"
TRAINING_PREFIX = "peagle/training/"
# The tag that names what a training job trains for (with peagle:managed and the
# operation's tags).
TARGET_TAG = "peagle:training-target"
_TAG_VALUE_BAD = re.compile(r"[^\w\s.:/=+\-@]")


def job_name(target: str, suffix: str | None = None) -> str:
    """`peagle-train-<target slug>-<8 hex>`: within SageMaker's 63 characters and its
    pattern `[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}` whatever the target is called."""
    base = target.rstrip("/").rsplit("/", 1)[-1] or "model"
    slug = re.sub(r"[^a-zA-Z0-9]+", "-", base).strip("-").lower() or "model"
    suffix = suffix or secrets.token_hex(4)
    room = 63 - len(JOB_PREFIX) - 1 - len(suffix)
    slug = slug[:room].rstrip("-") or "model"
    return f"{JOB_PREFIX}{slug}-{suffix}"


@dataclass(frozen=True)
class TrainingLayout:
    """Where a job's files go in S3: `s3://<bucket>/peagle/training/<job>/...`."""

    bucket: str
    job: str

    @property
    def prefix(self) -> str:
        return f"{TRAINING_PREFIX}{self.job}/"

    @property
    def source_prefix(self) -> str:
        """The `code` channel: one object per source file."""
        return f"{self.prefix}source/"

    def source_key(self, name: str) -> str:
        return f"{self.source_prefix}{name}"

    @property
    def data_key(self) -> str:
        return f"{self.prefix}data/train.jsonl"

    @property
    def target_prefix(self) -> str:
        return f"{self.prefix}target/"

    @property
    def output_path(self) -> str:
        return f"s3://{self.bucket}/{TRAINING_PREFIX}"

    @property
    def head_uri(self) -> str:
        """Where SageMaker writes the head (the model dir, uncompressed)."""
        return f"s3://{self.bucket}/{self.prefix}output/model/"

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"


def source_files() -> dict[str, bytes]:
    """The files of the source dir (`sm_peagle/training/source/`), by name."""
    root = resources.files("sm_peagle.training") / "source"
    out: dict[str, bytes] = {}
    if not root.is_dir():
        return out
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if entry.is_file() and not entry.name.startswith(".") and entry.name != "__init__.py":
            if entry.name.endswith(".pyc"):
                continue
            out[entry.name] = entry.read_bytes()
    return out


def hyperparameters(
    spec: TrainSpec, layer_ids: list[int], draft_vocab: int | None
) -> dict[str, str]:
    """The job's hyperparameters, every value a string (only the trainer's: no toolkit
    reads any)."""
    hp = {
        "k": str(spec.k),
        "layers": str(spec.layers),
    }
    if draft_vocab is not None:
        hp["draft_vocab_size"] = str(draft_vocab)
    if spec.steps is not None:
        hp["steps"] = str(spec.steps)
    else:
        hp["epochs"] = str(spec.epochs)
    hp |= {
        "max_new_tokens": str(spec.max_new_tokens),
        "seed": str(spec.seed),
        "target_layer_ids": json.dumps(layer_ids),
        "val_fraction": str(spec.val_fraction),
    }
    return hp


def _channel(name: str, uri: str) -> dict[str, Any]:
    return {
        "ChannelName": name,
        "DataSource": {
            "S3DataSource": {
                "S3DataType": "S3Prefix",
                "S3Uri": uri,
                "S3DataDistributionType": "FullyReplicated",
            }
        },
        "InputMode": "File",
    }


def tag_value(value: str) -> str:
    """`value` as a SageMaker tag value (at most 256 of its allowed characters)."""
    return _TAG_VALUE_BAD.sub("_", value)[:256]


def build_request(
    spec: TrainSpec,
    *,
    layout: TrainingLayout,
    role_arn: str,
    image: str,
    target_uri: str,
    data_uri: str,
    layer_ids: list[int],
    draft_vocab: int | None,
    tags: list[dict[str, str]],
) -> dict[str, Any]:
    """The CreateTrainingJob request. `tags`: the operation's (lifecycle/operation.py);
    peagle:managed and the target tag are added here."""
    return {
        "TrainingJobName": layout.job,
        "AlgorithmSpecification": {
            "TrainingImage": image,
            "TrainingInputMode": "File",
            "ContainerEntrypoint": list(CONTAINER_ENTRYPOINT),
        },
        "HyperParameters": hyperparameters(spec, layer_ids, draft_vocab),
        "RoleArn": role_arn,
        "InputDataConfig": [
            _channel("target", target_uri),
            _channel("train", data_uri),
            _channel(CODE_CHANNEL, layout.uri(layout.source_prefix)),
        ],
        "OutputDataConfig": {"S3OutputPath": layout.output_path, "CompressionType": "NONE"},
        "ResourceConfig": {
            "InstanceType": spec.instance_type,
            "InstanceCount": 1,
            # The target's weights, the generated hidden states and the head: sized from
            # the data by preflight (training/checks.py plan_disk).
            "VolumeSizeInGB": spec.volume_gb,
        },
        "StoppingCondition": {"MaxRuntimeInSeconds": spec.max_runtime},
        "Tags": [
            {"Key": "peagle:managed", "Value": "true"},
            {"Key": TARGET_TAG, "Value": tag_value(spec.target)},
            *tags,
        ],
    }
