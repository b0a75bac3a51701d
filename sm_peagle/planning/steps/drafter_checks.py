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
from ...errors import SpecError, as_text, text
from ...vllm.versions import VllmVersion

__all__ = ["STRICT", "check_local_drafter", "judge_drafter", "strict_checks"]

# What a warning turned into a failure by --strict (SDK strict=True) says it was.
STRICT = text("(a warning; {strict} fails it)")


def strict_checks(checks: list[Check]) -> list[Check]:
    """`--strict`: every warning becomes a failure, its message saying so. A warning is
    a head vLLM loads silently wrong, or a fact peagle could not verify; strict callers
    (CI, a release gate) want neither to pass."""
    return [
        failed(c.name, text("{m} {s}", m=as_text(c.message), s=STRICT), c.fix, field=c.field)
        if c.status == "warn"
        else c
        for c in checks
    ]


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
    from ...drafter.check import check_drafter, check_drafter_loading  # only plans with a head

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
    hidden = model.hidden_size if model else None
    vocab = model.vocab_size if model else None
    return check_drafter(
        inspection,
        target_hidden_size=hidden,
        target_vocab_size=vocab,
        vllm_version=vllm_version,
        mode=mode,
        k=k,
        trained_k=trained_k,
    ) + check_drafter_loading(
        inspection,
        vllm_version=vllm_version,
        mode=mode,
        target_hidden_size=hidden,
        target_vocab_size=vocab,
        target_num_layers=model.num_layers if model else None,
    )


def check_local_drafter(source: str, **facts: Any) -> list[Check]:
    """The drafter checks on a local head directory (config.json and safetensors headers
    only). `facts`: model, vllm_version, mode, k, trained_k, as `judge_drafter` takes."""
    from ...drafter.readers import inspect_local

    return judge_drafter(source, inspect_local, **facts)
