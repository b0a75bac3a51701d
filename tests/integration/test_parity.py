"""One product, two faces: each `peagle` command that calls AWS sends exactly the requests
its SDK call sends, and the same bad input gets the same typed error from both.

The requests are read where moto receives them (the harness's request record,
peagle_sandbox/testing/request_log.py), in a fresh moto world for each face, so neither
face's state leaks into the other's. A scenario's setup (the endpoint a `status` needs,
say) runs through the SDK in both worlds before the record is cleared.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

import sm_peagle
from peagle_sandbox.synthetic_head import synthetic_head
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness
from sm_peagle.errors import PeagleError, SpecError
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


# The same bad input through both faces: (CLI argv, SDK call, error type, words both say).
BAD: dict[str, tuple[list[str], Callable[[], Any], type[PeagleError], str]] = {
    "bench concurrency 0": (
        ["bench", NAME, "-c", "0", "-n", "1"],
        lambda: sm_peagle.bench(NAME, concurrency=[0], requests=1),
        SpecError,
        "concurrency",
    ),
    "bench concurrency 1,,4": (
        ["bench", NAME, "-c", "1,,4", "-n", "1"],
        lambda: sm_peagle.bench(NAME, concurrency="1,,4", requests=1),
        SpecError,
        "concurrency",
    ),
    "bench duration 0s": (
        ["bench", NAME, "--duration", "0s"],
        lambda: sm_peagle.bench(NAME, duration="0s"),
        SpecError,
        "duration",
    ),
    "logs since": (
        ["logs", NAME, "--since", "soon"],
        lambda: sm_peagle.logs(NAME, since="soon"),
        SpecError,
        "soon",
    ),
    "gc min age": (
        ["gc", "--min-age", "yesterday", "--yes"],
        lambda: sm_peagle.gc(min_age="yesterday"),
        SpecError,
        "yesterday",
    ),
    "update k 0": (
        ["update", NAME, "-k", "0", "--yes"],
        lambda: sm_peagle.update(NAME, k=0),
        SpecError,
        "K must be at least 1",
    ),
    "deploy sandbox-only model": (
        ["deploy", "tiny-llama", "--yes"],
        lambda: sm_peagle.deploy("tiny-llama"),
        SpecError,
        "sandbox-only",
    ),
    # (An unknown model id is not here: it may be a JumpStart id, which only a read of
    # JumpStart's manifest can tell, so that read is the one request it costs.)
    "deploy unknown instance type": (
        ["deploy", "gpt-oss-20b", "--instance-type", "ml.g9.nope", "--yes"],
        lambda: sm_peagle.deploy("gpt-oss-20b", instance_type="ml.g9.nope"),
        SpecError,
        "ml.g9.nope",
    ),
    "delete empty name": (
        ["delete", "", "--yes"],
        lambda: sm_peagle.delete(""),
        SpecError,
        "name",
    ),
    "update bad name": (
        ["update", "a_b", "-k", "3", "--yes"],
        lambda: sm_peagle.update("a_b", k=3),
        SpecError,
        "'a_b' is not a SageMaker name",
    ),
    "adopt bad name": (
        ["adopt", "a_b", "--yes"],
        lambda: sm_peagle.adopt("a_b"),
        SpecError,
        "'a_b' is not a SageMaker name",
    ),
    "bench bad name": (
        ["bench", "a_b", "-c", "1", "-n", "1"],
        lambda: sm_peagle.bench("a_b", concurrency=1, requests=1),
        SpecError,
        "'a_b' is not a SageMaker name",
    ),
    "invoke bad name": (
        ["invoke", "a_b", "hi"],
        lambda: sm_peagle.invoke("a_b", "hi"),
        SpecError,
        "'a_b' is not a SageMaker name",
    ),
    "race bad name": (
        ["race", "a_b", NAME],
        lambda: sm_peagle.race("a_b", NAME),
        SpecError,
        "'a_b' is not a SageMaker name",
    ),
    "status bad name": (
        ["status", "not_a/name"],
        lambda: sm_peagle.status("not_a/name"),
        SpecError,
        "not_a/name",
    ),
    "invoke max tokens 0": (
        ["invoke", NAME, "hi", "--max-tokens", "0"],
        lambda: sm_peagle.invoke(NAME, "hi", max_tokens=0),
        SpecError,
        "max_tokens",
    ),
    "invoke temperature -1": (
        ["invoke", NAME, "hi", "--temperature", "-1"],
        lambda: sm_peagle.invoke(NAME, "hi", temperature=-1),
        SpecError,
        "temperature",
    ),
    "race empty prompt": (
        ["race", NAME, "other", "--prompt", " "],
        lambda: sm_peagle.race(NAME, "other", prompt=" "),
        SpecError,
        "prompt",
    ),
    "export unknown format": (
        ["export", "gpt-oss-20b", "--format", "pulumi"],
        lambda: sm_peagle.export("gpt-oss-20b", format="pulumi"),
        SpecError,
        "pulumi",
    ),
    "drafter push bucket root": (
        ["drafter", "push", ".", "s3://bucket"],
        lambda: sm_peagle.drafter_push(".", "s3://bucket"),
        SpecError,
        "s3://bucket",
    ),
    "drafter check bad mode": (
        ["drafter", "check", HEAD_URI, "--mode", "fast"],
        lambda: sm_peagle.drafter_check(HEAD_URI, mode="fast"),
        SpecError,
        "fast",
    ),
    "recommend zero budget": (
        ["recommend", "gpt-oss-20b", "--budget", "0"],
        lambda: sm_peagle.recommend("gpt-oss-20b", budget=0),
        SpecError,
        "budget",
    ),
}


@pytest.mark.parametrize("name", list(BAD))
def test_the_same_bad_input_gets_the_same_error_from_both_and_sends_nothing(
    name: str, aws_credentials: None, capsys: pytest.CaptureFixture, monkeypatch
) -> None:
    argv, call, error, words = BAD[name]
    monkeypatch.delenv("PEAGLE_SANDBOX_URL", raising=False)
    with fresh_world() as (h, _):
        h.requests.clear()
        with pytest.raises(error) as info:
            call()
        assert words in info.value.one_line()
        assert sent(h) == [], f"{name}: the SDK sent {sent(h)}"
        code, out, err = run(capsys, *argv)
        assert sent(h) == [], f"{name}: the CLI sent {sent(h)}"
    assert code == info.value.exit_code == 2
    (line,) = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert words in line and "(fix: " in line
    assert json.dumps(out) == '""'


def test_there_are_at_least_twelve_bad_inputs() -> None:
    assert len(BAD) >= 12


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
