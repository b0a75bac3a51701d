"""The heads vLLM starts with and then fails every request on (issue 25): the costliest kind
on SageMaker, where the endpoint goes InService and every invocation fails.

Each head gets a `vllm serve` of its own (a batched offline run cannot show a health
check): /health answers 200, then two completions are sent and both fail, and the engine
log shows the engine died at the first one. peagle fails the same head, saying "vLLM …
starts and passes the health check, then fails every request". What the engine's error
names is compared in test_heads.py, where the same heads run in the batched process (on
hosts with AVX512-BF16 kernels the serve worker dies by a signal, without the message).
"""

from __future__ import annotations

import json
import urllib.error
from pathlib import Path
from typing import Any

import pytest

from tests.conformance import head_classes
from tests.conformance.engine_proc import ServeProcess


def _request(srv: ServeProcess) -> int:
    """The HTTP status of one greedy completion (0 when the connection failed)."""
    try:
        srv.complete("the verifier", max_tokens=8, temperature=0.0)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0
    return 200


@pytest.mark.parametrize("name", head_classes.FIRST_REQUEST_HEADS)
def test_starts_passes_health_then_fails_every_request(
    engine: Any, class_heads: dict[str, Path], tmp_path: Path, name: str
) -> None:
    spec = {
        "model": str(class_heads[name]),
        "method": "eagle3",
        "num_speculative_tokens": 3,
        "parallel_drafting": True,
    }
    log = tmp_path / f"{name}.log"
    with ServeProcess(
        engine,
        str(engine.models / "tiny-llama"),
        "--speculative-config",
        json.dumps(spec),
        log_path=log,
    ) as srv:
        srv.wait_ready()  # /health answered 200: SageMaker's ping would pass
        statuses = [_request(srv), _request(srv)]
    text = log.read_text(errors="replace")
    assert statuses[0] != 200 and statuses[1] != 200, (
        f"{name}: vLLM {engine.version} served a request ({statuses}); {srv.last_error()}"
    )
    assert "EngineDeadError" in text or "died unexpectedly" in text, text[-1500:]
    checks = head_classes.peagle_checks(class_heads[name], engine.version)
    case = head_classes.CLASSES[name]
    said = next(c for c in checks if c.name == case.check)
    assert said.status == "fail", f"{name}: peagle {said.status}: {said.message}"
    assert head_classes.PHRASE[head_classes.FIRST_REQUEST] in said.message, said.message
