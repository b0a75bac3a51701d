"""examples/jumpstart_endpoint.py (the README's "made elsewhere" endpoint) sends the same
three requests as test_adopt.py's JumpStart-shaped helper, whose every value is read from
the bundled JumpStart spec; only the names differ. Then it is adopted with no difference."""

from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path
from typing import Any

import boto3

from tests.integration.lifecycle_env import run
from tests.integration.test_adopt import NAME, create_jumpstart_endpoint

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "jumpstart_endpoint.py"


def load_example() -> Any:
    spec = importlib.util.spec_from_file_location("jumpstart_endpoint_example", EXAMPLE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def recorded(monkeypatch, make: Any) -> list[tuple[str, dict[str, Any]]]:
    """The SageMaker requests `make()` sends through boto3.client, as botocore sends them."""
    sent: list[tuple[str, dict[str, Any]]] = []
    real = boto3.client

    def client(*args: Any, **kwargs: Any) -> Any:
        c = real(*args, **kwargs)

        def before(params: dict, model: Any, **_: Any) -> None:
            sent.append((model.name, copy.deepcopy(params)))

        c.meta.events.register("provide-client-params.sagemaker", before)
        return c

    with monkeypatch.context() as mp:
        mp.setattr(boto3, "client", client)
        make()
    return sent


def renamed(requests: list[tuple[str, dict[str, Any]]], old: str, new: str) -> str:
    return json.dumps(requests, sort_keys=True).replace(old, new)


def test_the_example_sends_jumpstarts_requests_and_adopts_cleanly(world, capsys, monkeypatch):
    example = load_example()
    ours = recorded(monkeypatch, lambda: example.create("ex", world.role_arn))
    theirs = recorded(monkeypatch, lambda: create_jumpstart_endpoint(world.role_arn))
    assert [op for op, _ in ours] == ["CreateModel", "CreateEndpointConfig", "CreateEndpoint"]
    assert renamed(ours, '"ex', f'"{NAME}') == renamed(theirs, "", "")
    code, out, err = run(capsys, "adopt", "ex", "--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)["differences"] == []
