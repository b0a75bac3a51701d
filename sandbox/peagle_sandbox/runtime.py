"""The sandbox's SageMaker runtime: InvokeEndpoint and InvokeEndpointWithResponseStream.

A WSGI app mounted in front of moto's: ``POST /endpoints/<name>/invocations`` and
``.../invocations-response-stream`` are answered here, as are the sandbox's own
``/_peagle/...`` routes; every other request goes to moto. Only endpoints that exist in moto's
backend and are serving (InService, or Updating: an update keeps the old config serving)
answer; anything else gets SageMaker's ``ValidationError: Endpoint X of account Y not
found.`` (HTTP 400), which is also what the real service returns while an endpoint is
Creating. A payload vLLM would reject comes back as SageMaker's ``ModelError`` (HTTP 424).

Every response carries ``x-peagle-simulated: true``, ``x-peagle-request-id`` and
``x-peagle-endpoint-config`` (the config whose fleet served it). During a guardrail deployment
(UpdateEndpoint with a DeploymentConfig) each invocation goes to the old or the new fleet by
the new fleet's traffic share now (`fleets.route`), and every invocation that reaches a model
puts AWS/SageMaker's metrics (Invocations, ModelLatency in microseconds from arrival to the
last byte, Invocation4XXErrors / Invocation5XXErrors by the model's status) for the fleet that
served it into CloudWatch (`harness.record_invocation`): the rollout's latency and error
alarms watch the new fleet by its EndpointConfigName.

Time: every invocation (plain or streaming, simulated, forwarded upstream or served by a
real engine) holds the sandbox clock at real time (``SandboxClock.real_time``) from its
arrival until its last byte is sent or the client hangs up, so token timings, TTFT and
tokens/s measured against the clock are real whatever its rate. ``GET /_peagle/clock``
reads the clock; ``POST /_peagle/clock`` moves it (``{"advance": s}``, ``{"freeze": true}``,
``{"resume": true[, "rate": r]}`` or ``{"rate": r}``) and answers once whatever became due
(log lines: the server's ticker listens) has happened.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from urllib.parse import parse_qs, unquote

from peagle_sandbox import fleets, quotas
from peagle_sandbox.backend import EndpointView, lookup
from peagle_sandbox.components import no_capacity, route_component
from peagle_sandbox.engine import CONSTANTS, EngineConstants, Generation, Step, seed_of, simulate
from peagle_sandbox.eventstream import IrregularSplitter, SplitPolicy
from peagle_sandbox.groundtruth import GroundTruth
from peagle_sandbox.logsim import LogSimulator
from peagle_sandbox.openai_format import (
    BadRequest,
    Responder,
    parse_request,
    per_request_level,
    spec_decode_metrics,
)
from peagle_sandbox.responses import after_send, aws_error, json_response, model_error
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness
from peagle_sandbox.testing.request_log import RecordedRequest
from peagle_sandbox.upstream import UpstreamError, open_upstream, sse_events

__all__ = ["Runtime"]

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
_INVOKE = re.compile(r"^/endpoints/([^/]+)/(invocations|invocations-response-stream)$")
_REGION = re.compile(r"Credential=[^/]+/\d{8}/([a-z0-9-]+)/")


class Runtime:
    """Serves invocations for the endpoints in moto's backend; records ground truth."""

    def __init__(
        self,
        harness: SageMakerHarness,
        account: str,
        logs: LogSimulator,
        truth: GroundTruth,
        *,
        upstream: str | None = None,
        seed: int = 0,
        constants: EngineConstants = CONSTANTS,
        split_policy: SplitPolicy | None = None,
        info: dict[str, Any] | None = None,
        engine_host: Any = None,
    ) -> None:
        self.harness = harness
        self.account = account
        self.logs = logs
        self.truth = truth
        self.upstream = upstream
        self.seed = seed
        self.constants = constants
        self.split_policy = split_policy or SplitPolicy()
        self.info = info or {}
        self.engine_host = engine_host  # engine_host.EngineHost: the real vLLM engine
        self._counter = itertools.count()
        self._in_flight: dict[str, int] = {}  # endpoint -> simulated requests in flight
        self._flight_lock = threading.Lock()

    def wrap(self, moto_app: WsgiApp) -> WsgiApp:
        """Dispatch by path: runtime and /_peagle routes here, everything else to moto."""

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            path = environ.get("PATH_INFO", "")
            if path.startswith("/_peagle/"):
                return self._admin(environ, start_response, path)
            match = _INVOKE.match(path)
            if match and environ.get("REQUEST_METHOD") == "POST":
                name, op = unquote(match.group(1)), match.group(2)
                self._record_invoke(environ, name, op)
                hold = self.harness.clock.real_time()
                hold.__enter__()  # released by _Held.close(), after the last byte
                try:
                    body = self._invoke(environ, start_response, name, op.endswith("stream"))
                except BaseException:
                    hold.__exit__(None, None, None)
                    raise
                return _Held(body, lambda: hold.__exit__(None, None, None))
            if quotas.handles(environ):
                region = _region(environ, self.harness.region)
                # Answered here, not by moto: recorded here, so the log holds every request.
                operation = environ["HTTP_X_AMZ_TARGET"].rpartition(".")[2]
                self.harness.requests.record(
                    RecordedRequest("service-quotas", operation, {}, time.time())
                )
                status, body = quotas.handle(environ, self.account, region)
                return json_response(start_response, status, body, "application/x-amz-json-1.1")
            return moto_app(environ, start_response)

        return app

    # ------------------------------------------------------------------ admin routes

    def _admin(self, environ: dict, start_response: Callable, path: str) -> Iterable[bytes]:
        query = {k: v[-1] for k, v in parse_qs(environ.get("QUERY_STRING", "")).items()}
        method = environ.get("REQUEST_METHOD")
        if path == "/_peagle/clock":
            return self._clock(environ, start_response, method)
        if path == "/_peagle/health":
            body: Any = {"ok": True, "simulated": True, "engine": self._engine_name(), **self.info}
            if self.engine_host is not None:  # `peagle sandbox status` lists them
                body["engines"] = self.engine_host.engines()
        elif path == "/_peagle/engines":  # the real engines' processes and ports
            body = {"engines": self.engine_host.engines() if self.engine_host else []}
        elif path == "/_peagle/engine":
            body = {"engine": self._engine_name(), "constants": self.constants.to_dict()}
        elif path == "/_peagle/requests" and method == "DELETE":
            self.harness.requests.clear()
            body = {"cleared": True}
        elif path == "/_peagle/requests":  # every AWS request received (request_log.py)
            body = {"requests": self.harness.requests.to_list()}
        elif path == "/_peagle/schedules":  # every scheduled attempt (moto_scheduler.py)
            body = {"runs": self.harness.schedule_runs}
        elif path == "/_peagle/training":  # every training job (moto_training.py)
            self.harness.run_training()
            body = {"jobs": self.harness.training_jobs}
        elif path == "/_peagle/ground-truth" and method == "DELETE":
            body = {"deleted": self.truth.reset(query.get("endpoint"))}
        elif path == "/_peagle/ground-truth":
            body = {"requests": self.truth.query(query.get("endpoint"), query.get("request_id"))}
        else:
            return json_response(start_response, 404, {"message": f"no such sandbox route {path}"})
        return json_response(start_response, 200, body)

    def _clock(self, environ: dict, start_response: Callable, method: str | None) -> list[bytes]:
        """GET: the clock's state. POST: one action (see the module docstring), then the
        new state; a body that is not exactly one valid action: 400, one line, no change."""
        clock = self.harness.clock
        if method == "POST":
            length = int(environ.get("CONTENT_LENGTH") or 0)
            raw = environ["wsgi.input"].read(length) if length else b""
            try:
                _clock_action(clock, raw)
            except ValueError as e:
                return json_response(start_response, 400, {"error": str(e)})
        elif method not in ("GET", "HEAD"):
            return json_response(start_response, 405, {"error": "GET or POST /_peagle/clock"})
        return json_response(start_response, 200, clock.state())

    def _record_invoke(self, environ: dict[str, Any], name: str, op: str) -> None:
        """Runtime calls bypass moto, so the request log gets them here: the parameters a
        SageMaker runtime request carries in its headers (the body is the model's payload)."""
        headers = {
            "InferenceComponentName": "HTTP_X_AMZN_SAGEMAKER_INFERENCE_COMPONENT",
            "ContentType": "CONTENT_TYPE",
            "Accept": "HTTP_X_AMZN_SAGEMAKER_ACCEPT",
        }
        params: dict[str, Any] = {"EndpointName": name}
        params.update({k: environ[v] for k, v in headers.items() if environ.get(v)})
        operation = (
            "InvokeEndpointWithResponseStream" if op.endswith("stream") else "InvokeEndpoint"
        )
        self.harness.requests.record(
            RecordedRequest("sagemaker-runtime", operation, params, time.time())
        )

    def _admit(self, name: str) -> float:
        """Count a simulated request in; the queueing delay its arrival earns (engine.py)."""
        with self._flight_lock:
            self._in_flight[name] = self._in_flight.get(name, 0) + 1
            return self.constants.overload_delay(self._in_flight[name])

    def _release(self, name: str) -> None:
        with self._flight_lock:
            self._in_flight[name] = max(self._in_flight.get(name, 1) - 1, 0)

    def _engine_name(self) -> str:
        if self.engine_host is not None:
            return str(self.engine_host.label)
        return f"upstream {self.upstream}" if self.upstream else "SIMULATED"

    # ------------------------------------------------------------------ invocations

    def _invoke(
        self, environ: dict, start_response: Callable, name: str, streaming: bool
    ) -> Iterable[bytes]:
        region = _region(environ, self.harness.region)
        request_id = str(uuid.uuid4())
        headers = [
            ("x-amzn-RequestId", request_id),
            ("x-peagle-request-id", request_id),
            ("x-peagle-simulated", "true"),
            ("x-peagle-engine", self._engine_name()),  # which engine made the tokens
        ]
        view = lookup(self.harness, self.account, region, name)
        if view is None or not view.serving:
            message = f"Endpoint {name} of account {self.account} not found."
            return aws_error(start_response, 400, "ValidationError", {"message": message}, headers)
        view, refusal = route_component(self.harness, self.account, region, view, environ)
        if refusal:  # an endpoint with inference components (sandbox/components.py)
            return aws_error(start_response, 400, "ValidationError", {"message": refusal}, headers)
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        operation = "InvokeEndpointWithResponseStream" if streaming else "InvokeEndpoint"
        number = next(self._counter)
        rng = random.Random(seed_of("split", self.seed, number))
        splitter = IrregularSplitter(rng, self.split_policy)
        # A guardrail deployment in progress: this invocation's fleet (fleets.py); a draw of
        # its own, so the PayloadPart splits stay what they were without a deployment.
        draw = random.Random(seed_of("fleet", self.seed, number)).random()
        served = fleets.route(self.harness, self.account, region, view, draw)
        base = None
        if self.engine_host is not None:  # SageMaker calls the container's /invocations
            fleet = "current" if served is view else "new"
            base = self.engine_host.url_for(region, name, view.component, fleet=fleet)
            if base is None and served is not view:  # the new engine is gone: the old serves
                served = view
                base = self.engine_host.url_for(region, name, view.component)
        view = served
        headers += [
            ("x-Amzn-Invoked-Production-Variant", view.variant),
            ("x-peagle-endpoint-config", view.config),
        ]
        if self.engine_host is not None:
            headers = [(k, "false" if k == "x-peagle-simulated" else v) for k, v in headers]
            if base is None and view.component:  # its engine is stopping: no copy left
                refusal = no_capacity(view.component)
                return aws_error(
                    start_response, 400, "ValidationError", {"message": refusal}, headers
                )
            if base is None:
                message = f"the engine of {name} is not running"
                self._publish(view, time.time(), 503)
                return model_error(start_response, view, self.account, 503, message, headers)
            return self._invoke_upstream(
                start_response,
                view,
                raw,
                request_id,
                operation,
                splitter,
                headers,
                base=base,
                route="/invocations",
            )
        if self.upstream:
            return self._invoke_upstream(
                start_response, view, raw, request_id, operation, splitter, headers
            )
        try:
            req = parse_request(raw, max_model_len=view.max_model_len)
        except BadRequest as e:
            record = self.truth.open(
                name,
                request_id,
                operation=operation,
                simulated=True,
                component=view.component,
                config=view.config,
            )
            self._finished(record, view, "model_error", 400, error=str(e))
            self.logs.request_finished(view, 400)
            return model_error(start_response, view, self.account, 400, str(e), headers)
        spec = view.speculation
        gen = simulate(
            req.prompt_key,
            req.prompt_tokens,
            req.max_tokens,
            spec,
            ignore_eos=req.ignore_eos,
            constants=self.constants,
        )
        record = self.truth.open(
            name,
            request_id,
            operation=operation,
            simulated=True,
            component=view.component,  # the InferenceComponentName the request carried
            config=view.config,  # the endpoint config whose fleet serves it
            mode=spec.mode,
            k=spec.k or None,
            kind=req.kind,
            stream=req.stream,
            delivery="stream" if streaming and req.stream else "buffered",
            prompt_tokens=req.prompt_tokens,
            queued_s=self._admit(name),  # the engine's overload knob (0 unless configured)
        )
        self.logs.request_started(view, req.prompt_tokens)
        responder = Responder(req, request_id, created=self.harness.clock.now())
        # vLLM's per-request acceptance, from the steps simulated above, when the
        # container asked for it (vLLM refuses the flag for baseline: nothing to report).
        level = per_request_level(view.env)
        spec_decode = (
            spec_decode_metrics(gen.steps, spec.k, level)
            if level and spec.mode != "baseline" and spec.k > 0
            else None
        )
        events = self._paced_events(gen, responder, record, view, spec_decode)

        def on_written(tag: Any, t: float) -> None:
            self.truth.mark_first_byte(record, t)
            if isinstance(tag, Step):
                self.truth.add_step(record, t, tag.tokens, tag.accepted, tag.drafted)

        def finish(status: str) -> None:
            if self._finished(record, view, status, finish_reason=gen.finish_reason):
                self._release(name)
            self.logs.request_finished(view, 200)

        content_type = "text/event-stream; charset=utf-8" if req.stream else "application/json"
        if streaming and req.stream:
            parts = splitter.frames(events, on_written)
            return self._stream(start_response, headers, content_type, parts, record, finish)
        # Buffered: run the engine to the end (steps stamped when computed), then send.
        body = b"".join(data for data, tag in self._stamped(events, record))
        if not req.stream:
            body = responder.full_response(
                gen.text, gen.completion_tokens, gen.finish_reason, spec_decode
            )
        if streaming:
            parts = splitter.frames([(body, None)], on_written)
            return self._stream(start_response, headers, content_type, parts, record, finish)
        start_response(
            "200 OK",
            [*headers, ("Content-Type", content_type), ("Content-Length", str(len(body)))],
        )

        def sent() -> None:
            self.truth.mark_first_byte(record, time.time())
            finish("ok")

        return after_send([body], sent)

    def _paced_events(
        self,
        gen: Generation,
        responder: Responder,
        record: dict,
        view: EndpointView,
        spec_decode: dict[str, Any] | None = None,
    ) -> Iterator[tuple[bytes, Any]]:
        """(SSE bytes, Step or None), each step released when its simulated time is due."""
        due = record["arrival"] + record["queued_s"]
        done = 0
        for i, step in enumerate(gen.steps):
            due += step.seconds
            time.sleep(max(0.0, due - time.time()))
            self.logs.record_step(view, step)
            if i == 0:
                for chunk in responder.first_chunks():
                    yield chunk, None
            done += step.tokens
            last = i == len(gen.steps) - 1
            finish = gen.finish_reason if last else None
            yield responder.content_chunk(step.text, done, finish), step
        for chunk in responder.last_chunks(done, spec_decode):
            yield chunk, None

    def _stamped(self, events: Iterable[tuple[bytes, Any]], record: dict) -> Iterator[tuple]:
        for data, tag in events:
            if isinstance(tag, Step):
                self.truth.add_step(record, time.time(), tag.tokens, tag.accepted, tag.drafted)
            yield data, tag

    def _stream(
        self,
        start_response: Callable,
        headers: list[tuple[str, str]],
        content_type: str,
        parts: Iterator[bytes],
        record: dict,
        finish: Callable[[str], None],
    ) -> Iterable[bytes]:
        start_response(
            "200 OK",
            [
                *headers,
                ("Content-Type", "application/vnd.amazon.eventstream"),
                ("X-Amzn-SageMaker-Content-Type", content_type),
            ],
        )

        def body() -> Iterator[bytes]:
            status = "error"
            try:
                yield from parts
                status = "ok"
            except GeneratorExit:  # the client hung up: the server closes us, engine stops
                status = "client_disconnected"
                raise
            finally:
                finish(status)

        return body()

    def _invoke_upstream(
        self,
        start_response: Callable,
        view: EndpointView,
        raw: bytes,
        request_id: str,
        operation: str,
        splitter: IrregularSplitter,
        headers: list[tuple[str, str]],
        *,
        base: str | None = None,
        route: str | None = None,
    ) -> Iterable[bytes]:
        engine = dict(headers).get("x-peagle-engine", "upstream")
        record = self.truth.open(
            view.name,
            request_id,
            operation=operation,
            simulated=False,
            engine=engine,
            component=view.component,
            config=view.config,
        )

        def done(status: str) -> None:
            self._finished(record, view, status)

        try:
            resp = open_upstream(base or str(self.upstream), raw, route=route)
        except UpstreamError as e:
            self._finished(record, view, "model_error", e.status, error=e.message)
            return model_error(start_response, view, self.account, e.status, e.message, headers)
        content_type = resp.getheader("Content-Type") or "application/json"
        is_sse = content_type.startswith("text/event-stream")
        if not (operation.endswith("Stream") and is_sse):
            body = resp.read()
            resp.close()
            if operation.endswith("Stream"):
                parts = splitter.frames([(body, None)])
                self.truth.mark_first_byte(record, time.time())
                return self._stream(start_response, headers, content_type, parts, record, done)
            start_response(
                "200 OK",
                [*headers, ("Content-Type", content_type), ("Content-Length", str(len(body)))],
            )
            return after_send([body], lambda: done("ok"))
        last_usage = [0]

        def events() -> Iterator[tuple[bytes, Any]]:
            for ev in sse_events(resp):
                yield ev.data, ev
            resp.close()

        def on_written(ev: Any, t: float) -> None:
            self.truth.mark_first_byte(record, t)
            if ev is None:
                return
            tokens = None
            if ev.completion_tokens is not None:
                tokens, last_usage[0] = ev.completion_tokens - last_usage[0], ev.completion_tokens
            # A token whose text is empty (part of a UTF-8 sequence) still counts: usage says so.
            if ev.has_content or tokens:
                self.truth.add_step(record, t, tokens)

        parts = splitter.frames(events(), on_written)
        return self._stream(start_response, headers, content_type, parts, record, done)

    # ------------------------------------------------------------------ AWS/SageMaker metrics

    def _finished(
        self,
        record: dict[str, Any],
        view: EndpointView,
        status: str,
        code: int | None = None,
        **fields: Any,
    ) -> bool:
        """End the ground-truth record and, the first time only, publish the invocation's
        metrics: `code` is the model's status (a stream that broke: 500; else 200, also when
        the client hung up: the model answered). False if the record had ended already."""
        if not self.truth.close(record, status, **fields):
            return False
        self._publish(view, record["arrival"], code or (500 if status == "error" else 200))
        return True

    def _publish(self, view: EndpointView, arrival: float, code: int) -> None:
        fleets.publish(self.harness, view, arrival, code)


# ---------------------------------------------------------------------- helpers


class _Held:
    """A WSGI body that calls `release` once the server closes it (always: after the last
    byte, or when the client hung up), after closing the body it wraps."""

    def __init__(self, body: Iterable[bytes], release: Callable[[], None]) -> None:
        self._body = body
        self._release: Callable[[], None] | None = release

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._body)

    def close(self) -> None:
        try:
            close = getattr(self._body, "close", None)
            if close is not None:
                close()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


_ACTIONS = ({"advance"}, {"freeze"}, {"resume"}, {"resume", "rate"}, {"rate"})


def _number(doc: dict[str, Any], key: str, *, positive: bool) -> float:
    value = doc[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{key} must be a number, got {json.dumps(value)}")
    if positive and value <= 0:
        raise ValueError(f"{key} must be a number > 0, got {json.dumps(value)}")
    if value < 0:
        raise ValueError(f"{key} must be a number >= 0 (the clock only moves forward)")
    return float(value)


def _clock_action(clock: Any, raw: bytes) -> None:
    """Apply the one action a POST /_peagle/clock body names (ValueError: a bad body)."""
    try:
        doc = json.loads(raw or b"null")
    except ValueError:
        raise ValueError("the body is not JSON") from None
    actions = " | ".join(
        ('{"advance": seconds}', '{"freeze": true}', '{"resume": true[, "rate": r]}', '{"rate": r}')
    )
    if not isinstance(doc, dict) or set(doc) not in _ACTIONS:
        raise ValueError(f"the body must be one action: {actions}")
    for flag in ("freeze", "resume"):
        if flag in doc and doc[flag] is not True:
            raise ValueError(f"{flag} must be true, got {json.dumps(doc[flag])}")
    rate = _number(doc, "rate", positive=True) if "rate" in doc else None
    if "advance" in doc:
        clock.advance(_number(doc, "advance", positive=False))
    elif "freeze" in doc:
        clock.freeze()
    elif "resume" in doc:
        clock.resume(rate)
    elif rate is not None:
        clock.set_rate(rate)


def _region(environ: dict[str, Any], default: str) -> str:
    match = _REGION.search(environ.get("HTTP_AUTHORIZATION", ""))
    return match.group(1) if match else default
