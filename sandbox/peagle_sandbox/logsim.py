"""SIMULATED CloudWatch logs of each sandbox endpoint, in vLLM's own line formats.

Start-up: when an endpoint appears, a banner saying the container is SIMULATED and the first
lines (platform, server version, non-default args) are written; the engine and drafter
loading lines follow over the Creating window; "Starting vLLM API server on
http://0.0.0.0:8080" and "Application startup complete." are written once it is InService.

Serving: like vLLM, which logs its counters every 10 s while it has work, the simulator writes,
every ``metrics_interval`` seconds of wall-clock time in which the endpoint generated tokens,
an ``Engine 000: Avg prompt throughput ...`` line and, for speculative endpoints only, a
``SpecDecoding metrics: ...`` line computed from the exact accepted/drafted counts of the
steps the engine simulated in that interval (Mean acceptance length = 1 + accepted / drafts,
Avg Draft acceptance rate = accepted / drafted). Baseline endpoints never log SpecDecoding
lines. Access-log lines (``"POST /invocations HTTP/1.1" 200``) are written per request.

Guardrail deployments (UpdateEndpoint with a DeploymentConfig): the new fleet is a container
of its own from the moment the deployment starts, its incarnation the NEW config, so it writes
its own start-up lines to its own stream (``AllTraffic/i-0...``) and, once it takes traffic,
its own SpecDecoding lines from the steps it simulated, next to the old fleet's. A commit
keeps the new fleet's stream going (the endpoint now names its config) and ends the old
one's; a rollback ends the new one's. One stream per fleet: the sandbox stands one instance
for each (fleets.py).

Inference components: each component is its own container with its own life, written to
the component's log group (``component_log_group``), not the endpoint's; an endpoint that
hosts components and names no model of its own writes nothing itself. The stream name
of a component (``AllTraffic/i-0...``, as for an endpoint) is an ASSUMPTION.

Time: everything here is on the sandbox clock (the harness's ``clock``): the Creating
window (``creating_seconds``), the ``metrics_interval``, the time in each line's vLLM
prefix and the log events' timestamps are sandbox seconds, so advancing the clock past an
interval makes its line due at once (the server ticks after every advance). The
throughput figures ("Avg generation throughput: ... tokens/s") stay real rates: tokens
are generated only while an invocation is in flight, and then the runtime holds the
clock at real time (``SandboxClock.real_time``), so those sandbox seconds are real ones.
(An interval that also spans idle time at a fast rate reads lower, as vLLM's own
average over an interval with idle seconds does.)
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime

from peagle_sandbox.backend import EndpointView, all_endpoints
from peagle_sandbox.components import component_views
from peagle_sandbox.engine import Step
from peagle_sandbox.fleets import new_fleet_views
from peagle_sandbox.openai_format import per_request_level
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness

__all__ = ["LogSimulator"]


def _ts(at: float) -> str:
    # vLLM's prefix is the container's local time; a SageMaker container runs on UTC.
    return datetime.fromtimestamp(at, tz=UTC).strftime("%m-%d %H:%M:%S")


def _api(where: str, msg: str, at: float) -> str:
    return f"(APIServer pid=1) INFO {_ts(at)} [{where}] {msg}"


def _core(where: str, msg: str, at: float) -> str:
    return f"(EngineCore_0 pid=283) INFO {_ts(at)} [{where}] {msg}"


def _vllm_version(image: str | None) -> str:
    tag = (image or "").rpartition(":")[2]
    return tag.split("-")[0] if tag and tag[0].isdigit() else "0.0.0"


def startup_lines(
    view: EndpointView, upstream: str | None = None, *, at: float
) -> tuple[list[tuple[float, str]], list[str]]:
    """([(fraction of the Creating window, line)], [lines once InService]); `at`: the
    sandbox time the container was first seen (the time in the lines' prefixes)."""
    spec = view.speculative_config
    version = _vllm_version(view.image)
    max_len = view.max_model_len or 8192
    args = {"model": "/opt/ml/model", "max_model_len": max_len, "port": 8080}
    if spec:
        args["speculative_config"] = spec
    level = per_request_level(view.env)
    if level:  # --per-request-spec-decode-metrics, as the container passes it
        args["per_request_spec_decode_metrics"] = level
    who = f"{view.name} component {view.component}" if view.component else view.name
    early = [
        (
            0.0,
            f"peagle-sandbox: SIMULATED container for {who} (no GPU, no weights; "
            + (
                f"invocations forwarded to {upstream})"
                if upstream
                else "text and timing from peagle_sandbox.engine)"
            ),
        ),
        (0.0, f"INFO {_ts(at)} [__init__.py:241] Automatically detected platform cuda."),
        (0.05, _api("api_server.py:1805", f"vLLM API server version {version}", at=at)),
        (0.05, _api("utils.py:326", f"non-default args: {json.dumps(args)}", at=at)),
        (0.2, _api("model.py:1502", f"Using max model len {max_len}", at=at)),
        (
            0.3,
            _core(
                "core.py:74",
                f"Initializing a V1 LLM engine (v{version}) with config: model='/opt/ml/model', "
                f"speculative_config={json.dumps(spec) if spec else None}",
                at=at,
            ),
        ),
        (0.4, _core("gpu_model_runner.py:1953", "Starting to load model /opt/ml/model...", at=at)),
        (0.55, _core("default_loader.py:262", "Loading weights took 11.84 seconds", at=at)),
    ]
    if spec:
        drafter = spec.get("model", "/opt/ml/additional-model-data-sources/eagle")
        method = "P-EAGLE (parallel drafting)" if spec.get("parallel_drafting") else "EAGLE-3"
        early += [
            (
                0.65,
                _core("gpu_model_runner.py:1970", f"Loading drafter model {drafter} ...", at=at),
            ),
            (
                0.7,
                _core(
                    "eagle.py:812",
                    f"Speculative decoding: {method}, num_speculative_tokens="
                    f"{spec.get('num_speculative_tokens')}, drafter={drafter}",
                    at=at,
                ),
            ),
        ]
    early += [
        (
            0.8,
            _core(
                "gpu_model_runner.py:2007", "Model loading took 13.72 GiB and 16.03 seconds", at=at
            ),
        ),
        (0.9, _core("kv_cache_utils.py:864", "GPU KV cache size: 412,288 tokens", at=at)),
    ]
    return early, ready_lines(at)


def ready_lines(at: float) -> list[str]:
    """What the container writes once it serves (`at`: then, in sandbox time)."""
    return [
        _api("api_server.py:1880", "Starting vLLM API server on http://0.0.0.0:8080", at=at),
        "(APIServer pid=1) INFO:     Application startup complete.",
    ]


@dataclass
class _Life:
    """One endpoint incarnation: its start-up progress and its counters since the last line."""

    view: EndpointView
    first_seen: float
    early: list[tuple[float, str]]
    stream: str
    early_sent: int = 0
    ready_sent: bool = False
    last_flush: float = 0.0
    running: int = 0
    prompt_tokens: int = 0
    generated: int = 0
    drafts: int = 0
    accepted: int = 0
    drafted: int = 0
    per_position: list[int] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)


class LogSimulator:
    """Fed by the runtime (steps, requests) and driven by ``tick()`` from a background thread."""

    def __init__(
        self,
        harness: SageMakerHarness,
        account: str,
        *,
        creating_seconds: float,
        metrics_interval: float = 10.0,
        upstream: str | None = None,
    ) -> None:
        self.harness = harness
        self.account = account
        self.creating_seconds = max(creating_seconds, 0.001)
        self.metrics_interval = metrics_interval
        self.upstream = upstream
        self.clock = harness.clock
        self._lock = threading.Lock()
        self._tick_lock = threading.Lock()  # the ticker thread and an advance's tick
        self._lives: dict[tuple[str, str, str | None, str], _Life] = {}
        # Lives the tick ended (an update, a rollback, a delete): a late request of one feeds
        # the endpoint's life that goes on instead of starting it again.
        self._ended: set[tuple[str, str, str | None, str]] = set()
        self._client_ports = itertools.cycle(range(40000, 60000))

    # ---------------------------------------------------------------- fed by the runtime

    def request_started(self, view: EndpointView, prompt_tokens: int) -> None:
        with self._lock:
            life = self._life(view, self.clock.now())
            life.running += 1
            life.prompt_tokens += prompt_tokens

    def record_step(self, view: EndpointView, step: Step) -> None:
        with self._lock:
            life = self._life(view, self.clock.now())
            life.generated += step.tokens
            if step.drafted:
                life.drafts += 1
                life.accepted += step.accepted
                life.drafted += step.drafted
                if len(life.per_position) < step.drafted:
                    life.per_position += [0] * (step.drafted - len(life.per_position))
                for i in range(step.accepted):
                    life.per_position[i] += 1

    def request_finished(self, view: EndpointView, status: int) -> None:
        with self._lock:
            life = self._life(view, self.clock.now())
            life.running = max(life.running - 1, 0)
            reason = "OK" if status == 200 else "Bad Request"
            life.pending.append(
                f"(APIServer pid=1) INFO:     169.254.178.2:{next(self._client_ports)} - "
                f'"POST /invocations HTTP/1.1" {status} {reason}'
            )

    # ---------------------------------------------------------------- background tick

    def tick(self) -> None:
        """Write whatever start-up, access and metrics lines are due; forget deleted ones."""
        with self._tick_lock:  # one tick at a time: lines keep their order
            self._tick()

    def _tick(self) -> None:
        now = self.clock.now()
        views = {_key(v): v for v in self._views()}
        writes: list[tuple[_Life, list[str]]] = []
        with self._lock:
            for key in list(self._lives):
                if key not in views or self._lives[key].view.incarnation != views[key].incarnation:
                    gone = self._lives.pop(key)  # its last counters still get their line
                    self._ended.add(key)
                    writes.append(
                        (gone, gone.pending + self._metrics(gone, now - gone.last_flush, now))
                    )
            for view in views.values():
                self._ended.discard(_key(view))  # e.g. re-created with the same config
                life = self._life(view, now, current=True)
                life.view = view
                lines = self._due(life, now)
                if lines:
                    writes.append((life, lines))
        for life, lines in writes:
            if lines:
                self.harness.seed_logs(
                    life.view.name,
                    lines,
                    stream=life.stream,
                    region=life.view.region,
                    component=life.view.component,
                )

    def _views(self) -> list[EndpointView]:
        """Every endpoint, every inference component (an endpoint that hosts components and
        no model of its own has no container of its own), and the new fleet of every
        guardrail deployment in progress."""
        out = []
        endpoints = all_endpoints(self.harness, self.account)
        for view in endpoints:
            hosted = component_views(self.harness, self.account, view)
            out += hosted if hosted else ([view] if view.model_name else [])
        fleets = new_fleet_views(self.harness, self.account, endpoints)
        return out + [v for v in fleets if v.model_name]

    def _life(self, view: EndpointView, now: float, *, current: bool = False) -> _Life:
        """The life of the endpoint's container that `view` names. Only the tick
        (``current``: the view was just read) replaces one on a new incarnation: a request
        that outlives an update (or its fleet) feeds the endpoint's life that goes on."""
        key = _key(view)
        life = self._lives.get(key)
        if life is None and not current and key in self._ended:
            life = next((v for k, v in self._lives.items() if k[:3] == key[:3]), None)
        if life is None or (current and life.view.incarnation != view.incarnation):
            early, _ = startup_lines(view, self.upstream, at=now)
            digest = hashlib.sha256(f"{view.arn}{view.incarnation}".encode()).hexdigest()
            life = _Life(view, now, early, f"AllTraffic/i-0{digest[:16]}", last_flush=now)
            self._lives[key] = life
        return life

    def _due(self, life: _Life, now: float) -> list[str]:
        lines: list[str] = []
        progress = (now - life.first_seen) / self.creating_seconds
        in_service = life.view.serving
        while life.early_sent < len(life.early) and (
            in_service or life.early[life.early_sent][0] <= progress
        ):
            lines.append(life.early[life.early_sent][1])
            life.early_sent += 1
        if in_service and not life.ready_sent:
            lines += ready_lines(now)  # stamped when written, not when first seen
            life.ready_sent = True
        lines += life.pending
        life.pending.clear()
        if now - life.last_flush >= self.metrics_interval:
            lines += self._metrics(life, now - life.last_flush, now)
            life.last_flush = now
        return lines

    def _metrics(self, life: _Life, seconds: float, now: float) -> list[str]:
        """vLLM's periodic stats lines for the interval just ended; none if it was idle."""
        if not life.generated and not life.prompt_tokens:
            return []
        seconds = max(seconds, 1e-3)
        out = [
            _api(
                "loggers.py:123",
                f"Engine 000: Avg prompt throughput: {life.prompt_tokens / seconds:.1f} tokens/s, "
                f"Avg generation throughput: {life.generated / seconds:.1f} tokens/s, "
                f"Running: {life.running} reqs, Waiting: 0 reqs, GPU KV cache usage: "
                f"{min(0.1 * life.running, 99):.1f}%, Prefix cache hit rate: 0.0%",
                at=now,
            )
        ]
        if life.drafts:
            rates = ", ".join(f"{n / life.drafts:.3f}" for n in life.per_position)
            out.append(
                _api(
                    "metrics.py:96",
                    "SpecDecoding metrics: "
                    f"Mean acceptance length: {1 + life.accepted / life.drafts:.2f}, "
                    f"Accepted throughput: {life.accepted / seconds:.2f} tokens/s, "
                    f"Drafted throughput: {life.drafted / seconds:.2f} tokens/s, "
                    f"Accepted: {life.accepted} tokens, Drafted: {life.drafted} tokens, "
                    f"Per-position acceptance rate: {rates}, "
                    f"Avg Draft acceptance rate: {100 * life.accepted / life.drafted:.1f}%",
                    at=now,
                )
            )
        life.prompt_tokens = life.generated = life.drafts = life.accepted = life.drafted = 0
        life.per_position = [0] * len(life.per_position)
        return out


def _key(view: EndpointView) -> tuple[str, str, str | None, str]:
    # The config too: during a guardrail deployment the old and the new fleet are two
    # containers of one endpoint, each with its own life and stream.
    return (view.region, view.name, view.component, view.config)
