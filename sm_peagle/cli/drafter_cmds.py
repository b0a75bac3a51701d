"""`peagle drafter inspect|check|push`: look at, validate and upload a drafter head.

Each command calls one SDK function (`sm_peagle.drafter_inspect`, `drafter_check`,
`drafter_push`) and renders its result. boto3, rich and the drafter modules are imported
only when a command runs, so registering this sub-app costs `peagle --help` nothing.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from .options import (
    StrictOpt,
    force_option,
    k_option,
    mode_option,
    model_option,
    vllm_version_option,
)
from .output import STATUS_STYLE, console, current, note, table
from .spec_options import JsonOpt, RegionOpt

CheckKOpt = k_option("K (default: the model's default K).")
PushKOpt = k_option("K the deploy will use (default: the model's default K).")
ModelOpt = model_option("Target model (catalog alias, JumpStart or HF id).")
PushModelOpt = model_option(
    "The model `deploy --drafter` will serve it with: its checks then run "
    "exactly (without it, the checks that need the target only warn)."
)
VllmVersionOpt = vllm_version_option("vLLM version of the serving image (default: peagle's).")
ModeOpt = mode_option("p-eagle (default) or eagle3.", drafter=True)
PushForceOpt = force_option(
    "Push a head that fails the checks `deploy --drafter` would refuse it with "
    "(no config.json, truncated, unreadable or pickled weights, a dtype vLLM cannot "
    "read, a tensor or shape vLLM's loader refuses); each failure is printed."
)
TrainedKOpt = Annotated[int | None, typer.Option("--trained-k", help="K the head was trained for.")]

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
    from .context import client

    ins = client(region).drafter_inspect(src)
    current().result(ins, render=_render_inspection)


@drafter_app.command("check")
def check_cmd(
    src: SrcArg,
    model: ModelOpt = None,
    vllm_version: VllmVersionOpt = None,
    mode: ModeOpt = "p-eagle",
    k: CheckKOpt = None,
    trained_k: TrainedKOpt = None,
    target_hidden_size: Annotated[
        int | None, typer.Option("--target-hidden-size", help="Override the model's hidden size.")
    ] = None,
    target_vocab_size: Annotated[
        int | None, typer.Option("--target-vocab-size", help="Override the model's vocab size.")
    ] = None,
    target_layers: Annotated[
        int | None,
        typer.Option(
            "--target-layers",
            help="Override the model's layer count (the aux hidden-state layer ids must fit it).",
        ),
    ] = None,
    strict: StrictOpt = False,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Check a head against the target model, vLLM version and K; exit 2 if any check fails.

    Each line names the property, what vLLM does with it and the fix: a head vLLM refuses
    at start, one it starts with and then fails every request (it goes InService on
    SageMaker, then every invocation fails), or one it loads silently wrong (a warning:
    acceptance collapses, or rests on uninitialised memory; --strict fails it). Pickled
    weights (pytorch_model.bin) are refused although vLLM loads them: unpickling runs code
    from the file."""
    from .context import client

    result = client(region).drafter_check(
        src,
        model=model,
        vllm_version=vllm_version,
        mode=mode,
        k=k,
        trained_k=trained_k,
        target_hidden_size=target_hidden_size,
        target_vocab_size=target_vocab_size,
        target_num_layers=target_layers,
        strict=strict,
    )
    current().result(result, render=lambda r: _render_check(r, model, mode))
    result.raise_for_failures()


def _render_check(result: Any, model: str | None, mode: str) -> None:
    from rich.markup import escape

    from .faces import check_detail

    checks, target = result.checks, result.target
    k = target["k"]
    title = escape(
        f"Drafter {result.source} vs {model or 'custom target'} "
        f"(vLLM {target['vllm_version']}, {mode}, "
        + (f"K={k})" if k is not None else "K not given)")
    )
    rows = [
        [
            c.name,
            STATUS_STYLE[c.status],
            escape(check_detail(c)),
        ]
        for c in checks
    ]
    console().print(table(title, ["check", "status", "detail"], rows))


class _Progress:
    """Byte progress on stderr: a rich bar on a terminal, a few plain lines otherwise.
    Started by the first byte count (which carries the total), stopped by `close`."""

    def __init__(self) -> None:
        self.total, self.done, self._next_pct = 0, 0, 25
        self._bar: Any = None
        self._started = False

    def _start(self, total: int) -> None:
        self.total, self._started = total, True
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
            self._bar.start()

    def __call__(self, n: int, total: int) -> None:
        if not self._started:
            self._start(total)
        self.done += n  # n < 0 when s3transfer rolls back a retried part
        if self._bar is not None:
            self._bar.advance(self._task, n)
        elif self.total and self.done * 100 >= self._next_pct * self.total and self._next_pct < 100:
            note(f"  uploaded {self.done / 2**20:,.1f} of {self.total / 2**20:,.1f} MiB")
            self._next_pct += 25

    def close(self, ok: bool) -> None:
        if self._bar is not None:
            if ok:  # skipped files were never "uploaded": show the push as done
                self._bar.update(self._task, completed=self.total)
            self._bar.stop()


def _render_push(result: Any) -> None:
    c = console()
    c.print(f"[bold]Pushed[/] {result.source} -> {result.s3_uri}")
    c.print(f"  uploaded  {len(result.uploaded)} file(s), {_mib(result.bytes_uploaded)}")
    c.print(f"  skipped   {len(result.skipped)} file(s) already in S3 with the same sha256")
    from .faces import cli_text

    for n in result.notes:
        c.print(f"  note      {cli_text(n)}", markup=False)
    c.print("AdditionalModelDataSources entry (CreateModel PrimaryContainer):")
    c.print(json.dumps([result.entry], indent=2), markup=False)


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
    model: PushModelOpt = None,
    vllm_version: VllmVersionOpt = None,
    mode: ModeOpt = "p-eagle",
    k: PushKOpt = None,
    trained_k: TrainedKOpt = None,
    force: PushForceOpt = False,
    strict: StrictOpt = False,
    region: RegionOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Upload a head to S3 in the layout SageMaker mounts (resumable; unchanged files skipped).
    A head that `deploy --drafter` would refuse is refused (exit 2) with the same error,
    before anything is uploaded, unless --force: the same checks, for the deploy that
    --model, --vllm-version, --mode, -k and --trained-k describe."""
    from .context import client

    if from_hf is not None and dest is None:
        src, dest = None, src  # `push --from-hf REPO s3://…/`: the one positional is the target
    bar = _Progress()
    ok = False
    try:
        result = client(region).drafter_push(
            src,
            dest or "",
            channel=channel,
            from_hf=from_hf,
            model=model,
            vllm_version=vllm_version,
            mode=mode,
            k=k,
            trained_k=trained_k,
            force=force,
            strict=strict,
            on_bytes=bar,
        )
        ok = True
    finally:
        bar.close(ok)
    current().result(result, render=_render_push)


def _register_train() -> None:
    # `peagle drafter train` lives in its own module (train_cmd.py); registered here so the
    # `drafter` sub-app carries it.
    from .train_cmd import train_cmd

    drafter_app.command("train")(train_cmd)


_register_train()
