"""`bench_endpoint`: every level against one deployed endpoint -> one results document.

    doc = bench_endpoint("my-endpoint", concurrency=[1, 4, 8], requests=64)
    doc["levels"][0]["output_tokens_per_s"]

What the endpoint runs (instance type, image, mode, K, speculative config) is read back
from SageMaker, never taken from the caller, so the document cannot mislabel a run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import Call, Param, PeagleError, SpecError, text
from .datasets import Dataset, load_dataset
from .load import LevelRun, LoadSpec, bench_client, run_level
from .metrics import summarize_level
from .results import bench_document, provenance_of, target_record
from .workers import run_level_processes

__all__ = ["bench_endpoint", "level_line"]

SERVING = ("InService", "Updating", "SystemUpdating")


class _Stopped(Exception):
    """A level was stopped early (breaker.py): the run ends with the levels measured."""


def _quiet(_: str) -> None:
    pass


def level_line(level: dict[str, Any]) -> str:
    """`c=8: 64/64 ok · 1,234 out tok/s · TTFT p50 0.120s · TPOT p50 8.1ms · 2.9 tok/chunk`"""
    req = level["requests"]
    head = f"c={level['concurrency']}" + (f" rate={level['rate']:g}/s" if level["rate"] else "")
    parts = [f"{head}: {req['ok']}/{req['total']} ok"]
    if level["output_tokens_per_s"] is not None:
        parts.append(f"{level['output_tokens_per_s']:,.0f} out tok/s")
    if level["ttft_s"]["p50"] is not None:
        parts.append(f"TTFT p50 {level['ttft_s']['p50']:.3f}s")
    if level["tpot_s"]["p50"] is not None:
        parts.append(f"TPOT p50 {level['tpot_s']['p50'] * 1000:.1f}ms")
    if level["mean_tokens_per_chunk"] is not None:
        parts.append(f"{level['mean_tokens_per_chunk']:.2f} tok/chunk")
    acc = level.get("acceptance") or {}
    if acc.get("source") == "per-request" and acc.get("mean_acceptance_length") is not None:
        parts.append(f"acceptance {acc['mean_acceptance_length']:.2f} tok/step (per request)")
    gp = level.get("goodput")
    if gp and gp["share"]["all"] is not None:
        rate = gp["output_tokens_per_s"]
        parts.append(
            f"SLO met by {gp['share']['all']:.0%}"
            + (f" (goodput {rate:,.0f} tok/s)" if rate is not None else "")
        )
    sat = level.get("saturation")
    if sat and sat.get("saturated"):
        parts.append(
            f"SATURATED: sent {sat['achieved_rate_per_s']:.2f}/s of "
            f"{sat['scheduled_rate_per_s']:.2f}/s scheduled"
        )
    if req["failed"]:
        parts.append(f"failures: {req['failure_reasons']}")
    stopped = level.get("stopped")
    if stopped:
        parts.append(
            f"STOPPED: {stopped['consecutive_failures']} requests in a row could not connect"
        )
    return " · ".join(parts)


def _containers_since(aws: Any, endpoint: str) -> float:
    """When the endpoint's current containers may have started logging: an hour before its
    last change (SageMaker stamps LastModifiedTime when the change completes, after the
    containers started), never before its creation."""
    try:
        desc = aws.client("sagemaker").describe_endpoint(EndpointName=endpoint)
        created = desc["CreationTime"].timestamp()
        return max(created, desc["LastModifiedTime"].timestamp() - 3600.0)
    except Exception:  # not readable: the start of the day's logs is a fair bound
        from ..lifecycle.endpoint_logs import aws_epoch

        return aws_epoch(aws) - 86400.0  # the day on AWS's clock, which stamps the logs


def model_of(aws: Any, endpoint: str) -> str | None:
    from ..lifecycle.spec_tags import deployed_spec

    try:
        return deployed_spec(aws.client("sagemaker"), endpoint).model
    except Exception:  # not deployed by peagle (no spec tags): the model stays unnamed
        return None


def _component_status(status: dict[str, Any], component: str) -> dict[str, Any]:
    """The endpoint's status with the component's mode, K and image (what it runs);
    refused before any traffic when the component is missing or has no copies."""
    rows = {c["name"]: c for c in status.get("components") or []}
    row = rows.get(component)
    if row is None:
        raise PeagleError(
            f"endpoint {status['endpoint']} has no inference component {component!r}",
            remedy=f"components: {', '.join(rows) or 'none'}",
        )
    if not row["current_copies"]:
        raise PeagleError(
            f"inference component {component} has no copies "
            f"({'scaled to zero' if row['desired_copies'] == 0 else row['status']})",
            remedy=text(
                "`{u}`", u=Call("update", status["endpoint"], component=component, copies=1)
            ),  # fmt: skip
        )
    keep = ("mode", "k", "image", "speculative_config")
    return {**status, **{k: row.get(k) for k in keep}}


def bench_endpoint(
    endpoint: str,
    *,
    concurrency: Sequence[int] = (1, 4, 8, 32),
    rates: Sequence[float | None] = (None,),
    requests: int | None = None,
    duration_s: float | None = None,
    warmup: int = 0,
    workers: int = 1,
    dataset: Dataset | str | None = None,
    max_tokens: int = 256,
    temperature: float | None = None,
    extra: dict[str, Any] | None = None,
    acceptance_wait_s: float = 25.0,
    slo: dict[str, float] | None = None,
    burstiness: float = 1.0,
    search: dict[str, Any] | None = None,
    requests_out: Any = None,
    configuration: str | None = None,
    component: str | None = None,
    aws: Any = None,
    region: str | None = None,
    say: Callable[[str], None] = _quiet,
    progress: Callable[[int, int | None], None] | None = None,
) -> dict[str, Any]:
    """Benchmark every (concurrency, rate) level in turn; the peagle.bench/3 document.

    `progress(done, planned)` is called as each measured request of a level finishes
    (planned is None for a --duration level; one process only).

    `slo` adds goodput to every level; `search` (keyword arguments of
    `search_max_concurrency`: target_share, start, max_concurrency, max_probes) replaces
    the concurrency list by the max-concurrency search (closed loop; needs `slo`);
    `requests_out` (a RequestExporter) receives every request as a JSONL line, as the
    request finishes.

    A level stops early when the endpoint stops answering (breaker.py): it is kept, with
    `stopped` saying why, and no later level is run; the document is returned as usual.

    `component`: the inference component to benchmark (every request carries it as
    InferenceComponentName; mode, K and image are the component's, acceptance is read
    from its log group)."""
    from ..aws import AwsContext
    from ..lifecycle.inventory import endpoint_status
    from .acceptance import acceptance_for_levels, acceptance_from_requests, max_drafted_tokens
    from .engine_run import read_engine_run
    from .tune_k import estimate_for_level

    if search is not None and not slo:
        raise SpecError(text("the max-concurrency search needs an SLO ({slo})"), field="slo")
    aws = aws or AwsContext(region)
    ds = dataset if isinstance(dataset, Dataset) else load_dataset(dataset)
    status = endpoint_status(aws.client("sagemaker"), endpoint)
    if status["status"] not in SERVING:
        raise PeagleError(
            f"endpoint {endpoint} is {status['status']}, not InService",
            remedy=text("wait: `{s}`", s=Call("status", endpoint)),
        )
    if component is not None:
        status = _component_status(status, component)
    prov = {"model": model_of(aws, endpoint), **provenance_of(status)}
    if component is not None:
        prov["component"] = component
    levels_spec = [(c, r) for c in concurrency for r in rates]
    biggest = (search or {}).get("max_concurrency", 1024) if search is not None else 0
    rt = None
    if workers <= 1:
        pool = max([c for c, _ in levels_spec] + [biggest])
        rt = bench_client(aws.region, endpoint, pool, component)
    started = time.time()
    levels: list[dict[str, Any]] = []
    records_of: list[list[Any]] = []  # each level's records, for its acceptance
    # Not AWS: a plugin target answers (either engine), or a response says it was made up.
    target = target_record()
    simulated = target is not None

    def measure(c: int, rate: float | None, probe: bool = False) -> dict[str, Any]:
        nonlocal simulated
        spec = LoadSpec(
            concurrency=c,
            requests=requests,
            duration_s=duration_s,
            rate=rate,
            burstiness=burstiness,
            warmup=warmup,
            max_tokens=max_tokens,
            temperature=temperature,
            extra=dict(extra or {}),
        )
        run: LevelRun
        # Say a level started before its (possibly long) wait, so a person sees progress.
        planned = spec.planned_requests()
        say(
            f"level concurrency {c}{f' at {rate:g} req/s' if rate else ''}: "
            + (f"sending {planned} requests" if planned else f"running for {duration_s:g}s")
            + " ..."
        )
        write = None
        if requests_out is not None:
            write = requests_out.level(
                endpoint=endpoint, configuration=configuration, concurrency=c, rate=rate,
                slo=slo, probe=probe,
            )  # fmt: skip
        if rt is not None:
            tick = None if progress is None else (lambda n: progress(n, planned or None))
            run = run_level(rt, ds, spec, progress=tick, on_record=write)
        else:
            run = run_level_processes(
                aws.region, endpoint, ds, spec, workers, component, on_record=write
            )
        simulated = simulated or run.simulated
        level = summarize_level(
            run.records,
            concurrency=c,
            rate=rate,
            cpu_seconds=run.cpu_seconds,
            # Dollars per token only for AWS: a local target's tok/s times a GPU price is no
            # cost of anything (the price stays in the document, labelled, for planning).
            usd_per_hour=None if simulated else prov["usd_per_hour"],
            slo=slo,
            burstiness=burstiness,
        )
        if probe:
            level["search_probe"] = True
        if run.stopped:
            level["stopped"] = run.stopped
        # Exact acceptance from the level's own requests when the engine reports it per
        # request; else None, and the windowed log-line method fills it in after the run.
        level["acceptance"] = acceptance_from_requests(run.records)
        levels.append(level)
        say(level_line(level))
        if level["client_cpu"]["warning"]:
            say(f"warning: {level['client_cpu']['warning']}")
        if level["client_late"]["warning"]:
            say(f"warning: c={c}: {level['client_late']['warning']}")
        records_of.append(run.records)
        if run.stopped:
            raise _Stopped
        return level

    search_result = None
    try:
        if search is not None:
            from .search import search_max_concurrency

            assert slo is not None
            search_result = search_max_concurrency(
                lambda c: measure(c, None, probe=True), slo=slo, say=say, **search
            )
        else:
            for c, rate in levels_spec:
                measure(c, rate)
    except _Stopped:  # the level says so (level_line); the caller judges the run
        acceptance_wait_s = 0.0  # the endpoint is not answering: read the logs once, no wait
    finally:
        if rt is not None:
            rt.close()
    speculative = prov["mode"] not in (None, "baseline")
    # Levels without per-request acceptance (images older than the flag) fall back to the
    # windowed log-line method; baseline is 1.0 by definition.
    windowed = [i for i, lv in enumerate(levels) if not speculative or lv["acceptance"] is None]
    if windowed and speculative and acceptance_wait_s > 0:
        say(
            text(
                "waiting up to {s:.0f}s for vLLM's SpecDecoding metrics log line covering the "
                "last level (vLLM logs one every 10 s; {w} skips the wait; images with vLLM "
                ">= 0.29 report acceptance per request instead)",
                s=acceptance_wait_s, w=Param("acceptance_wait", 0),
            )
        )  # fmt: skip
    accept = acceptance_for_levels(
        aws, endpoint, [(levels[i]["started_at"], levels[i]["ended_at"]) for i in windowed],
        mode=prov["mode"], k=prov["k"], wait_s=acceptance_wait_s, component=component,
        own_max_drafted=[max_drafted_tokens(records_of[i], prov["k"]) for i in windowed],
    ) if windowed else []  # fmt: skip
    for i, acc in zip(windowed, accept, strict=True):
        levels[i]["acceptance"] = acc
        if acc.get("warning"):
            say(f"warning: c={levels[i]['concurrency']}: {acc['warning']}")
    for level in levels:
        # The flat step-cost model fits P-EAGLE (one drafting pass); EAGLE-3 drafts position
        # by position, so its estimate needs a --position-cost (`peagle tune-k`).
        p_eagle = prov["mode"] == "p-eagle"
        level["k_estimate"] = estimate_for_level(level, prov["k"]) if p_eagle else None
    load = {
        "kind": "open" if any(rates) else "closed",
        "concurrency": sorted({lv["concurrency"] for lv in levels})
        if search
        else list(concurrency),
        "rates": [r for r in rates if r],
        "burstiness": burstiness if any(rates) else None,
        "requests": requests,
        "duration_s": duration_s,
        "warmup": warmup,
        "workers": workers,
        "max_tokens": max_tokens,
        "temperature": temperature,
        "retries": 0,
        "slo_s": dict(slo) if slo else None,
    }
    engine_run = read_engine_run(
        aws, endpoint, since=_containers_since(aws, endpoint),
        speculative_config=prov["speculative_config"], vllm_version=prov["vllm_version"],
        component=component,
    )  # fmt: skip
    doc = bench_document(
        provenance={**prov, "engine_run": engine_run},
        dataset=ds.describe(),
        load=load,
        levels=levels,
        started_at=started,
        ended_at=time.time(),
        simulated=simulated,
        target=target,
    )
    if search_result is not None:
        doc["search"] = search_result
    trained = drafter_training(aws, status, levels)
    if trained is not None:  # a head from `drafter train`: its expectation beside the measure
        doc["drafter_training"] = trained
        doc["notes"].append(trained["note"])
    return doc


def drafter_training(
    aws: Any, status: dict[str, Any], levels: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """What the training report beside the served head (`peagle-training-report.json`, as
    `drafter train` writes it) expected, and the position-0 acceptance measured at the
    first level (per draft round, as vLLM counts, as the report's estimate is); None for a
    head without a report (JumpStart's, a hand-made one) or one that cannot be read."""
    from ..lifecycle.training import read_report
    from ..training.report import TrainingReport

    head = (status.get("additional_data") or {}).get("eagle")
    if status.get("mode") != "p-eagle" or not head or not str(head).startswith("s3://"):
        return None
    head = head if head.endswith("/") else head + "/"
    try:
        doc = read_report(aws.client("s3"), head)
    except Exception:  # a report is extra: never fail a benchmark over reading it
        return None
    if not doc:
        return None
    report = TrainingReport.from_dict(doc)
    expected = report.expected_position0_acceptance
    first = next((lv for lv in levels if lv.get("acceptance")), None)
    per = ((first or {}).get("acceptance") or {}).get("per_position") or []
    measured = per[0] if per else None
    basis = "per draft round" if report.per_round else "per token (no per-round estimate)"
    note = f"the head's training report expects position-0 acceptance {_pct(expected)} ({basis}"
    note += f", K={report.k}); measured {_pct(measured)}"
    if first is not None:
        note += f" at concurrency {first.get('concurrency')}"
    return {
        "head": head,
        "expected_position0_acceptance": expected,
        "expected_per_round": report.per_round,
        "expected_accepted_length": report.expected_accepted_length,
        "k": report.k,
        "measured_position0_acceptance": measured,
        "note": note,
    }


def _pct(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.0%}"
