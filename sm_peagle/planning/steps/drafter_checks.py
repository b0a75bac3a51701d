"""The drafter checks a plan runs on a head it can read: `peagle drafter check`'s rules
(`sm_peagle.drafter.check`) fed with the target model, the vLLM version and the planned
K. The plan reads a local head (`check_local_drafter`); deploy preflight passes its S3
reader to `judge_drafter`. The drafter modules are imported only when a head is checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...catalog.models import ModelEntry
from ...checks import Check, failed, warned
from ...errors import SpecError
from ...vllm.versions import VllmVersion

__all__ = ["check_local_drafter", "judge_drafter"]


def judge_drafter(
    source: str,
    read: Callable[[str], Any],
    *,
    model: ModelEntry | None,
    vllm_version: VllmVersion,
    mode: str,
    k: int | None,
    trained_k: int | None,
) -> list[Check]:
    """`peagle drafter check` on a head that `read(source)` inspects: a local dir at plan
    time (`check_local_drafter`), an s3:// prefix in deploy preflight (which passes the S3
    reader). A head vLLM would reject (no mask_hidden, wrong fc shape, an unread mask-token
    key) then fails in seconds instead of after the endpoint's download."""
    from ...drafter.check import check_drafter  # only plans with a head pay

    try:
        inspection = read(source)
    except SpecError as exc:  # unreadable source: one check, not a crash
        text = exc.message
        if "AccessDenied" in text or "Forbidden" in text or "403" in text:
            return [
                warned(
                    "drafter.source",
                    f"cannot read {source} with your credentials; "
                    "head not checked (SageMaker reads it with the execution role)",
                )
            ]
        return [failed("drafter.source", text, exc.remedy)]
    return check_drafter(
        inspection,
        target_hidden_size=model.hidden_size if model else None,
        target_vocab_size=model.vocab_size if model else None,
        vllm_version=vllm_version,
        mode=mode,
        k=k,
        trained_k=trained_k,
    )


def check_local_drafter(source: str, **facts: Any) -> list[Check]:
    """The drafter checks on a local head directory (config.json and safetensors headers
    only). `facts`: model, vllm_version, mode, k, trained_k, as `judge_drafter` takes."""
    from ...drafter.readers import inspect_local

    return judge_drafter(source, inspect_local, **facts)
