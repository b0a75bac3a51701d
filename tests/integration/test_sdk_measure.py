"""Measurement and traffic through the SDK and the CLI: the same bad value is refused with
the same SpecError (type, message, exit 2) from both, before any AWS request (the moto
harness records every one) and before any file is written."""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

import sm_peagle
from sm_peagle.cli.app import main
from sm_peagle.cli.faces import cli_text
from sm_peagle.errors import SpecError

EP = "some-endpoint"


def _both(harness: Any, sdk: Any, cli_args: list[str]) -> SpecError:
    """Run the SDK call and the CLI (`--json`, in this process): both refuse with the
    same SpecError type and message (each face in its words), exit 2; nothing was sent."""
    with pytest.raises(SpecError) as caught:
        sdk()
    err = caught.value
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main([*cli_args, "--json"])
    assert code == 2, (stdout.getvalue(), stderr.getvalue())
    doc = json.loads(stdout.getvalue())
    doc = doc.get("error", doc)
    # The same message, in the CLI's words (flags for the SDK's keywords).
    said = cli_text(err.message, cli_args[0])
    assert (doc["type"], doc["message"], doc["exit_code"]) == ("SpecError", said, 2)
    assert doc.get("field") == err.field
    assert harness.requests.all() == []
    return err


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("concurrency=[0]", {"concurrency": [0]}, ["-c", "0"]),
    ("empty item", {"concurrency": "1,,4"}, ["-c", "1,,4"]),
    ("negative", {"concurrency": [-2]}, ["-c", "-2"]),
    ("requests over the bound", {"requests": 10**7}, ["-n", str(10**7)]),
    ("duration 0s", {"duration": "0s"}, ["--duration", "0s"]),
    ("max_tokens 0", {"max_tokens": 0}, ["--max-tokens", "0"]),
    ("negative temperature", {"temperature": -1.0}, ["--temperature", "-1"]),
]


@pytest.mark.parametrize(("why", "kwargs", "flags"), CASES, ids=[c[0] for c in CASES])
def test_bench_refusals_are_the_same_from_sdk_and_cli(
    sagemaker_harness: Any, why: str, kwargs: dict[str, Any], flags: list[str]
) -> None:
    err = _both(sagemaker_harness, lambda: sm_peagle.bench(EP, **kwargs), ["bench", EP, *flags])
    assert err.exit_code == 2


def test_endpoint_bench_refuses_concurrency_zero_before_any_request(
    sagemaker_harness: Any,
) -> None:
    ep = sm_peagle.Endpoint(EP, region="us-east-1")
    with pytest.raises(SpecError, match="concurrency=: expected positive integers"):
        ep.bench(concurrency=[0])
    assert sagemaker_harness.requests.all() == []


@pytest.mark.parametrize("flag", ["out", "csv", "requests_out"])
def test_unwritable_output_paths_are_refused_first(
    sagemaker_harness: Any, tmp_path: Path, flag: str
) -> None:
    a_file = tmp_path / "plain.txt"
    a_file.write_text("x", encoding="utf-8")
    bad = [tmp_path, Path("/proc/x/r.json"), a_file / "r.json"]
    for path in bad:
        before = _files(tmp_path)
        cli_flag = "--" + flag.replace("_", "-")
        err = _both(
            sagemaker_harness,
            lambda path=path: sm_peagle.bench(EP, **{flag: path}),
            ["bench", EP, cli_flag, str(path)],
        )
        assert err.remedy  # names a fix
        assert _files(tmp_path) == before  # nothing written


def test_sweep_out_dir_under_a_file_is_refused_before_any_plan(
    sagemaker_harness: Any, tmp_path: Path
) -> None:
    a_file = tmp_path / "plain.txt"
    a_file.write_text("x", encoding="utf-8")
    err = _both(
        sagemaker_harness,
        lambda: sm_peagle.sweep("gpt-oss-20b", out_dir=a_file),
        ["sweep", "gpt-oss-20b", "--output", str(a_file)],
    )
    assert "is a file, not a directory" in err.message


def test_report_refuses_an_html_path_that_is_a_directory(
    sagemaker_harness: Any, tmp_path: Path
) -> None:
    results = tmp_path / "r.json"
    results.write_text("{}", encoding="utf-8")
    before = _files(tmp_path)
    _both(
        sagemaker_harness,
        lambda: sm_peagle.report(results, html=tmp_path),
        ["report", str(results), "--html", str(tmp_path)],
    )
    assert _files(tmp_path) == before


@pytest.mark.parametrize(
    ("kwargs", "flags"),
    [
        ({"prompt": "  "}, ["  "]),
        ({"prompt": "Hi", "max_tokens": 0}, ["Hi", "--max-tokens", "0"]),
        ({"prompt": "Hi", "temperature": -1.0}, ["Hi", "--temperature", "-1"]),
    ],
)
def test_invoke_refusals_are_the_same_from_sdk_and_cli(
    sagemaker_harness: Any, kwargs: dict[str, Any], flags: list[str]
) -> None:
    _both(sagemaker_harness, lambda: sm_peagle.invoke(EP, **kwargs), ["invoke", EP, *flags])


def test_endpoint_invoke_refuses_bad_sampling_parameters_before_sending(
    sagemaker_harness: Any,
) -> None:
    ep = sm_peagle.Endpoint(EP, region="us-east-1")
    ep.__dict__["_components"] = {None: None}  # no component lookup: only the body is checked
    for params in ({"max_tokens": 0}, {"temperature": -0.5}):
        with pytest.raises(SpecError):
            ep.invoke("Hi", **params)
    with pytest.raises(SpecError, match="empty"):
        ep.stream("   ")
    assert sagemaker_harness.requests.all() == []


def test_race_refuses_an_empty_prompt_before_any_request(sagemaker_harness: Any) -> None:
    _both(
        sagemaker_harness,
        lambda: sm_peagle.race("a", "b", prompt=" "),
        ["race", "a", "b", "--prompt", " "],
    )
    assert os.environ.get("PEAGLE_SANDBOX_URL") is None
