"""One product, two faces, for bad input (issue 34): every bad input peagle refuses, in ONE
table. For each, the SDK's module-level function raises the error class the CLI reports,
about the same parameter (`.field`, the SDK keyword, and the `--json` error document's
`field`), exit 2, and neither face sends a request (the moto harness records what reaches
it). Only the rendering differs: where the message names the parameter, the CLI names the
flag (`-k`, `--max-tokens`) and Python the keyword (`k=`, `max_tokens=`); the CLI's message
is the SDK's, word for word, but for that.

Every case runs in a fresh moto world (no endpoint: bad input is refused before the
first request, so nothing has to exist). A case whose error does not carry `field` yet is
marked xfail(strict=True) with the helper whose module raises it; the mark goes when that
conversion lands, and a strict xfail that starts passing fails until it does.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from moto import mock_aws

import sm_peagle
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness
from sm_peagle.cli.faces import CliFace, flag_for
from sm_peagle.errors import CheckFailed, Param, PeagleError, SpecError, Text
from tests.integration.lifecycle_env import REGION, build_world, run

NAME = "peagle-gpt-oss-20b-p-eagle"  # the endpoint `deploy gpt-oss-20b` makes
HEAD_URI = "s3://jumpstart-cache-prod-us-west-2/lmi-eagle-heads/models/gpt-oss-20b-p-eagle/"

Argv = Callable[[Path], list[str]]
SdkCall = Callable[[Path], Any]


@dataclass(frozen=True)
class Case:
    """One bad input: the CLI's argv (without --json), the SDK call, the error class both
    raise and the parameter it is about (the SDK keyword)."""

    argv: Argv
    sdk: SdkCall
    field: str
    error: type[PeagleError] = SpecError


def case(
    argv: list[str] | Argv, sdk: SdkCall, field_: str, *, error: type[PeagleError] = SpecError
) -> Case:
    args = argv if callable(argv) else (lambda _tmp, a=argv: list(a))
    return Case(args, sdk, field_, error)


def _file(tmp: Path) -> Path:
    path = tmp / "a-file"
    path.write_text("not a directory\n")
    return path


# The table: every bad input, one row each, at least one per command that takes input.
CASES: dict[str, Case] = {
    # -- plan / deploy: spec options -----------------------------------------------------
    "plan k 0": case(
        ["plan", "gpt-oss-20b", "-k", "0"],
        lambda _: sm_peagle.plan("gpt-oss-20b", k=0),
        "k",
    ),
    "deploy k 0": case(
        ["deploy", "gpt-oss-20b", "-k", "0", "--yes"],
        lambda _: sm_peagle.deploy("gpt-oss-20b", k=0),
        "k",
    ),
    "plan mode": case(
        ["plan", "gpt-oss-20b", "--mode", "fast"],
        lambda _: sm_peagle.plan("gpt-oss-20b", mode="fast"),
        "mode",
    ),
    "deploy unknown instance type": case(
        ["deploy", "gpt-oss-20b", "--instance-type", "ml.g9.nope", "--yes"],
        lambda _: sm_peagle.deploy("gpt-oss-20b", instance_type="ml.g9.nope"),
        "instance_type",
        error=CheckFailed,
    ),
    "plan instance count 0": case(
        ["plan", "gpt-oss-20b", "--instance-count", "0"],
        lambda _: sm_peagle.plan("gpt-oss-20b", instance_count=0),
        "instance_count",
    ),
    "plan region": case(
        ["plan", "gpt-oss-20b", "--region", "mars-1"],
        lambda _: sm_peagle.plan("gpt-oss-20b", region="mars-1"),
        "region",
    ),
    "plan accelerators per copy 0": case(
        [
            "plan",
            "gpt-oss-20b",
            "--hosting",
            "inference-components",
            "--accelerators-per-copy",
            "0",
        ],
        lambda _: sm_peagle.plan(
            "gpt-oss-20b", hosting="inference-components", accelerators_per_copy=0
        ),
        "accelerators_per_copy",
    ),
    "deploy sandbox-only model": case(
        ["deploy", "tiny-llama", "--yes"], lambda _: sm_peagle.deploy("tiny-llama"), "model"
    ),
    # -- update: bad values and bad combinations -----------------------------------------
    "update k 0": case(
        ["update", NAME, "-k", "0", "--yes"], lambda _: sm_peagle.update(NAME, k=0), "k"
    ),
    "update bad name": case(
        ["update", "a_b", "-k", "3", "--yes"], lambda _: sm_peagle.update("a_b", k=3), "name"
    ),
    "update copies without component": case(
        ["update", NAME, "--copies", "2", "--yes"],
        lambda _: sm_peagle.update(NAME, copies=2),
        "component",
    ),
    "update component with copies and k": case(
        ["update", NAME, "--component", "c", "--copies", "2", "-k", "5", "--yes"],
        lambda _: sm_peagle.update(NAME, component="c", copies=2, k=5),
        "copies",
    ),
    "update component with instance type": case(
        [
            "update",
            NAME,
            "--component",
            "c",
            "-k",
            "5",
            "--instance-type",
            "ml.g6e.2xlarge",
            "--yes",
        ],
        lambda _: sm_peagle.update(NAME, component="c", k=5, instance_type="ml.g6e.2xlarge"),
        "instance_type",
    ),  # fmt: skip
    # -- bench / sweep / race / tune-k ---------------------------------------------------
    "bench concurrency 0": case(
        ["bench", NAME, "-c", "0", "-n", "1"],
        lambda _: sm_peagle.bench(NAME, concurrency=[0], requests=1),
        "concurrency",
    ),
    "bench concurrency 1,,4": case(
        ["bench", NAME, "-c", "1,,4", "-n", "1"],
        lambda _: sm_peagle.bench(NAME, concurrency="1,,4", requests=1),
        "concurrency",
    ),
    "bench duration 0s": case(
        ["bench", NAME, "--duration", "0s"],
        lambda _: sm_peagle.bench(NAME, duration="0s"),
        "duration",
    ),
    "bench max tokens 0": case(
        ["bench", NAME, "-n", "1", "--max-tokens", "0"],
        lambda _: sm_peagle.bench(NAME, requests=1, max_tokens=0),
        "max_tokens",
    ),
    "bench bad name": case(
        ["bench", "a_b", "-c", "1", "-n", "1"],
        lambda _: sm_peagle.bench("a_b", concurrency=1, requests=1),
        "endpoint",
    ),
    "bench output under a file": case(
        lambda tmp: ["bench", NAME, "-n", "1", "--output", str(_file(tmp) / "r.json")],
        lambda tmp: sm_peagle.bench(NAME, requests=1, out=_file(tmp) / "r.json"),
        "out",
    ),
    "sweep output under a file": case(
        lambda tmp: ["sweep", "gpt-oss-20b", "--output", str(_file(tmp) / "runs")],
        lambda tmp: sm_peagle.sweep("gpt-oss-20b", out_dir=_file(tmp) / "runs"),
        "out_dir",
    ),
    "sweep k 0": case(
        ["sweep", "gpt-oss-20b", "-k", "0"], lambda _: sm_peagle.sweep("gpt-oss-20b", k="0"), "k"
    ),
    "sweep unknown mode": case(
        ["sweep", "gpt-oss-20b", "--modes", "fast"],
        lambda _: sm_peagle.sweep("gpt-oss-20b", modes="fast"),
        "modes",
    ),
    "race bad name": case(["race", "a_b", NAME], lambda _: sm_peagle.race("a_b", NAME), "a"),
    "race empty prompt": case(
        ["race", NAME, "other", "--prompt", " "],
        lambda _: sm_peagle.race(NAME, "other", prompt=" "),
        "prompt",
    ),
    "race temperature 3": case(
        ["race", NAME, "other", "--temperature", "3"],
        lambda _: sm_peagle.race(NAME, "other", temperature=3.0),
        "temperature",
    ),
    "tune-k requests 0": case(
        ["tune-k", NAME, "--requests", "0"],
        lambda _: sm_peagle.tune_k(NAME, requests=0),
        "requests",
    ),
    "tune-k tolerance -1": case(
        ["tune-k", NAME, "--tolerance", "-1"],
        lambda _: sm_peagle.tune_k(NAME, tolerance=-1),
        "tolerance",
    ),
    # -- invoke / chat ---------------------------------------------------------------------
    "invoke bad name": case(
        ["invoke", "a_b", "hi"], lambda _: sm_peagle.invoke("a_b", "hi"), "endpoint"
    ),
    "invoke max tokens 0": case(
        ["invoke", NAME, "hi", "--max-tokens", "0"],
        lambda _: sm_peagle.invoke(NAME, "hi", max_tokens=0),
        "max_tokens",
    ),
    "invoke temperature -1": case(
        ["invoke", NAME, "hi", "--temperature", "-1"],
        lambda _: sm_peagle.invoke(NAME, "hi", temperature=-1.0),
        "temperature",
    ),
    "invoke top-p 2": case(
        ["invoke", NAME, "hi", "--top-p", "2"],
        lambda _: sm_peagle.invoke(NAME, "hi", top_p=2.0),
        "top_p",
    ),
    "chat max tokens 0": case(
        ["chat", NAME, "--max-tokens", "0"],
        lambda _: sm_peagle.chat(NAME, max_tokens=0),
        "max_tokens",
    ),
    # -- status / logs / delete / gc / adopt ------------------------------------------------
    "status bad name": case(
        ["status", "not_a/name"], lambda _: sm_peagle.status("not_a/name"), "name"
    ),
    "logs since": case(
        ["logs", NAME, "--since", "soon"], lambda _: sm_peagle.logs(NAME, since="soon"), "since"
    ),
    "health window": case(
        ["health", NAME, "--window", "soon"],
        lambda _: sm_peagle.health(NAME, window="soon"),
        "window",
    ),
    "health window 0": case(
        ["health", NAME, "--window", "0"], lambda _: sm_peagle.health(NAME, window="0"), "window"
    ),
    "delete empty name": case(["delete", "", "--yes"], lambda _: sm_peagle.delete(""), "name"),
    "gc min age": case(
        ["gc", "--min-age", "yesterday", "--yes"],
        lambda _: sm_peagle.gc(min_age="yesterday"),
        "min_age",
    ),
    "gc operation": case(
        ["gc", "--operation", "op-yesterday", "--yes"],
        lambda _: sm_peagle.gc(operation="op-yesterday"),
        "operation",
    ),
    "adopt bad name": case(["adopt", "a_b", "--yes"], lambda _: sm_peagle.adopt("a_b"), "name"),
    # -- export / drafter / report / recommend ---------------------------------------------
    "export unknown format": case(
        ["export", "gpt-oss-20b", "--format", "pulumi"],
        lambda _: sm_peagle.export("gpt-oss-20b", format="pulumi"),
        "format",
    ),
    "drafter push bucket root": case(
        ["drafter", "push", ".", "s3://bucket"],
        lambda _: sm_peagle.drafter_push(".", "s3://bucket"),
        "dest",
    ),
    "drafter inspect missing directory": case(
        lambda tmp: ["drafter", "inspect", str(tmp / "none")],
        lambda tmp: sm_peagle.drafter_inspect(str(tmp / "none")),
        "source",
    ),
    "drafter check bad mode": case(
        ["drafter", "check", HEAD_URI, "--mode", "fast"],
        lambda _: sm_peagle.drafter_check(HEAD_URI, mode="fast"),
        "mode",
    ),
    "report missing file": case(
        lambda tmp: ["report", str(tmp / "none.json")],
        lambda tmp: sm_peagle.report(tmp / "none.json"),
        "path",
    ),
    "recommend zero budget": case(
        ["recommend", "gpt-oss-20b", "--budget", "0"],
        lambda _: sm_peagle.recommend("gpt-oss-20b", budget=0),
        "budget",
    ),
    # issue 35: recommend's sizing input is `sequences` (was `concurrency`) and its results
    # directory `results_dir` (was `results`): each face names the new spelling.
    "recommend sequences 0": case(
        ["recommend", "gpt-oss-20b", "--sequences", "0"],
        lambda _: sm_peagle.recommend("gpt-oss-20b", sequences=0),
        "sequences",
    ),
    "recommend results dir without results": case(
        lambda tmp: ["recommend", "gpt-oss-20b", "--results-dir", str(tmp)],
        lambda tmp: sm_peagle.recommend("gpt-oss-20b", results_dir=tmp),
        "results_dir",
    ),
}


@contextmanager
def fresh_world() -> Iterator[SageMakerHarness]:
    with mock_aws(), SageMakerHarness(region=REGION, default_update_schedule=None) as h:
        build_world()
        h.requests.clear()
        yield h


def _command(argv: list[str]) -> str:
    return argv[0]


def _names_parameter(message: str, name: str) -> bool:
    return isinstance(message, Text) and Param(name) in message.parts


# Cases whose error does not name its field yet, and the helper of issue 34 whose
# conversion of the module that raises it gives it one (the lead drops each as it lands).
C, D, M, B = "the client helper", "the deploy helper", "the measure helper", "errors-b"
LATER: dict[str, str] = {}


def _marks(name: str) -> tuple[Any, ...]:
    if name not in LATER:
        return ()
    return (pytest.mark.xfail(strict=True, reason=f"field arrives with {LATER[name]}"),)


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n), id=n) for n in CASES])
def test_the_same_bad_input_is_the_same_error_about_the_same_field_in_both_faces(
    name: str,
    aws_credentials: None,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    c = CASES[name]
    monkeypatch.delenv("PEAGLE_SANDBOX_URL", raising=False)
    monkeypatch.delenv("PEAGLE_SANDBOX", raising=False)
    argv = c.argv(tmp_path)
    with fresh_world() as h:
        with pytest.raises(c.error) as caught:
            c.sdk(tmp_path)
        assert h.requests.all() == [], f"the SDK sent {h.requests.all()}"
        code, out, err = run(capsys, "--json", *argv)
        assert h.requests.all() == [], f"the CLI sent {h.requests.all()}"
    exc = caught.value
    doc = json.loads(out)["error"]
    assert (code, exc.exit_code) == (2, 2)
    assert doc["type"] == type(exc).__name__ == c.error.__name__
    assert exc.field == c.field, exc.one_line()
    assert doc["field"] == c.field, doc
    assert "Traceback" not in err and err.startswith("error: ")
    # Only the rendering differs: the CLI says the SDK's message in its words.
    command = _command(argv)
    assert doc["message"] == (
        exc.message.render(CliFace(command)) if isinstance(exc.message, Text) else exc.message
    )
    if _names_parameter(exc.message, c.field):
        assert f"{c.field}=" in str(exc)
        assert flag_for(c.field, command) in doc["message"]
        assert f"{c.field}=" not in doc["message"]


def test_every_command_that_takes_input_has_a_bad_input_case(tmp_path: Path) -> None:
    commands = {c.argv(tmp_path)[0] for c in CASES.values()}
    takes_input = {
        "plan", "deploy", "update", "bench", "sweep", "race", "tune-k", "invoke", "chat",
        "status", "logs", "delete", "gc", "adopt", "export", "drafter", "report", "recommend",
        "health",
    }  # fmt: skip
    assert takes_input <= commands, takes_input - commands
