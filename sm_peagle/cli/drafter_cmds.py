"""`peagle drafter inspect|check|push`: look at, validate and upload a drafter head.

boto3, rich and the drafter modules are imported inside the commands, so registering
this sub-app costs `peagle --help` nothing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..planning.vllm_versions import (
    DEFAULT_VLLM,  # a small module: `check` does not load the planner
)
from .output import STATUS_STYLE, console, note, print_json, table
from .spec_options import JsonOpt, RegionOpt

__all__ = ["drafter_app"]

drafter_app = typer.Typer(
    help="Inspect, check and push P-EAGLE / EAGLE-3 drafter heads (local dir or S3 prefix).",
    no_args_is_help=True,
    rich_markup_mode=None,
)

SrcArg = Annotated[
    str, typer.Argument(metavar="SRC", help="Local directory or s3://bucket/prefix/.")
]


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB ({n:,} bytes)"


def _inspect(src: str, region: str | None) -> Any:
    from ..drafter import inspect_drafter, make_push_client

    client = make_push_client(region) if src.startswith("s3://") else None
    if client is not None:
        from .context import describe_client

        note(describe_client(client))
    ins = inspect_drafter(src, s3_client=client)
    _require_head(ins)
    return ins


def _require_head(ins: Any) -> None:
    """Nothing that looks like a head (no config.json and no weights): exit 2, not a
    table of problems and exit 0."""
    from ..errors import SpecError

    kinds = {p.kind for p in ins.problems}
    if {"missing_config", "missing_weights"} <= kinds:
        raise SpecError(
            f"{ins.source}: no drafter head here (no config.json and no *.safetensors)",
            remedy="point at the directory or s3:// prefix that holds config.json and the "
            "safetensors files",
        )


def _shape(shape: list[int] | None) -> str:
    return "x".join(map(str, shape)) if shape else "?"


def _render_inspection(ins: Any) -> None:
    def opt(v: Any) -> str:
        return "-" if v is None else f"{v:,}" if isinstance(v, int) else str(v)

    mask = f"{ins.mask_token_key} = {ins.mask_token_value!r}" if ins.mask_token_key else "none"
    if len(ins.mask_tokens) > 1:
        mask += f" (also: {', '.join(k for k in ins.mask_tokens if k != ins.mask_token_key)})"
    rows = [
        ["architecture", opt(ins.architecture)],
        ["hidden size", opt(ins.hidden_size)],
        ["layers / heads", f"{opt(ins.num_hidden_layers)} / {opt(ins.num_attention_heads)}"],
        ["target hidden size", opt(ins.target_hidden_size) + " (config.json)"],
        ["vocab / draft vocab", f"{opt(ins.vocab_size)} / {opt(ins.draft_vocab_size)}"],
        ["mask token", mask],
        ["mask_hidden", _shape(ins.mask_hidden_shape) if ins.mask_hidden else "absent"],
        ["fc", f"{ins.fc_name} {_shape(ins.fc_shape)}" if ins.fc_name else "absent"],
        ["d2t", _shape(ins.d2t_shape) if ins.d2t else "absent"],
        ["weight files", ", ".join(ins.weight_files) or "none readable"],
        ["tensors", f"{ins.tensor_count:,}"],
        ["tensor bytes", _mib(ins.total_tensor_bytes)],
        ["dtypes", ", ".join(ins.dtypes) or "-"],
        ["parameters", f"{ins.parameter_count:,}"],
        ["files", f"{len(ins.files)}, {_mib(sum(f.size for f in ins.files))}"],
    ]
    if ins.source.startswith("s3://"):
        # The point of the ranged reads: gigabytes of weights, kilobytes fetched.
        rows.append(["bytes read", f"{ins.bytes_read:,} (safetensors headers only)"])
    else:
        rows.append(["bytes read", "config.json + safetensors headers only"])
    for key in ins.folder_keys:
        rows.append(["folder object", key])
    for name in ins.bad_names:
        rows.append(["bad file name", name])
    for p in ins.problems:
        rows.append([f"problem: {p.kind}", p.message])
    from rich.markup import escape

    # Values are data, not markup: "[1, 1, 8640]" would otherwise be eaten as a tag.
    rows = [[k, escape(v)] for k, v in rows]
    console().print(table(f"Drafter {escape(ins.source)}", ["field", "value"], rows))


@drafter_app.command("inspect")
def inspect_cmd(src: SrcArg, region: RegionOpt = None, json_out: JsonOpt = False) -> None:
    """Read config.json and the safetensors headers (never the tensors) and summarise."""
    ins = _inspect(src, region)
    if json_out:
        print_json(ins.to_dict())
    else:
        _render_inspection(ins)


def _targets(
    model: str | None, hidden: int | None, vocab: int | None, trained_k: int | None
) -> tuple[int | None, int | None, int | None, int | None]:
    """(target hidden, target vocab, trained K, default K): overrides win over the catalog."""
    from ..catalog.models import find_model
    from ..errors import SpecError

    if model is None:
        return hidden, vocab, trained_k, None
    entry = find_model(model)
    if entry is None:
        from ..catalog.names import model_remedy

        raise SpecError(
            f"model: unknown model {model!r}",
            remedy=model_remedy(model) + "; or pass --target-hidden-size/--target-vocab-size "
            "without --model",
        )
    head = entry.drafter
    return (
        hidden if hidden is not None else entry.hidden_size,
        vocab if vocab is not None else entry.vocab_size,
        trained_k if trained_k is not None else (head.trained_k if head else None),
        entry.default_k,
    )


def _check_doc(c: Any) -> dict[str, Any]:
    # Same shape as the checks in `peagle plan --json`.
    d = {"name": c.name, "status": c.status, "message": c.message}
    if c.fix:
        d["fix"] = c.fix
    return d


@drafter_app.command("check")
def check_cmd(
    src: SrcArg,
    model: Annotated[
        str | None,
        typer.Option("--model", "-m", help="Target model (catalog alias, JumpStart or HF id)."),
    ] = None,
    vllm_version: Annotated[
        str, typer.Option("--vllm-version", help="vLLM version of the serving image.")
    ] = DEFAULT_VLLM,
    mode: Annotated[str, typer.Option("--mode", help="p-eagle or eagle3.")] = "p-eagle",
    k: Annotated[
        int | None,
        typer.Option("-k", "--num-speculative-tokens", help="K (default: the model's default K)."),
    ] = None,
    trained_k: Annotated[
        int | None, typer.Option("--trained-k", help="K the head was trained for.")
    ] = None,
    target_hidden_size: Annotated[
        int | None, typer.Option("--target-hidden-size", help="Override the model's hidden size.")
    ] = None,
    target_vocab_size: Annotated[
        int | None, typer.Option("--target-vocab-size", help="Override the model's vocab size.")
    ] = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Check a head against the target model, vLLM version and K; exit 2 if any check fails."""
    from ..drafter import check_drafter
    from ..errors import CheckFailed, SpecError
    from ..checks import any_failed
    from ..planning.vllm_versions import VllmVersion

    try:
        version = VllmVersion(vllm_version)
    except ValueError as exc:
        raise SpecError(f"--vllm-version: {exc}") from None
    hidden, vocab, trained, default_k = _targets(
        model, target_hidden_size, target_vocab_size, trained_k
    )
    k = k if k is not None else default_k
    ins = _inspect(src, region)
    from ..catalog.models import find_model
    from ..planning.version_gates import check_version_gates

    # The version gates `plan` applies (one function): parallel drafting, model minimums.
    gates = check_version_gates(
        version, mode, find_model(model) if model else None, field="container.vllm_version"
    )
    checks = gates + check_drafter(
        ins,
        target_hidden_size=hidden,
        target_vocab_size=vocab,
        vllm_version=version,
        mode=mode,
        k=k,
        trained_k=trained,
    )
    ok = not any_failed(checks)
    if json_out:
        target = {"model": model, "hidden_size": hidden, "vocab_size": vocab}
        target |= {"vllm_version": str(version), "mode": mode, "k": k, "trained_k": trained}
        print_json(
            {
                "source": ins.source,
                "target": target,
                "checks": [_check_doc(c) for c in checks],
                "ok": ok,
            }
        )
    else:
        from rich.markup import escape

        title = escape(
            f"Drafter {ins.source} vs {model or 'custom target'} (vLLM {version}, {mode}, "
            + (f"K={k})" if k is not None else "K not given)")
        )
        rows = [
            [
                c.name,
                STATUS_STYLE[c.status],
                escape(c.message + (f" -> {c.fix}" if c.fix and c.status != "pass" else "")),
            ]
            for c in checks
        ]
        console().print(table(title, ["check", "status", "detail"], rows))
    if not ok:
        raise CheckFailed(checks)


class _Progress:
    """Byte progress on stderr: a rich bar on a terminal, a few plain lines otherwise."""

    def __init__(self, total: int) -> None:
        self.total, self.done, self._next_pct = total, 0, 25
        self._bar: Any = None
        if sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                DownloadColumn,
                Progress,
                TimeRemainingColumn,
                TransferSpeedColumn,
            )

            self._bar = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                DownloadColumn(binary_units=True),
                TransferSpeedColumn(),
                TimeRemainingColumn(),
                console=console(stderr=True),
                transient=False,
            )
            self._task = self._bar.add_task("uploading", total=total)

    def __enter__(self) -> _Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __call__(self, n: int) -> None:
        self.done += n  # n < 0 when s3transfer rolls back a retried part
        if self._bar is not None:
            self._bar.advance(self._task, n)
        elif self.total and self.done * 100 >= self._next_pct * self.total and self._next_pct < 100:
            note(f"  uploaded {self.done / 2**20:,.1f} of {self.total / 2**20:,.1f} MiB")
            self._next_pct += 25

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            if exc[0] is None:  # skipped files were never "uploaded": show the push as done
                self._bar.update(self._task, completed=self.total)
            self._bar.stop()


def _download_hf(repo_id: str, dest: str) -> str:
    from ..errors import PeagleError, SpecError

    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise SpecError(
            "--from-hf needs the huggingface_hub package, which is not installed",
            remedy="pip install huggingface_hub, or download the head and push its directory",
        ) from None
    note(f"downloading {repo_id} from the Hugging Face Hub")
    try:
        return str(snapshot_download(repo_id=repo_id, local_dir=dest))
    except Exception as exc:  # offline, gated repo, bad id: hub errors have no common base
        raise PeagleError(
            f"could not download {repo_id} from the Hugging Face Hub: {exc}",
            remedy="check the repo id, network and HF_TOKEN, or download the head yourself "
            "and push its directory",
        ) from None


def _push(src: str, dest: str, channel: str, region: str | None, json_out: bool) -> None:
    from ..drafter import make_push_client, push_drafter
    from ..errors import SpecError

    root = Path(src).expanduser()
    if not root.is_dir():
        raise SpecError(f"drafter directory {src} does not exist or is not a directory")
    # Hidden files (e.g. the Hub's .cache/) are not pushed, so they are not counted.
    files = [
        p
        for p in root.rglob("*")
        if p.is_file() and not any(x.startswith(".") for x in p.relative_to(root).parts)
    ]
    total = sum(p.stat().st_size for p in files)
    client = make_push_client(region)
    from .context import describe_client

    note(describe_client(client))
    note(f"pushing {src} ({len(files)} files, {total / 2**20:,.1f} MiB) to {dest}")
    with _Progress(total) as progress:
        result = push_drafter(src, dest, s3_client=client, progress=progress)
    entry = result.additional_model_data_source(channel)
    if json_out:
        print_json({**result.to_dict(), "additional_model_data_source": entry})
        return
    c = console()
    c.print(f"[bold]Pushed[/] {src} -> {result.s3_uri}")
    c.print(f"  uploaded  {len(result.uploaded)} file(s), {_mib(result.bytes_uploaded)}")
    c.print(f"  skipped   {len(result.skipped)} file(s) already in S3 with the same sha256")
    for n in result.notes:
        c.print(f"  note      {n}", markup=False)
    c.print("AdditionalModelDataSources entry (CreateModel PrimaryContainer):")
    c.print(json.dumps([entry], indent=2), markup=False)


@drafter_app.command("push")
def push_cmd(
    src: Annotated[
        str | None,
        typer.Argument(metavar="SRC", help="Local head directory (omit with --from-hf)."),
    ] = None,
    dest: Annotated[
        str | None, typer.Argument(metavar="DEST", help="s3://bucket/prefix/ to push to.")
    ] = None,
    channel: Annotated[
        str, typer.Option("--channel", help="Channel name for the printed entry.")
    ] = "eagle",
    from_hf: Annotated[
        str | None,
        typer.Option("--from-hf", help="Download this Hugging Face repo id, then push it."),
    ] = None,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Upload a head to S3 in the layout SageMaker mounts (resumable; unchanged files skipped)."""
    from ..errors import SpecError

    if from_hf is not None:
        if dest is None:  # `push --from-hf REPO s3://…/`: the one positional is the target
            src, dest = None, src
        elif src is not None:
            raise SpecError("give either SRC or --from-hf, not both")
    if dest is None or (src is None and from_hf is None):
        raise SpecError(
            "push needs SRC and an s3://bucket/prefix/ destination",
            remedy="peagle drafter push ./head s3://bucket/prefix/ "
            "(or --from-hf ORG/HEAD s3://bucket/prefix/)",
        )
    from ..drafter.inspect import parse_s3_uri

    parse_s3_uri(dest)  # a malformed destination fails before any hashing or download
    if from_hf is None:
        _push(str(src), dest, channel, region, json_out)
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="peagle-hf-") as tmp:
        _push(_download_hf(from_hf, tmp), dest, channel, region, json_out)
