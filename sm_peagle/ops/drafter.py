"""Drafter heads as SDK calls: `drafter_inspect()`, `drafter_check()` and `drafter_push()`,
the methods of `DrafterOps` (a part of `sm_peagle.Client`).

`peagle drafter inspect|check|push` each call one of these and render the result. A head is
a local directory or an s3://bucket/prefix/. Every argument is checked before anything is
read or uploaded, and `drafter_push` refuses a head that `drafter_check` (and so
`deploy --drafter`) would refuse, before the first byte goes to S3. Those checks (what a
head and the arguments must satisfy) are `ops/drafter_checks.py`; this module holds the
calls, their results and the push itself.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Call, CheckFailed, Param, PeagleError, SpecError, text
from .drafter_checks import (
    FORCE,
    HeadTarget,
    check_drafter_mode,
    check_positive_sizes,
    check_pushable,
    require_head,
    target_sizes,
)
from .session import Session

if TYPE_CHECKING:
    from ..checks import Check
    from ..lifecycle.drafter_upload import PushResult

__all__ = [
    "DrafterCheck",
    "DrafterOps",
    "DrafterPush",
]

Progress = Callable[[str], None]
# bytes(n, total): n bytes more were sent (n < 0 when s3transfer rolls back a retried part)
# of `total` bytes this push may send.
BytesProgress = Callable[[int, int], None]


@dataclass(frozen=True)
class DrafterCheck:
    """`drafter check`'s verdict: each check (same shape as the plan's) and whether all
    passed (`ok`). `raise_for_failures()` raises CheckFailed (exit 2 in the CLI) when not.

    Attributes:
        source: The head checked (a directory, an S3 URI or a Hugging Face repo).
        target: What it was checked against (`model`, `hidden_size`, `vocab_size`,
            `vllm_version`, `mode`, `k`, `trained_k`).
        checks: Each check, as the plan's.
        inspection: What was read from the head (`DrafterInspection`).
    """

    source: str
    target: dict[str, Any]
    checks: list[Check]
    inspection: Any = field(repr=False, default=None)

    @property
    def ok(self) -> bool:
        """True when no check failed (warnings do not count unless strict turned them into
        failures)."""
        return not any(c.status == "fail" for c in self.checks)

    def raise_for_failures(self) -> None:
        """Raise CheckFailed, naming every failed check, unless the head passed."""
        if not self.ok:
            raise CheckFailed(self.checks)

    def to_dict(self) -> dict[str, Any]:
        """The document `peagle drafter check --json` prints."""
        return {
            "source": self.source,
            "target": dict(self.target),
            "checks": [_check_doc(c) for c in self.checks],
            "ok": self.ok,
        }


@dataclass(frozen=True)
class DrafterPush:
    """What `drafter_push` did: what was uploaded, skipped and found (the push's own
    result, `push`), where from, and the AdditionalModelDataSources entry that mounts the
    head under `channel` (`entry`, for CreateModel's PrimaryContainer). `to_dict()` is the
    `peagle drafter push --json` document.

    Attributes:
        source: The local directory or Hugging Face repo pushed.
        channel: The data source channel the head mounts under (`eagle`).
        push: The upload's own result (`drafter_upload.PushResult`), which the properties
            below read.
    """

    source: str
    channel: str
    push: PushResult

    @property
    def s3_uri(self) -> str:
        """The S3 prefix the head is under."""
        return self.push.s3_uri

    @property
    def uploaded(self) -> list[str]:
        """The files uploaded."""
        return self.push.uploaded

    @property
    def skipped(self) -> list[str]:
        """The files already in S3 with the same sha256 (not uploaded again)."""
        return self.push.skipped

    @property
    def bytes_uploaded(self) -> int:
        """The bytes uploaded."""
        return self.push.bytes_uploaded

    @property
    def notes(self) -> list[str]:
        """What the push noticed and left (files ignored, ...)."""
        return self.push.notes

    @property
    def stale_keys(self) -> list[str]:
        """Objects under the prefix that are not part of this head."""
        return self.push.stale_keys

    @property
    def folder_keys(self) -> list[str]:
        """Zero-byte "dir/" objects found under the prefix."""
        return self.push.folder_keys

    @property
    def entry(self) -> dict[str, Any]:
        """The AdditionalModelDataSources entry that mounts the pushed head at
        /opt/ml/additional-model-data-sources/<channel>."""
        return self.push.additional_model_data_source(self.channel)

    def additional_model_data_source(self, channel: str | None = None) -> dict[str, Any]:
        """The AdditionalModelDataSources entry under `channel` (default: the push's)."""
        return self.push.additional_model_data_source(channel or self.channel)

    def to_dict(self) -> dict[str, Any]:
        """The document `peagle drafter push --json` prints."""
        return {**self.push.to_dict(), "additional_model_data_source": self.entry}


class DrafterOps(Session):
    """Drafter heads: `drafter_inspect`, `drafter_check` and `drafter_push`. S3 is reached
    with the client's region (and endpoint URL or context), lines go to its `progress`."""

    def drafter_inspect(self, source: str) -> Any:
        """Read a head's config.json and safetensors headers (never the tensors).

        Args:
            source: a local directory or an s3:// prefix (read with ranged GETs).

        Returns:
            Its `DrafterInspection` (`to_dict()`).

        Raises:
            SpecError: `source` holds no head at all (no config.json and no
                *.safetensors), or cannot be read.
        """
        from ..drafter.inspection import parse_s3_uri

        if source.startswith("s3://"):
            parse_s3_uri(source)  # a malformed URI fails before a client is made
        return self._inspect(source)

    def _s3_client(self) -> tuple[Any, str | None]:
        """The S3 client pushes and reads go through, sized for parallel uploads, on this
        client's target, and the endpoint URL it was given (None: the environment's)."""
        from ..lifecycle.drafter_upload import make_push_client

        if self._aws is None and self.endpoint_url is None and self.profile is None:
            return make_push_client(self.region), None
        from ..aws import AwsContext

        ctx = self._aws or AwsContext(self.region, self.profile, endpoint_url=self.endpoint_url)
        return make_push_client(self.region, aws=ctx), getattr(ctx, "endpoint_url", None)

    def _inspect(self, source: str) -> Any:
        from ..drafter import inspect_drafter

        client = None
        if source.startswith("s3://"):
            from .target import talking_to_client

            client, url = self._s3_client()
            self._say(talking_to_client(client, url))
        ins = inspect_drafter(source, s3_client=client)
        require_head(ins)
        return ins

    def drafter_check(
        self,
        source: str,
        *,
        model: str | None = None,
        vllm_version: str | None = None,
        mode: str = "p-eagle",
        k: int | None = None,
        trained_k: int | None = None,
        target_hidden_size: int | None = None,
        target_vocab_size: int | None = None,
        target_num_layers: int | None = None,
        strict: bool = False,
    ) -> DrafterCheck:
        """Check a head as plan and deploy do: the header rules, then what vLLM's loader
        does with each tensor (a head it refuses at start, one that fails its first
        request, one it loads silently wrong). Failed checks do not raise: call
        `raise_for_failures()` on the result.

        Args:
            source: a local directory or an s3:// prefix.
            model: the target model (catalog alias, JumpStart or HF id).
            vllm_version: the vLLM version (default: peagle's default image).
            mode: p-eagle or eagle3.
            k: K (default: the model's default K).
            trained_k: the K the head was trained for.
            target_hidden_size: the target's hidden size (instead of the model's).
            target_vocab_size: the target's vocabulary size (instead of the model's).
            target_num_layers: the target's layer count (instead of the model's).
            strict: turn every warning into a failure.

        Returns:
            Each check and whether all passed.

        Raises:
            SpecError: a bad argument, before the head is read.
        """
        from ..planning.steps.version_gates import check_version_gates
        from ..vllm.versions import DEFAULT_VLLM, VllmVersion

        try:
            version = VllmVersion(vllm_version or DEFAULT_VLLM)
        except ValueError as exc:
            raise SpecError(
                text("{vllm_version}: {e}", e=exc),
                remedy=text("e.g. {v}", v=Param("vllm_version", "0.16.0")),
                field="vllm_version",
                value=vllm_version,
            ) from None
        check_drafter_mode(mode)
        entry, hidden, vocab, trained, default_k = target_sizes(
            model, target_hidden_size, target_vocab_size, trained_k
        )
        layers = target_num_layers
        if layers is None:
            layers = getattr(entry, "num_layers", None)
        check_positive_sizes(
            target_hidden_size=hidden, target_vocab_size=vocab, target_num_layers=layers
        )
        k = k if k is not None else default_k
        if source.startswith("s3://"):
            from ..drafter.inspection import parse_s3_uri

            parse_s3_uri(source)
        ins = self._inspect(source)
        from ..drafter.check import check_drafter, check_drafter_loading
        from ..planning.steps.drafter_checks import strict_checks

        # The version gates `plan` applies (one function): parallel drafting, model minimums.
        checks = check_version_gates(version, mode, entry, field="container.vllm_version")
        checks += check_drafter(
            ins,
            target_hidden_size=hidden,
            target_vocab_size=vocab,
            vllm_version=version,
            mode=mode,
            k=k,
            trained_k=trained,
        )
        checks += check_drafter_loading(
            ins,
            vllm_version=version,
            mode=mode,
            target_hidden_size=hidden,
            target_vocab_size=vocab,
            target_num_layers=layers,
        )
        if strict:
            checks = strict_checks(checks)
        target = {"model": model, "hidden_size": hidden, "vocab_size": vocab}
        target |= {"vllm_version": str(version), "mode": mode, "k": k, "trained_k": trained}
        return DrafterCheck(ins.source, target, checks, ins)

    def drafter_push(
        self,
        source: str | Path | None = None,
        dest: str = "",
        *,
        channel: str = "eagle",
        from_hf: str | None = None,
        model: str | None = None,
        vllm_version: str | None = None,
        mode: str = "p-eagle",
        k: int | None = None,
        trained_k: int | None = None,
        force: bool = False,
        strict: bool = False,
        on_bytes: BytesProgress | None = None,
    ) -> DrafterPush:
        """Upload a head directory (or a Hugging Face repo, downloaded first) to S3 in the
        layout SageMaker mounts. Resumable: files already in S3 with the same sha256 are
        skipped. A head the deploy would refuse is refused first, by the same checks
        (`deploy_head_checks`), with the same CheckFailed; ambiguous file names are refused
        even with `force` (the mount would break). Warnings are `progress` lines.

        Args:
            source: the local head directory (None with `from_hf`).
            dest: s3://bucket/prefix/ to push to.
            channel: the channel name of the AdditionalModelDataSources entry.
            from_hf: a Hugging Face repo id to download, then push.
            model: the model the deploy will serve it with (its checks then run exactly;
                without it, the checks that need the target only warn).
            vllm_version: the deploy's vLLM version.
            mode: the deploy's mode (p-eagle or eagle3).
            k: the deploy's K.
            trained_k: the K the head was trained for (the spec's `drafter.trained_k`).
            force: push a refused head anyway (a work in progress, a format peagle does
                not know yet): each failed check becomes a note and a `progress` line.
            strict: refuse on warnings too.
            on_bytes: called with (bytes sent, total bytes) as the upload goes.

        Returns:
            What was uploaded and skipped, and the AdditionalModelDataSources entry.

        Raises:
            SpecError: a malformed or bucket-root `dest`, a missing source, both `source`
                and `from_hf`, an empty `channel` (before any upload).
            CheckFailed: the head fails a check the deploy would refuse it with.
        """
        from ..drafter.inspection import parse_s3_uri

        if from_hf is not None and source is not None:
            raise SpecError(
                text("give either {source} or {from_hf}, not both"),
                remedy=Call("drafter_push", dest="s3://bucket/prefix/", from_hf="ORG/HEAD"),
                field="from_hf",
                value=from_hf,
            )
        if not dest or (source is None and from_hf is None):
            raise SpecError(
                "push needs SRC and an s3://bucket/prefix/ destination",
                remedy=text(
                    "{push} (or {from_hf} ORG/HEAD s3://bucket/prefix/)",
                    push=Call("drafter_push", "./head", "s3://bucket/prefix/"),
                ),
                field="dest" if source is not None or from_hf is not None else "source",
            )
        _bucket, prefix = parse_s3_uri(dest)  # before any hashing or download
        if not prefix:
            raise SpecError(
                f"{dest} is a bucket root; SageMaker would mount the whole bucket",
                remedy="push to a prefix such as s3://bucket/drafters/my-head/",
                field="dest",
                value=dest,
            )
        if not channel:
            raise SpecError(
                text("{channel}: the channel name is empty"),
                remedy=text("use e.g. {c}", c=Param("channel", "eagle")),
                field="channel",
                value=channel,
            )
        target = HeadTarget(model, vllm_version, mode, k, trained_k)
        target.validate()  # before a download or a hash
        if from_hf is None:
            root = Path(str(source)).expanduser()
            if not root.is_dir():
                raise SpecError(
                    f"drafter directory {source} does not exist or is not a directory",
                    remedy="give the directory that holds config.json and the safetensors files",
                    field="source",
                    value=str(source),
                )
            return _push(str(source), dest, channel, self._say, self._s3_client, on_bytes,
                         force, strict, target)  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="peagle-hf-") as tmp:
            local = _download_hf(from_hf, tmp, self._say)
            return _push(local, dest, channel, self._say, self._s3_client, on_bytes, force,
                         strict, target)  # fmt: skip


def _push(
    src: str,
    dest: str,
    channel: str,
    say: Progress,
    s3: Callable[[], tuple[Any, str | None]],
    on_bytes: BytesProgress | None,
    force: bool = False,
    strict: bool = False,
    target: HeadTarget | None = None,
) -> DrafterPush:
    from ..lifecycle.drafter_upload import push_drafter
    from .target import talking_to_client

    checked = check_pushable(src, target=target, force=force, strict=strict)
    overridden = [c for c in checked if c.status == "fail"]
    for c in overridden:
        # c.line(): the check's message keeps what it names (the CLI words it)
        say(text("warning: pushing anyway ({f}): ", f=FORCE) + c.line(with_fix=False))
    root = Path(src).expanduser()
    # Hidden files (e.g. the Hub's .cache/) are not pushed, so they are not counted.
    files = [
        p
        for p in root.rglob("*")
        if p.is_file() and not any(x.startswith(".") for x in p.relative_to(root).parts)
    ]
    total = sum(p.stat().st_size for p in files)
    client, url = s3()  # after the checks: a refused head costs no client
    say(talking_to_client(client, url))
    say(f"pushing {src} ({len(files)} files, {total / 2**20:,.1f} MiB) to {dest}")
    for c in checked:
        if c.status == "warn":  # what deploy would warn about this head, as it would
            say("warning: " + c.line(with_fix=False))
    sent = None if on_bytes is None else (lambda n: on_bytes(n, total))
    r = push_drafter(src, dest, s3_client=client, progress=sent)
    r.notes[:0] = [text("pushed with {f} although {n} failed: {m}", f=FORCE, n=c.name,
                        m=c.message) for c in overridden]  # fmt: skip
    return DrafterPush(source=src, channel=channel, push=r)


def _download_hf(repo_id: str, dest: str, say: Progress) -> str:
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise SpecError(
            text("{from_hf} needs the huggingface_hub package, which is not installed"),
            remedy="pip install huggingface_hub, or download the head and push its directory",
        ) from None
    say(f"downloading {repo_id} from the Hugging Face Hub")
    try:
        return str(snapshot_download(repo_id=repo_id, local_dir=dest))
    except Exception as exc:  # offline, gated repo, bad id: hub errors have no common base
        raise PeagleError(
            f"could not download {repo_id} from the Hugging Face Hub: {exc}",
            remedy="check the repo id, network and HF_TOKEN, or download the head yourself "
            "and push its directory",
        ) from None


def _check_doc(c: Any) -> dict[str, Any]:
    # Same shape as the checks in `peagle plan --json`.
    d = {"name": c.name, "status": c.status, "message": c.message}
    if c.fix:
        d["fix"] = c.fix
    return d
