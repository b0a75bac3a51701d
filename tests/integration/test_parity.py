"""One product, two faces: each `peagle` command that calls AWS sends exactly the requests
its SDK call sends. (The same bad input gets the same typed error about the same field
from both: tests/e2e/test_sdk_cli_parity.py, the one table of bad inputs.)

The requests are read where moto receives them (the harness's request record,
peagle_sandbox/testing/request_log.py), in a fresh moto world for each face, so neither
face's state leaks into the other's. A scenario's setup (the endpoint a `status` needs,
say) runs through the SDK in both worlds before the record is cleared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

import sm_peagle
from peagle_sandbox.synthetic_head import synthetic_head
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness
from sm_peagle.errors import SpecError
from tests.integration.lifecycle_env import JS_BUCKET, REGION, build_world, run
from tests.operation_tags import COMPLETED
from tests.operation_tags import KEYS as OPERATION_KEYS

NAME = "peagle-gpt-oss-20b-p-eagle"
JS_ENDPOINT = "jumpstart-gpt-oss-20b"  # the name tests/integration/test_adopt.py creates
HEAD_URI = f"s3://{JS_BUCKET}/lmi-eagle-heads/models/gpt-oss-20b-p-eagle/"
# Values that differ between two runs of the same action by design, not by face: left out,
# or (times of the call, e.g. a log query's start) kept as present but not compared.
VOLATILE = ("ClientToken", "RequestId")
TIMES = ("startTime", "endTime", "StartTime", "EndTime")


@contextmanager
def fresh_world() -> Iterator[tuple[SageMakerHarness, str]]:
    with mock_aws(), SageMakerHarness(region=REGION, default_update_schedule=None) as h:
        world = build_world()
        yield h, world.role_arn


def _normal(value: Any) -> Any:
    if isinstance(value, dict) and value.get("Key") in OPERATION_TAGS:
        return {"Key": value["Key"], "Value": "<operation>"}  # differs run to run
    if isinstance(value, dict):
        return {
            k: "<time>" if k in TIMES else _normal(v)
            for k, v in sorted(value.items())
            if k not in VOLATILE
        }
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


OPERATION_TAGS = (*OPERATION_KEYS, COMPLETED)


def sent(h: SageMakerHarness) -> list[tuple[str, str, Any]]:
    return [(r.service, r.operation, _normal(r.params)) for r in h.requests.all()]


def _deployed(role: str) -> None:
    sm_peagle.deploy("gpt-oss-20b", role=role)


def _jumpstart_endpoint(role: str) -> None:
    """An endpoint made outside peagle, as JumpStart's deploy makes it (for adopt)."""
    from tests.integration.test_adopt import create_jumpstart_endpoint

    create_jumpstart_endpoint(role)


def _spec_file(tmp: Path, role: str) -> Path:
    path = tmp / "d.yaml"
    path.write_text(
        f"model: gpt-oss-20b\nregion: {REGION}\nrole: {role}\n"
        "speculative:\n  num_speculative_tokens: 5\n"
    )
    return path


def _local_head(tmp: Path) -> Path:
    head = tmp / "head"
    head.mkdir(exist_ok=True)
    for rel, data in synthetic_head(target_hidden=2880, target_vocab=201088).items():
        (head / rel).write_bytes(data)
    return head


# name -> (setup(role) run through the SDK in both worlds, CLI argv(role, tmp),
#          SDK call(role, tmp))
Scenario = tuple[
    Callable[[str], None] | None,
    Callable[[str, Path], list[str]],
    Callable[[str, Path], Any],
]
SCENARIOS: dict[str, Scenario] = {
    "deploy": (
        None,
        lambda role, _: ["deploy", "gpt-oss-20b", "--role", role, "--yes"],
        lambda role, _: sm_peagle.deploy("gpt-oss-20b", role=role),
    ),
    "status": (_deployed, lambda *_: ["status", NAME], lambda *_: sm_peagle.status(NAME)),
    "ls": (_deployed, lambda *_: ["ls"], lambda *_: sm_peagle.ls()),
    "health": (_deployed, lambda *_: ["health", NAME], lambda *_: sm_peagle.health(NAME)),
    "health monitored": (
        lambda role: sm_peagle.deploy("gpt-oss-20b", role=role, monitor=True),
        lambda *_: ["health", NAME, "--window", "30m"],
        lambda *_: sm_peagle.health(NAME, window="30m"),
    ),
    "logs": (
        _deployed,
        lambda *_: ["logs", NAME, "--since", "5m"],
        lambda *_: list(sm_peagle.logs(NAME, since="5m")),
    ),
    "update": (
        _deployed,
        lambda *_: ["update", NAME, "-k", "5", "--yes"],
        lambda *_: sm_peagle.update(NAME, k=5),
    ),
    "delete": (
        _deployed,
        lambda *_: ["delete", NAME, "--yes"],
        lambda *_: sm_peagle.delete(NAME),
    ),
    "gc": (_deployed, lambda *_: ["gc", "--yes"], lambda *_: sm_peagle.gc()),
    "diff": (
        _deployed,
        lambda role, tmp: ["diff", "-f", str(_spec_file(tmp, role))],
        lambda role, tmp: sm_peagle.diff(_spec_file(tmp, role)),
    ),
    "apply": (
        _deployed,
        lambda role, tmp: ["apply", "-f", str(_spec_file(tmp, role)), "--yes"],
        lambda role, tmp: sm_peagle.apply(_spec_file(tmp, role)),
    ),
    "adopt": (
        _jumpstart_endpoint,
        lambda *_: ["adopt", JS_ENDPOINT, "--yes"],
        lambda *_: sm_peagle.adopt(JS_ENDPOINT),
    ),
    "drafter inspect": (
        None,
        lambda *_: ["drafter", "inspect", HEAD_URI],
        lambda *_: sm_peagle.drafter_inspect(HEAD_URI),
    ),
    "drafter check": (
        None,
        lambda *_: ["drafter", "check", HEAD_URI, "--model", "gpt-oss-20b"],
        lambda *_: sm_peagle.drafter_check(HEAD_URI, model="gpt-oss-20b"),
    ),
    "drafter push": (
        None,
        lambda _, tmp: ["drafter", "push", str(_local_head(tmp)), f"s3://{JS_BUCKET}/mine/"],
        lambda _, tmp: sm_peagle.drafter_push(_local_head(tmp), f"s3://{JS_BUCKET}/mine/"),
    ),
}


# Scenarios whose requests run in parallel (push uploads a head's files at once), so their
# order is the scheduler's, not the face's.
UNORDERED = {"drafter push"}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_cli_and_the_sdk_send_the_same_requests(
    name: str, aws_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    setup, argv, call = SCENARIOS[name]
    records = {}
    for face in ("cli", "sdk"):
        work = tmp_path / face
        work.mkdir()
        with fresh_world() as (h, role):
            if setup is not None:
                setup(role)
            h.requests.clear()
            if face == "cli":
                code, _, err = run(capsys, *argv(role, work))
                assert code == 0, err
            else:
                call(role, work)
            records[face] = sent(h)
    assert records["cli"], f"{name}: nothing was sent"
    if name in UNORDERED:
        assert sorted(map(repr, records["cli"])) == sorted(map(repr, records["sdk"]))
    else:
        assert records["cli"] == records["sdk"]


def test_an_unwritable_output_path_is_refused_before_any_request_everywhere(
    aws_credentials: None, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """One output-path check (ops/session.check_output_path) for every command that
    writes: a directory given as the file is refused, with nothing sent and nothing
    written, from the SDK and the CLI alike."""
    cases = [
        (["export", "gpt-oss-20b", "-o"], lambda p: sm_peagle.export("gpt-oss-20b", output=p)),
        (["adopt", NAME, "--yes", "-o"], lambda p: sm_peagle.adopt(NAME, output=p)),
        (["bench", NAME, "-n", "1", "-c", "1", "-o"], lambda p: sm_peagle.bench(NAME, out=p)),
        (
            ["report", str(tmp_path / "r.json"), "--html"],
            lambda p: sm_peagle.report(tmp_path / "r.json", html=p),
        ),
    ]
    (tmp_path / "r.json").write_text("{}")
    with fresh_world() as (h, _):
        h.requests.clear()
        for argv, call in cases:
            with pytest.raises(SpecError) as info:
                call(tmp_path)
            assert f"{tmp_path} is a directory" in info.value.message, argv
            code, out, err = run(capsys, *argv, str(tmp_path))
            assert code == 2 and f"{tmp_path} is a directory" in err, (argv, err)
        assert sent(h) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]
