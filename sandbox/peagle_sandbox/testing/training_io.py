"""What a SageMaker training job reads and writes, on moto's backends directly: its S3
channels and output, its CloudWatch log stream, and the SIMULATED trainer's head.

Straight to the backends (never a boto3 client): the harness's request log records what
peagle sends, and a job's own downloads and uploads are SageMaker's, not peagle's.
"""

from __future__ import annotations

import io
import json
import tarfile
from typing import Any

from moto.logs.models import logs_backends
from moto.s3.models import s3_backends

from peagle_sandbox.synthetic_head import synthetic_head

__all__ = [
    "LOG_GROUP",
    "REPORT_NAME",
    "S3Error",
    "list_prefix",
    "put_files",
    "read_object",
    "simulated_head",
    "split_uri",
    "write_log",
]

# "Log groups and streams that Amazon SageMaker AI sends to Amazon CloudWatch Logs":
# training jobs write to /aws/sagemaker/TrainingJobs, stream [training-job-name]/algo-[n]-[epoch].
LOG_GROUP = "/aws/sagemaker/TrainingJobs"
REPORT_NAME = "peagle-training-report.json"
SIMULATED_NOTE = "peagle sandbox SIMULATED trainer: zero weights, it learned nothing"


class S3Error(Exception):
    """A channel or output location SageMaker could not use; the message is the reason."""


def split_uri(uri: str) -> tuple[str, str]:
    """("bucket", "key/prefix") of an s3:// URI (https:// virtual-host URIs are not used)."""
    if not uri.startswith("s3://"):
        raise S3Error(f"{uri!r} is not an s3:// URI")
    bucket, _, key = uri[len("s3://") :].partition("/")
    return bucket, key


def _backend(account: str) -> Any:
    return s3_backends[account]["aws"]


def list_prefix(account: str, uri: str) -> dict[str, bytes]:
    """{key relative to the prefix: body} of every object under an S3Prefix channel URI
    (SageMaker treats the prefix as a plain key prefix: `s3://b/data` matches data.jsonl)."""
    bucket_name, prefix = split_uri(uri)
    backend = _backend(account)
    try:
        bucket = backend.get_bucket(bucket_name)
    except Exception:  # moto's MissingBucket
        return {}
    out: dict[str, bytes] = {}
    for key in list(bucket.keys.keys()):
        if not key.startswith(prefix) or key.endswith("/"):
            continue  # a zero-byte "folder" key is no file
        obj = backend.get_object(bucket_name, key)
        if obj is not None:
            rest = key[len(prefix) :]
            # Under the prefix as a directory: the path below it; an object the prefix
            # only begins the name of (`data` -> `data.jsonl`): its own name [INF].
            whole = not prefix or prefix.endswith("/") or rest.startswith("/")
            rel = rest.lstrip("/") if whole and rest.strip("/") else key.rsplit("/", 1)[-1]
            out[rel] = bytes(obj.value)
    return out


def read_object(account: str, uri: str) -> bytes | None:
    bucket_name, key = split_uri(uri)
    try:
        obj = _backend(account).get_object(bucket_name, key)
    except Exception:
        return None
    return None if obj is None else bytes(obj.value)


def put_files(account: str, files: dict[str, bytes], artifacts_uri: str) -> None:
    """Upload `files` ({relative path: body}) as SageMaker uploads /opt/ml/model: under
    the prefix for CompressionType NONE, as one model.tar.gz when the URI names it."""
    bucket_name, key = split_uri(artifacts_uri)
    backend = _backend(account)
    try:
        backend.get_bucket(bucket_name)
    except Exception:
        raise S3Error(
            f"ClientError: Failed to upload model artifacts to {artifacts_uri}: "
            f"the bucket {bucket_name} does not exist"
        ) from None
    if key.endswith(".tar.gz"):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for name, body in sorted(files.items()):
                info = tarfile.TarInfo(name)
                info.size = len(body)
                tar.addfile(info, io.BytesIO(body))
        backend.put_object(bucket_name, key, buf.getvalue())
        return
    for name, body in sorted(files.items()):
        backend.put_object(bucket_name, key + name, body)


def write_log(account: str, region: str, stream: str, lines: list[str], at_ms: int) -> None:
    """Append `lines` to the job's stream, stamped `at_ms` (one ms apart, in order)."""
    backend = logs_backends[account][region]
    backend.ensure_log_group(LOG_GROUP)
    backend.ensure_log_stream(LOG_GROUP, stream)
    events = [{"timestamp": at_ms + i, "message": line} for i, line in enumerate(lines)]
    if events:
        backend.put_log_events(LOG_GROUP, stream, events)


def simulated_head(
    target_config: dict[str, Any], hyperparameters: dict[str, str], *, stopped: bool = False
) -> dict[str, bytes]:
    """The SIMULATED trainer's output: the sandbox's synthetic P-EAGLE head (an EAGLE-3
    layout with a mask token: real vLLM loads it) sized for the target, and a training
    report whose per-depth accuracies are 0.0 because nothing was learned. A real trainer
    writes the speculators format instead; the report's keys are the entrypoint's."""
    hidden = int(target_config.get("hidden_size") or 0)
    vocab = int(target_config.get("vocab_size") or 0)
    if hidden <= 0 or vocab <= 0:
        raise ValueError("the target's config.json has no hidden_size / vocab_size")
    k = int(hyperparameters.get("k", "3"))
    draft = min(int(hyperparameters.get("draft_vocab_size") or vocab), vocab)
    aux = _layer_ids(hyperparameters.get("target_layer_ids"), target_config)
    # The head's hidden size is the target's, as a trained P-EAGLE head's is (speculators
    # builds its decoder layer from the target's config): newer vLLM sizes mask_hidden by
    # the target's hidden size, so a narrower head would fail the drafter check.
    files = synthetic_head(
        hidden=hidden,
        target_hidden=hidden,
        target_vocab=vocab,
        draft_vocab=draft,
        mask_token_id=min(3, vocab - 1),
        aux_layer_ids=aux,
    )
    report = {
        "steps": int(hyperparameters.get("steps") or 0),
        "k": k,
        "per_depth_val_accuracy": [0.0] * k,
        "train_loss_first": None,
        "train_loss_last": None,
        "samples": 0,
        "val_samples": 0,
        "speculators_version": None,
        "backend": "simulated",
        "note": SIMULATED_NOTE,
        # The real entrypoint's round-start estimate (round_starts.py), as placeholders: no
        # head was evaluated.
        "expected_position0_acceptance": 0.0,
        "expected_accepted_length": 1.0,
        "expected_per_position_acceptance": [0.0] * k,
        "expected_position0_stderr": 0.0,
        "eval_position0_accuracy": 0.0,
        "round_start_basis": "placeholder: a simulated job evaluates no head",
    }
    if stopped:
        report["stopped"] = True
    files[REPORT_NAME] = json.dumps(report, indent=1).encode()
    return files


def _layer_ids(raw: str | None, target_config: dict[str, Any]) -> list[int]:
    if raw:
        try:
            ids = json.loads(raw)
            if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
                return ids
        except ValueError:
            pass
    layers = int(target_config.get("num_hidden_layers") or 4)
    return sorted({min(2, layers - 1), layers // 2, max(layers - 3, 0)})
