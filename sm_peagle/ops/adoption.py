"""Taking an endpoint made elsewhere (console, sagemaker SDK, boto3) under peagle's
management: `adopt`, the method of `sm_peagle.Client` in `AdoptOps`. The work is
`lifecycle/adopt.py` (read the endpoint, reconstruct its spec, run plan's checks, tag it);
this is the SDK call `peagle adopt` makes as it is, with its arguments checked before any
request, and the spec written where `output` says.

    client = sm_peagle.Client()
    client.adopt("made-in-the-console", dry_run=True)

Prompts go through `confirm(question)` (it raises to stop; None proceeds), progress
through the client's `progress`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import SpecError, text
from .deployment import refuse_target_only
from .session import Session, check_endpoint_name, check_output_path

if TYPE_CHECKING:
    from ..lifecycle.adopt import AdoptResult

__all__ = ["AdoptOps"]

Confirm = Callable[[str], None]


def _write_spec(output: Path, result: AdoptResult, say: Callable[[str], None]) -> None:
    try:
        Path(output).write_text(result.spec_yaml() + "\n")
    except OSError as e:
        raise SpecError(
            f"cannot write {output}: {e.strerror}",
            field="output",
            value=str(output),
            remedy=text("pick another {output}"),
        ) from None
    say(f"wrote the spec to {output}")


class AdoptOps(Session):
    """Adopt (a method of `sm_peagle.Client`)."""

    def adopt(
        self,
        name: str,
        *,
        model: str | None = None,
        dry_run: bool = False,
        accept_differences: bool = False,
        output: str | Path | None = None,
        confirm: Confirm | None = None,
        on_result: Callable[[AdoptResult], None] | None = None,
        ttl: str | float | None = None,
        ttl_role: str | None = None,
    ) -> AdoptResult:
        """Take an endpoint made elsewhere (console, sagemaker SDK, boto3) under peagle's
        management: reconstruct its spec, run plan's checks, tag it as peagle's.

        Args:
            name: the endpoint.
            model: the catalog alias or JumpStart id it serves, when its tags,
                HF_MODEL_ID and weights do not tell.
            dry_run: show the spec and checks; tag nothing.
            accept_differences: adopt even when the spec cannot represent every field the
                endpoint runs (the next update or apply changes those fields).
            output: also write the spec as YAML here (after the re-check that follows the
                answer, before the first tag).
            confirm: asked before tagging; it raises to stop.
            on_result: sees the result before `confirm` is asked.
            ttl: also give it an expiry ("4h", or a UTC time): its EventBridge Scheduler
                schedule and `peagle:expires` tag only, once adopted (nothing else is
                created). 15 minutes at least, checked before any tag is written.
            ttl_role: the role that schedule runs as (default: peagle's own).

        Returns:
            An AdoptResult: `.spec`, `.checks`, `.differences`, `.tagged` (empty on a dry
            run).

        Raises:
            SpecError: (nothing tagged) what peagle cannot represent (unless
                `accept_differences`), an endpoint not settled InService, one sharing its
                config or model with another endpoint, or one it already manages.
            NotFound: there is no such endpoint.
        """
        from ..lifecycle.adopt import adopt as adopt_endpoint

        check_endpoint_name(name)
        check_output_path(output, create_parents=False)  # before any request (names `output`)
        if model is not None:
            from ..catalog.models import find_model

            if find_model(model) is not None:
                refuse_target_only(model)
        ctx = self._connect()
        if ttl is not None:  # a short or past TTL: SpecError before anything is tagged
            _check_ttl(ctx, ttl, ttl_role)

        def ask(result: AdoptResult) -> None:
            if on_result is not None:
                on_result(result)
            if confirm is not None:
                names = ", ".join(n for _, n in result.resources)
                confirm(f"Tag {names} as managed by peagle?")

        def write(result: AdoptResult) -> None:
            if output is not None:
                _write_spec(Path(output), result, self._say)

        result = adopt_endpoint(
            ctx,
            name,
            model=model,
            dry_run=dry_run,
            accept_differences=accept_differences,
            confirm=ask,
            before_tagging=write,
            say=self._say,
        )
        if dry_run and output is not None:
            _write_spec(Path(output), result, self._say)
        if ttl is not None and not dry_run:
            from ..lifecycle.expiry_update import set_ttl
            from ..lifecycle.manager import Lifecycle

            set_ttl(Lifecycle(ctx, say=self._say), name, ttl, ttl_role)
        return result


def _check_ttl(ctx: Any, ttl: str | float, ttl_role: str | None) -> None:
    """The spec's own rules on `ttl` and `ttl_role` (field "ttl"/"ttl_role"), then the
    15-minute minimum on AWS's clock."""
    from pydantic import ValidationError

    from ..errors import SpecError
    from ..lifecycle.expiry import ttl_error
    from ..planning.expiry import expiry_at
    from ..planning.spec.model import EndpointSpec

    try:
        EndpointSpec.model_validate({"ttl": ttl, "ttl_role": ttl_role})
    except ValidationError as e:
        err = e.errors()[0]
        field = str(err["loc"][0]) if err.get("loc") else "ttl"
        raise SpecError(err["msg"], field=field, value=str(ttl)) from None
    try:
        expiry_at(ttl, ctx.synced_aws_now())
    except ValueError as e:
        raise ttl_error(ttl, e) from None
