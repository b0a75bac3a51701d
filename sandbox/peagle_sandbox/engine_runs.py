"""One real vLLM engine run of the `--engine vllm` sandbox: what it serves, where it logs,
and the helpers that judge it (its last error line, a free port, `/ping`).

An engine serves one *owner*: an endpoint (the model of its config's variant) or an
inference component (the model its `Specification` names). The key `(region, scope,
name)` keeps the two name spaces apart; `endpoint` is the endpoint it runs on either way.
Its output goes to the owner's CloudWatch group: `/aws/sagemaker/Endpoints/<endpoint>`
or `/aws/sagemaker/InferenceComponents/<component>`.
"""

from __future__ import annotations

import re
import socket
import subprocess
import threading
import time
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from peagle_sandbox.testing.moto_sagemaker import component_log_group, endpoint_log_group

__all__ = [
    "COMPONENT",
    "DEFAULT_STARTUP_TIMEOUT",
    "ENDPOINT",
    "Engine",
    "Key",
    "free_port",
    "last_error_line",
    "ping",
]

DEFAULT_STARTUP_TIMEOUT = 600.0  # SageMaker's health-check timeout when none is given
ENDPOINT, COMPONENT = "endpoint", "component"
_ERROR = re.compile(r"Error|error|ERROR|Exception|FATAL|Fatal|Killed")
_NOISE = re.compile(r"^(File \"|\^|~|For further information|Traceback \(most recent)")
Key = tuple[str, str, str]  # (region, ENDPOINT | COMPONENT, name)


def last_error_line(lines: list[str]) -> str:
    """vLLM's own last error line: the newest line that names an error, skipping traceback
    frames and pydantic's trailing URL line; else the last line."""
    for line in reversed(lines):
        text = line.strip()
        if text and not _NOISE.match(text) and _ERROR.search(text):
            return text
    return lines[-1].strip() if lines else "(the engine wrote nothing)"


@dataclass(eq=False)
class Engine:
    """One engine process for one incarnation of an endpoint or an inference component.
    `source` is what it was built from: the endpoint config, or the component's model."""

    region: str
    name: str
    source: str
    kind: str  # "create" | "update"
    number: int
    scope: str = ENDPOINT
    endpoint: str = ""  # the endpoint it runs on (its own name for an endpoint engine)
    # "current": the endpoint's (component's) engine; "new": a guardrail update's new fleet,
    # started next to the current one (engine_host.py).
    fleet: str = "current"
    port: int = 0
    root: Path | None = None
    proc: subprocess.Popen[bytes] | None = None
    ready: bool = False
    cancelled: bool = False
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=200))
    pump: threading.Thread | None = None
    started: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        self.endpoint = self.endpoint or self.name

    @property
    def key(self) -> Key:
        return (self.region, self.scope, self.name)

    @property
    def log_group(self) -> str:
        if self.scope == COMPONENT:
            return component_log_group(self.name)
        return endpoint_log_group(self.name)

    @property
    def stream(self) -> str:
        # Endpoint: `<variant>/<instance id>`, as SageMaker names it. Component: the
        # sandbox's own `<component>/<copy>` (ASSUMPTION: no citable stream format).
        if self.scope == COMPONENT:
            return f"{self.name}/copy-sandbox-{self.number:04d}"[:512]
        return f"AllTraffic/i-sandbox-{self.number:04d}-{self.source}"[:512]

    def describe(self, fleet: str | None = None) -> dict[str, Any]:
        """The engine as `GET /_peagle/engines` lists it; `fleet`: the one it stands for
        ("current", or "old" / "new" during a guardrail update; default its own)."""
        return {
            "endpoint": self.endpoint,
            "component": self.name if self.scope == COMPONENT else None,
            "region": self.region,
            "config" if self.scope == ENDPOINT else "model": self.source,
            "fleet": fleet or self.fleet,
            # One process plays every instance of its fleet, whatever the instance count.
            "stands_for": "all instances of its fleet",
            "pid": self.proc.pid if self.proc else None,
            "port": self.port,
            "url": f"http://127.0.0.1:{self.port}" if self.port else None,
            "ready": self.ready,
            "root": str(self.root) if self.root else None,
            "log_group": self.log_group,
            "log_stream": self.stream,
        }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def requests_in_flight(port: int) -> int | None:
    """Requests the engine is running or has waiting (vLLM's `vllm:num_requests_running`
    and `vllm:num_requests_waiting` gauges on /metrics); None if it does not answer."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://127.0.0.1:{port}/metrics", timeout=2) as resp:
            text = resp.read().decode("utf-8", "replace")
    except OSError:
        return None
    total = 0.0
    for line in text.splitlines():
        if line.startswith(("vllm:num_requests_running", "vllm:num_requests_waiting")):
            total += float(line.rsplit(" ", 1)[-1])
    return int(total)


def ping(port: int) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"http://127.0.0.1:{port}/ping", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False
