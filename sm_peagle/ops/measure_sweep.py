"""`sweep`: deploy, benchmark and delete each mode x K in turn, compare and recommend K,
the method of `SweepOps`, a mixin of `sm_peagle.Client`. Apart from measure.py because it
deploys: through the client's own `deploy` (never `sm_peagle.endpoint`, which sits above
`ops/`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .measure import Levels, Seconds
from .measure_checks import load_options, parse_levels, slo_options
from .measure_files import write_outputs
from .measure_results import SweepResult
from .session import Session, check_output_path

__all__ = ["SweepOps"]


def _plannable(model: str, *, mode: str, k: int | None, instance_type: str | None,
               role: str | None, region: str | None) -> None:  # fmt: skip
    """Plan one configuration as `deploy` would: an unknown model, a bad instance type or
    a failed check stops a sweep before it deploys anything or writes a directory."""
    from ..lifecycle.resolve import plan

    options = {"mode": mode, "instance_type": instance_type, "role": role, "region": region}
    if mode != "baseline":
        options["k"] = k
    plan(model, **{key: v for key, v in options.items() if v is not None}).raise_for_failures()


class SweepOps(Session):
    """Comparing configurations: `sweep` (a mixin of `sm_peagle.Client`). It deploys
    through the client's `deploy`."""

    # The client's deploy (DeployOps); each configuration is deployed through it.
    deploy: Any

    def sweep(
        self,
        model: str,
        *,
        modes: str | Sequence[str] = "baseline,eagle3,p-eagle",
        k: Levels = "3,7",
        concurrency: Levels = "1,4,8,32,128",
        instance_type: str | None = None,
        requests: int | None = None,
        duration: Seconds | None = None,
        warmup: int = 0,
        dataset: str | None = None,
        max_tokens: int = 256,
        temperature: float | None = None,
        acceptance_wait: Seconds = 25.0,
        slo: str | dict[str, float] | None = None,
        search: bool = False,
        slo_share: float = 0.99,
        search_limit: int = 1024,
        max_probes: int = 16,
        requests_out: str | Path | None = None,
        out_dir: str | Path | None = None,
        keep: bool = False,
        role: str | None = None,
    ) -> SweepResult:
        """Deploy, benchmark and delete each mode x K in turn; compare; recommend K.

        Results go to `out_dir`: one JSON per configuration as it finishes, then
        sweep.json/.csv/.md/.png. A configuration that fails is recorded and the others
        still run. Every argument, and the first configuration's plan, is checked before
        anything is deployed or a directory written.

        Args:
            model: a catalog alias or JumpStart model id.
            modes: the modes to compare (`"baseline,eagle3,p-eagle"` or a list).
            k: the K values to try for each speculative mode (an int, a list or `"3,7"`).
            concurrency: the levels each configuration is benchmarked at.
            instance_type: the instance type (default: the catalog's for the model).
            requests: requests per level (default 4 x concurrency, at least 8).
            duration: run each level this long instead (`"60s"`, or seconds).
            warmup: unmeasured requests before each level.
            dataset: as `bench` (default: HumanEval when installed, else the built-in set).
            max_tokens: max_tokens per request.
            temperature: sampling temperature, 0 (greedy) to 2; None: the model's default.
            acceptance_wait: how long to wait for vLLM's SpecDecoding log line.
            slo: service-level objectives, as `bench`.
            search: find each configuration's highest concurrency meeting `slo`.
            slo_share: the share of requests that must meet the SLO in the search.
            search_limit: the highest concurrency the search may probe.
            max_probes: the most levels the search runs.
            requests_out: write every request of every configuration as a JSON line.
            out_dir: the results directory (default ./peagle-sweep-<time>).
            keep: keep the last configuration's endpoint instead of deleting it.
            role: the SageMaker execution role ARN for the deployments.

        Returns:
            SweepResult: the combined document, the files written and `out_dir`;
            `.failed` when every configuration failed.

        Raises:
            SpecError: a bad argument, mode, K or output path, or a configuration that
                does not plan; nothing deployed.
            CheckFailed: the first configuration fails a plan check; nothing deployed.
        """
        from ..benchmarking.datasets import Dataset, default_sweep_dataset, load_dataset
        from ..benchmarking.results import save_document
        from ..benchmarking.sweep import configurations, run_sweep

        mode_list = (
            [m.strip() for m in modes.split(",") if m.strip()] if isinstance(modes, str)
            else [str(m) for m in modes]
        )  # fmt: skip
        ks = parse_levels(k, "k") if any(m != "baseline" for m in mode_list) else []
        levels = parse_levels(concurrency, "concurrency")
        configs = configurations(mode_list, ks)  # bad modes / K: refused before any AWS call
        opts = load_options(
            requests=requests, duration=duration, warmup=warmup, dataset=dataset,
            max_tokens=max_tokens, temperature=temperature, acceptance_wait=acceptance_wait,
        )  # fmt: skip
        opts.update(
            slo_options(
                slo=slo, search=search, share=slo_share, limit=search_limit, probes=max_probes,
                burstiness=1.0, rate=None,
            )
        )  # fmt: skip
        where = Path(out_dir) if out_dir is not None else None
        check_output_path(where, "out_dir", directory=True)
        export_path = check_output_path(requests_out, "requests_out")
        for mode0, k0 in configs[:1]:  # a typo in MODEL: refused before any deploy or directory
            _plannable(model, mode=mode0, k=k0, instance_type=instance_type, role=role,
                       region=self.region)  # fmt: skip
        if opts["dataset"] is None:
            opts["dataset"] = default_sweep_dataset()  # HumanEval (the seed's set) when installed
        if not isinstance(opts["dataset"], Dataset):  # a bad or missing dataset: refused
            opts["dataset"] = load_dataset(opts["dataset"])  # (exit 2) before the first deploy
        where = where or Path(f"peagle-sweep-{time.strftime('%Y%m%d-%H%M%S')}")
        ctx = self._connect()
        if export_path is not None:
            from ..benchmarking.export import RequestExporter

            opts["requests_out"] = RequestExporter(export_path)
        self._say(f"results go to {where}/")
        try:
            doc = run_sweep(
                model, modes=mode_list, ks=ks, concurrency=levels, out_dir=where,
                instance_type=instance_type, role=role, keep=keep, aws=ctx, say=self._say,
                deploy=self._pinned(ctx).deploy, **opts,
            )  # fmt: skip
        except BaseException:  # Ctrl-C: requests_out keeps its previous file; say where
            exporter = opts.get("requests_out")  # the requests measured so far are
            where_left = exporter.abandon() if exporter is not None else None
            if where_left is not None:
                self._say(where_left)
            raise
        if export_path is not None:
            opts["requests_out"].finish()
        written = [save_document(doc, where / "sweep.json")]
        written += write_outputs(
            doc, self._say, csv=where / "sweep.csv", markdown=where / "sweep.md",
            plot=where / "sweep.png", plot_optional=True,
        )  # fmt: skip
        return SweepResult(doc, written, out_dir=where)

    def _pinned(self, ctx: Any) -> Any:
        """A client like this one on the AWS context `ctx` already connected: every
        configuration deploys through it, and `on_connect` is not told again."""
        return type(self)(aws=ctx, progress=self.progress, on_poll=self.on_poll)
