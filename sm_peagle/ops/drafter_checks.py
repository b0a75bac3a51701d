"""What a drafter head and the drafter calls' arguments must satisfy, checked before a
head is read or a byte is uploaded: the modes a head serves, the target a head is checked
against (its sizes from the catalog or given by hand), and what `deploy --drafter` would
refuse (`HeadTarget`, `deploy_head_checks`), which `drafter_push` refuses first
(`check_pushable`). The calls themselves (`drafter_inspect`, `drafter_check`,
`drafter_push`) and their results are `ops/drafter.py`; the head rules are `vllm/`'s and
`drafter/`'s, run in the plan's order by `planning/steps/drafter_checks.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import CheckFailed, Param, SpecError, text

if TYPE_CHECKING:
    from ..checks import Check

__all__ = [
    "FORCE",
    "HeadTarget",
    "check_drafter_mode",
    "check_positive_sizes",
    "check_pushable",
    "deploy_head_checks",
    "require_head",
    "target_sizes",
]

# `force=True`, named in what a forced push says (`--force` at the CLI).
FORCE = Param("force", True)


@dataclass(frozen=True)
class HeadTarget:
    """What a head will be deployed with: `deploy MODEL --drafter SRC --vllm-version V
    --mode M -k K` and the spec's `drafter.trained_k` (None: unknown, or the default)."""

    model: str | None = None
    vllm_version: str | None = None
    mode: str = "p-eagle"
    k: int | None = None
    trained_k: int | None = None

    def validate(self) -> None:
        """SpecError for a value deploy would refuse as an argument (nothing read yet), and
        for a mode without a head (baseline), as `drafter check` refuses it."""
        from ..planning.spec.loading import spec_from_data

        check_drafter_mode(self.mode)
        spec_from_data(self._spec("placeholder", None))

    def _spec(self, model: str, source: str | None) -> dict[str, Any]:
        speculative = {"mode": self.mode, "num_speculative_tokens": self.k}
        drafter = {"source": source, "trained_k": self.trained_k}
        return {
            "model": model,
            "speculative": {f: v for f, v in speculative.items() if v is not None},
            "drafter": {f: v for f, v in drafter.items() if v is not None},
            "container": {"vllm_version": self.vllm_version} if self.vllm_version else {},
        }


def check_drafter_mode(mode: str) -> None:
    """SpecError unless `mode` is one a drafter head serves (`drafter check`, `push`):
    drafter/check.py's one check of it, imported when asked (the Client imports this
    module on every command, and `plan` reads no head)."""
    from ..drafter.check import check_mode

    check_mode(mode)


def deploy_head_checks(source: str, target: HeadTarget) -> list[Check]:
    """The checks `deploy --drafter SOURCE` runs on a local head, so that `drafter push`
    refuses exactly what that deploy refuses. With a target model: that deploy's own plan
    (its vLLM version, its K, the model's sizes; `plan` runs `check_local_drafter`), its
    head checks. Without one: `check_local_drafter` itself, the target unknown (the rules
    that need it warn, naming what was not verified), the version peagle's default."""
    from ..planning.steps.drafter_checks import check_local_drafter
    from ..vllm.versions import DEFAULT_VLLM, VllmVersion

    if target.model is None:
        return check_local_drafter(
            source,
            model=None,
            vllm_version=VllmVersion(target.vllm_version or DEFAULT_VLLM),
            mode=target.mode,
            k=target.k,
            trained_k=target.trained_k,
        )
    from ..lifecycle.resolve import plan

    p = plan(target._spec(target.model, source))
    # drafter.source says where deploy would push it: push's own destination is given.
    return [c for c in p.checks if c.name.startswith("drafter.") and c.name != "drafter.source"]


def check_pushable(
    source: str,
    *,
    target: HeadTarget | None = None,
    force: bool = False,
    strict: bool = False,
) -> list[Check]:
    """`deploy_head_checks` on a local head about to be pushed: CheckFailed (nothing
    uploaded) when one fails, as `deploy --drafter` would fail it; with `force`, the
    checks are returned failures and all (the caller says so and pushes)."""
    from ..drafter.readers import inspect_local
    from ..planning.steps.drafter_checks import strict_checks

    if not force:
        require_head(inspect_local(source))
    checks = deploy_head_checks(source, target or HeadTarget())
    if strict:
        checks = strict_checks(checks)
    if not force and any(c.status == "fail" for c in checks):
        refused = CheckFailed(checks)
        refused.message = text(
            "{m}; nothing was uploaded ({f} pushes it anyway)", m=refused.message, f=FORCE
        )
        raise refused
    return checks


def require_head(ins: Any) -> None:
    """Nothing that looks like a head (no config.json and no weights): SpecError, not a
    table of problems."""
    kinds = {p.kind for p in ins.problems}
    if {"missing_config", "missing_weights"} <= kinds:
        raise SpecError(
            f"{ins.source}: no drafter head here (no config.json and no *.safetensors)",
            remedy="point at the directory or s3:// prefix that holds config.json and the "
            "safetensors files",
        )


def target_sizes(
    model: str | None, hidden: int | None, vocab: int | None, trained_k: int | None
) -> tuple[Any, int | None, int | None, int | None, int | None]:
    """(catalog entry, target hidden, target vocab, trained K, default K): explicit values
    win over the catalog's."""
    from ..catalog.models import find_model

    if model is None:
        return None, hidden, vocab, trained_k, None
    entry = find_model(model)
    if entry is None:
        from ..catalog.names import model_remedy

        raise SpecError(
            f"model: unknown model {model!r}",
            remedy=text(
                "{r}; or pass {target_hidden_size}/{target_vocab_size} without {model}",
                r=model_remedy(model),
            ),
            field="model",
            value=model,
        )
    head = entry.drafter
    return (
        entry,
        hidden if hidden is not None else entry.hidden_size,
        vocab if vocab is not None else entry.vocab_size,
        trained_k if trained_k is not None else (head.trained_k if head else None),
        entry.default_k,
    )


_SIZE_WORDS = {
    "target_hidden_size": "hidden size",
    "target_vocab_size": "vocab size",
    "target_num_layers": "layers",
}


def check_positive_sizes(**sizes: int | None) -> None:
    """A target size given by hand must be a positive whole number (SpecError: exit 2)."""
    for key, value in sizes.items():
        if value is not None and (isinstance(value, bool) or value < 1):
            raise SpecError(
                text("{p} must be a positive whole number, not {v}", p=Param(key), v=value),
                remedy=f"give the target model's {_SIZE_WORDS[key]}",
                field=key,
                value=value,
                rule=">= 1",
            )
