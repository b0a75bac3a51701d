"""Nothing is spent before the input is checked (issue 24, items 1, 4 and 8): a bad output
path, bound, name or missing optional dependency is refused by the SDK call and by the
CLI command that calls it with the same typed error and one line `error: ... (fix: ...)`
(exit 2; a missing endpoint is exit 1), and before that refusal nothing but reads
(Describe*/List*/Get*/Head*) reached AWS: no Create*/Update*/Delete*, no upload and no
runtime invocation.

What was sent is read where moto receives it (the harness's request log) and, for the
runtime API (which stock moto only partly serves), at the client as botocore sends it
(lifecycle_env.record_requests). Cases already held by other tests are not repeated here:
tests/e2e/test_sdk_cli_parity.py (concurrency 0 and `1,,4`, `--duration 0s`, invoke
`--max-tokens 0` and `--temperature -1`, race's empty prompt, `delete ''`, bad names) and
test_sdk_measure.py (bench `--out/--csv/--requests-out` unwritable, `-n` far over the
bound, sweep `--output` under a file, report `--html` a directory).
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import sm_peagle
from sm_peagle.cli.faces import CliFace, cli_text
from sm_peagle.errors import NotFound, PeagleError, SpecError
from tests.integration.lifecycle_env import World, record_requests, run
from tests.plan_helpers import TWO_COMPONENTS

NAME = "peagle-gpt-oss-20b-p-eagle"  # the endpoint `deploy gpt-oss-20b` makes
READ = re.compile(r"^(Describe|List|Get|Head)")


@pytest.fixture
def deployed(world: World, capsys: Any, monkeypatch: pytest.MonkeyPatch, sagemaker_harness: Any):
    """gpt-oss-20b deployed (InService); from here on every request is recorded: in moto
    (the harness) and, for the runtime API and S3, at the client."""
    monkeypatch.delenv("PEAGLE_SANDBOX_URL", raising=False)
    record_requests(world, monkeypatch, "sagemaker-runtime", "s3")
    code, _, err = run(capsys, "deploy", "gpt-oss-20b", "--yes")
    assert code == 0, err
    world.requests.clear()
    sagemaker_harness.requests.clear()
    return world, sagemaker_harness


def spent(recorded: tuple[World, Any]) -> list[str]:
    """Every request that is not a read: what a refusal may not have cost."""
    world, harness = recorded
    ops = [r.operation for r in harness.requests.all()] + [op for op, _ in world.requests]
    return [op for op in ops if not READ.match(op)]


def refused_by_both(
    capsys: Any, recorded: tuple[World, Any], sdk: Callable[[], Any], argv: list[str],
    error: type[PeagleError] = SpecError,
) -> PeagleError:  # fmt: skip
    """The SDK raises `error`; the CLI prints exactly its one line (with a fix) in the CLI's
    words (its flags and commands), nothing on stdout, no traceback, and exits with its
    code; neither spent anything. The CLI's line is kept on the error as `cli_line`."""
    with pytest.raises(error) as caught:
        sdk()
    assert spent(recorded) == [], f"the SDK spent {spent(recorded)}"
    code, out, err = run(capsys, *argv)
    assert spent(recorded) == [], f"the CLI spent {spent(recorded)}"
    lines = err.strip().splitlines()
    (line,) = [ln for ln in lines if ln.startswith("error:")]
    exc = caught.value
    face = CliFace(argv[0])  # the same error, in the CLI's words (flags for keywords)
    if exc.remedy:
        assert line == f"error: {exc.one_line(face)}"
    else:  # the CLI names the command's help as the fix (cli/boundary.py)
        assert line.startswith(f"error: {cli_text(exc.message, argv[0])} (fix: "), line
    assert lines[-1] == line and "(fix: " in line
    assert "Traceback" not in err and out == ""
    assert code == caught.value.exit_code
    caught.value.cli_line = line  # type: ignore[attr-defined]
    return caught.value


# name -> (SDK call, CLI argv, words the message holds). Each value is given to both faces
# in the form each takes it (the CLI's text, the SDK's Python value that prints the same).
BOUNDS: dict[str, tuple[Callable[[], Any], list[str], str]] = {
    "bench -n 0": (
        lambda: sm_peagle.bench(NAME, requests=0),
        ["bench", NAME, "-n", "0"],
        "--requests",
    ),
    "bench -n 100,001": (  # one over the documented 1 to 100,000
        lambda: sm_peagle.bench(NAME, requests=100_001),
        ["bench", NAME, "-n", "100001"],
        "100,000",
    ),
    "bench --duration 0": (
        lambda: sm_peagle.bench(NAME, duration="0"),
        ["bench", NAME, "--duration", "0"],
        "--duration",
    ),
    "bench --temperature 2.5": (
        lambda: sm_peagle.bench(NAME, temperature=2.5),
        ["bench", NAME, "--temperature", "2.5"],
        "--temperature",
    ),
    "bench --temperature nan": (
        lambda: sm_peagle.bench(NAME, temperature=math.nan),
        ["bench", NAME, "--temperature", "nan"],
        "--temperature",
    ),
    "bench --workers 0": (
        lambda: sm_peagle.bench(NAME, workers=0),
        ["bench", NAME, "--workers", "0"],
        "--workers",
    ),
    "bench --warmup -1": (
        lambda: sm_peagle.bench(NAME, warmup=-1),
        ["bench", NAME, "--warmup", "-1"],
        "--warmup",
    ),
    "bench empty name": (lambda: sm_peagle.bench(""), ["bench", ""], "non-empty name"),
    "invoke --temperature 2.01": (
        lambda: sm_peagle.invoke(NAME, "Hi", temperature=2.01),
        ["invoke", NAME, "Hi", "--temperature", "2.01"],
        "--temperature",
    ),
    "invoke --top-p 0": (
        lambda: sm_peagle.invoke(NAME, "Hi", top_p=0.0),
        ["invoke", NAME, "Hi", "--top-p", "0"],
        "--top-p",
    ),
    "invoke --top-p 1.5": (
        lambda: sm_peagle.invoke(NAME, "Hi", top_p=1.5),
        ["invoke", NAME, "Hi", "--top-p", "1.5"],
        "--top-p",
    ),
    "invoke empty name": (lambda: sm_peagle.invoke("", "Hi"), ["invoke", "", "Hi"], "name"),
    "invoke empty prompt": (lambda: sm_peagle.invoke(NAME, ""), ["invoke", NAME, ""], "empty"),
    "chat --max-tokens 0": (
        lambda: sm_peagle.chat(NAME, max_tokens=0),
        ["chat", NAME, "--max-tokens", "0"],
        "--max-tokens",
    ),
    "chat --temperature 3": (
        lambda: sm_peagle.chat(NAME, temperature=3.0),
        ["chat", NAME, "--temperature", "3"],
        "--temperature",
    ),
    "chat --top-p 0": (
        lambda: sm_peagle.chat(NAME, top_p=0.0),
        ["chat", NAME, "--top-p", "0"],
        "--top-p",
    ),
    "chat empty name": (lambda: sm_peagle.chat(""), ["chat", ""], "non-empty name"),
    "race --max-tokens 0": (
        lambda: sm_peagle.race(NAME, NAME, max_tokens=0),
        ["race", NAME, NAME, "--max-tokens", "0"],
        "--max-tokens",
    ),
    "race --temperature 2.5": (
        lambda: sm_peagle.race(NAME, NAME, temperature=2.5),
        ["race", NAME, NAME, "--temperature", "2.5"],
        "--temperature",
    ),
    "race empty side": (lambda: sm_peagle.race("", NAME), ["race", "", NAME], "''"),
    "sweep -k 0": (
        lambda: sm_peagle.sweep("gpt-oss-20b", k="0"),
        ["sweep", "gpt-oss-20b", "-k", "0"],
        "-k",
    ),
    "sweep -k 3,,7": (
        lambda: sm_peagle.sweep("gpt-oss-20b", k="3,,7"),
        ["sweep", "gpt-oss-20b", "-k", "3,,7"],
        "-k",
    ),
    "sweep --concurrency 0": (
        lambda: sm_peagle.sweep("gpt-oss-20b", concurrency="0"),
        ["sweep", "gpt-oss-20b", "-c", "0"],
        "--concurrency",
    ),
    "sweep --max-tokens 0": (
        lambda: sm_peagle.sweep("gpt-oss-20b", max_tokens=0),
        ["sweep", "gpt-oss-20b", "--max-tokens", "0"],
        "--max-tokens",
    ),
    "sweep --temperature 5": (
        lambda: sm_peagle.sweep("gpt-oss-20b", temperature=5.0),
        ["sweep", "gpt-oss-20b", "--temperature", "5"],
        "--temperature",
    ),
    # A dataset that cannot be read was found only by the first configuration's bench,
    # after its deploy: every configuration deployed, failed and was deleted in turn.
    "sweep missing dataset": (
        lambda: sm_peagle.sweep("gpt-oss-20b", dataset="/no/such/prompts.jsonl"),
        ["sweep", "gpt-oss-20b", "--dataset", "/no/such/prompts.jsonl"],
        "/no/such/prompts.jsonl",
    ),
    "tune-k -n 0": (
        lambda: sm_peagle.tune_k(NAME, requests=0),
        ["tune-k", NAME, "-n", "0"],
        "--requests",
    ),
    "tune-k -n 100,001": (
        lambda: sm_peagle.tune_k(NAME, requests=100_001),
        ["tune-k", NAME, "-n", "100001"],
        "100,000",
    ),
    "tune-k --max-tokens 0": (
        lambda: sm_peagle.tune_k(NAME, max_tokens=0),
        ["tune-k", NAME, "--max-tokens", "0"],
        "--max-tokens",
    ),
    "tune-k -c 1,,4": (
        lambda: sm_peagle.tune_k(NAME, concurrency="1,,4"),
        ["tune-k", NAME, "-c", "1,,4"],
        "--concurrency",
    ),
    "tune-k empty name": (lambda: sm_peagle.tune_k(""), ["tune-k", ""], "non-empty name"),
}


@pytest.mark.parametrize("case", list(BOUNDS))
def test_a_bad_bound_name_or_prompt_is_refused_before_anything_is_spent(
    deployed: tuple[World, Any], capsys: Any, case: str
) -> None:
    sdk, argv, words = BOUNDS[case]
    err = refused_by_both(capsys, deployed, sdk, argv)
    assert err.exit_code == 2 and words in err.cli_line, err.one_line()
    # The measurement checks (ops/measure_checks.py) name the keyword, never the flag.
    keyword = {
        "--requests": "requests",
        "--duration": "duration",
        "--workers": "workers",
        "--warmup": "warmup",
        "-k": "k",
        "--concurrency": "concurrency",
    }.get(words)
    if keyword is not None:
        assert err.field == keyword and f"{keyword}=" in err.message, err.message
        assert "--" not in err.message


def test_the_bounds_themselves_are_accepted_and_sent_as_given(
    deployed: tuple[World, Any], capsys: Any
) -> None:
    """The edges of each range go out in the request body: temperature 0 and 2, top_p 1,
    max_tokens 1 (stock moto does not serve the stream, so the command then fails: what
    matters is what it sent)."""
    world, _ = deployed
    for temperature, top_p in ((2.0, 1.0), (0.0, 1e-6)):
        world.requests.clear()
        run(capsys, "invoke", NAME, "Hi", "--max-tokens", "1", "--temperature", str(temperature),
            "--top-p", str(top_p))  # fmt: skip
        (sent,) = [p for op, p in world.requests if op == "InvokeEndpointWithResponseStream"]
        raw = sent["Body"]  # bytes, recorded as their repr (record_requests: default=str)
        body = json.loads(ast.literal_eval(raw) if raw.startswith("b'") else raw)
        assert (body["max_tokens"], body["temperature"], body["top_p"]) == (1, temperature, top_p)


def test_temperature_or_top_p_beside_a_raw_body_is_refused(
    deployed: tuple[World, Any], capsys: Any, tmp_path: Path
) -> None:
    """--raw sends its body as is: a sampling flag beside it would be silently ignored."""
    raw = tmp_path / "body.json"
    raw.write_text('{"messages": [{"role": "user", "content": "Hi"}]}', encoding="utf-8")
    for flag, kwargs in (("--temperature", {"temperature": 0.5}), ("--top-p", {"top_p": 0.5})):
        value = str(next(iter(kwargs.values())))
        err = refused_by_both(
            capsys, deployed, lambda kwargs=kwargs: sm_peagle.invoke(NAME, raw=raw, **kwargs),
            ["invoke", NAME, "--raw", str(raw), flag, value],
        )  # fmt: skip
        assert flag in err.cli_line and "--raw" in err.cli_line
        key = flag[2:].replace("-", "_")
        assert f"{key}=" in err.message and "raw=" in err.message and err.field == key


# -- output paths ------------------------------------------------------------------------


def test_bench_markdown_and_plot_paths_are_checked_before_any_traffic(
    deployed: tuple[World, Any], capsys: Any, tmp_path: Path
) -> None:
    a_file = tmp_path / "plain.txt"
    a_file.write_text("x", encoding="utf-8")
    for key in ("markdown", "plot"):
        for bad in (a_file / "r.out", tmp_path):  # under a file; a directory
            err = refused_by_both(
                capsys, deployed, lambda key=key, bad=bad: sm_peagle.bench(NAME, **{key: bad}),
                ["bench", NAME, f"--{key}", str(bad)],
            )  # fmt: skip
            # The keyword in Python, the flag at the CLI (check_output_path names both).
            assert f"{key}=" in err.message and f"--{key}" in err.cli_line
    # The results file: the SDK's `out` is the CLI's -o/--output, and the error names the
    # flag the help shows (not the SDK keyword, nor the deprecated --out).
    err = refused_by_both(
        capsys, deployed, lambda: sm_peagle.bench(NAME, out=a_file / "r.json"),
        ["bench", NAME, "-o", str(a_file / "r.json")],
    )  # fmt: skip
    assert err.cli_line.startswith("error: --output: ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.txt"]


def test_sweep_refuses_an_unwritable_output_directory_before_it_deploys(
    deployed: tuple[World, Any], capsys: Any, tmp_path: Path
) -> None:
    """/proc takes no new directory, whatever the user's permissions (root included)."""
    unwritable = Path("/proc/peagle-sweep-results")
    err = refused_by_both(
        capsys, deployed, lambda: sm_peagle.sweep("gpt-oss-20b", out_dir=unwritable),
        ["sweep", "gpt-oss-20b", "--output", str(unwritable)],
    )  # fmt: skip
    assert str(unwritable) in err.message and "not writable" in err.message
    # The old spelling gets the same refusal (and its deprecation note before it).
    code, _, stderr = run(capsys, "sweep", "gpt-oss-20b", "--out-dir", str(unwritable))
    assert code == 2 and stderr.strip().splitlines()[-1] == err.cli_line
    a_file = tmp_path / "plain.txt"
    a_file.write_text("x", encoding="utf-8")
    refused_by_both(
        capsys, deployed,
        lambda: sm_peagle.sweep("gpt-oss-20b", out_dir=tmp_path / "o", requests_out=a_file / "r"),
        ["sweep", "gpt-oss-20b", "-o", str(tmp_path / "o"), "--requests-out", str(a_file / "r")],
    )  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.txt"]
    assert spent(deployed) == []


def _bench_document(tmp_path: Path) -> Path:
    """A stored bench result, as `peagle report` reads them."""
    from sm_peagle.benchmarking.results import save_document
    from tests.unit.test_bench_schema import bench_doc  # the schema tests' document

    return save_document(bench_doc("p-eagle", 3, {1: 100.0, 4: 300.0}), tmp_path / "results.json")


@pytest.mark.parametrize("key", ["markdown", "csv", "plot", "html"])
def test_report_refuses_an_unwritable_output_before_writing_anything(
    deployed: tuple[World, Any], capsys: Any, tmp_path: Path, key: str
) -> None:
    results = _bench_document(tmp_path)
    before = results.read_bytes()
    a_file = tmp_path / "plain.txt"
    a_file.write_text("x", encoding="utf-8")
    bad = a_file / f"r.{key}"
    err = refused_by_both(
        capsys, deployed, lambda: sm_peagle.report(results, **{key: bad}),
        ["report", str(results), f"--{key}", str(bad)],
    )  # fmt: skip
    assert f"{key}=" in err.message and f"--{key}" in err.cli_line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain.txt", "results.json"]
    assert results.read_bytes() == before


# -- an optional dependency missing: exit 2 everywhere -------------------------------------


@pytest.fixture
def no_matplotlib(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if sm-peagle[plot] were not installed: matplotlib cannot be found or imported."""
    import importlib.util
    import sys

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "matplotlib" else real(n, *a)
    )
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` fails too


def test_plot_and_html_without_matplotlib_are_the_same_exit_2_everywhere(
    deployed: tuple[World, Any], capsys: Any, tmp_path: Path, no_matplotlib: None
) -> None:
    """`report --html` exited 1 after writing what came before it, `bench --plot` 2: one
    check now (benchmarking.report.require_matplotlib), one error type, exit 2."""
    from sm_peagle.benchmarking.report import PlotUnavailable

    results = _bench_document(tmp_path)
    md = tmp_path / "r.md"
    cases = [
        (lambda: sm_peagle.report(results, markdown=md, html=tmp_path / "r.html"),
         ["report", str(results), "--markdown", str(md), "--html", str(tmp_path / "r.html")],
         "--html"),
        (lambda: sm_peagle.report(results, markdown=md, plot=tmp_path / "r.png"),
         ["report", str(results), "--markdown", str(md), "--plot", str(tmp_path / "r.png")],
         "--plot"),
        (lambda: sm_peagle.bench(NAME, plot=tmp_path / "b.png"),
         ["bench", NAME, "--plot", str(tmp_path / "b.png")], "--plot"),
    ]  # fmt: skip
    for sdk, argv, flag in cases:
        err = refused_by_both(capsys, deployed, sdk, argv, error=PlotUnavailable)
        assert err.exit_code == 2
        assert err.cli_line.startswith(f"error: {flag} needs matplotlib, which is not installed")
        assert err.message == f"{flag[2:]}= needs matplotlib, which is not installed"
        assert err.field == flag[2:]
        assert "pip install 'sm-peagle[plot]'" in (err.remedy or "")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]  # no markdown


# -- an endpoint the command needs must exist, before any traffic -------------------------


@pytest.mark.parametrize("sides", [(NAME, "no-such-ep"), ("no-such-ep", NAME)])
def test_race_with_a_missing_endpoint_names_it_before_any_traffic(
    deployed: tuple[World, Any], capsys: Any, sides: tuple[str, str]
) -> None:
    """It raced anyway: one lane failed, the other streamed, and the race exited 0 with
    "no verdict"."""
    err = refused_by_both(
        capsys, deployed, lambda: sm_peagle.race(*sides), ["race", *sides], error=NotFound
    )
    assert err.exit_code == 1
    assert err.message == "endpoint no-such-ep does not exist"


# -- tune-k on an endpoint with inference components ----------------------------------------


@pytest.fixture
def components(world: World, capsys: Any, monkeypatch: pytest.MonkeyPatch, sagemaker_harness: Any):
    """TWO_COMPONENTS (p-eagle K=7 and baseline) on one endpoint; requests recorded."""
    monkeypatch.delenv("PEAGLE_SANDBOX_URL", raising=False)
    record_requests(world, monkeypatch, "sagemaker-runtime")
    code, _, err = run(capsys, "deploy", *TWO_COMPONENTS, "--yes")
    assert code == 0, err
    world.requests.clear()
    sagemaker_harness.requests.clear()
    return world, sagemaker_harness


def test_tune_k_needs_a_component_on_a_component_endpoint_before_any_traffic(
    components: tuple[World, Any], capsys: Any
) -> None:
    """It benchmarked the endpoint, then said it 'runs no speculation' (its p-eagle
    component has K=7)."""
    both = f"p-eagle ({NAME}-p-eagle), baseline ({NAME}-baseline)"
    err = refused_by_both(
        capsys, components, lambda: sm_peagle.tune_k(NAME), ["tune-k", NAME, "-n", "2"]
    )
    assert err.exit_code == 2 and f"pass component= with one of {both}" in err.message
    assert f"pass --component with one of {both}" in cli_text(err.message, "tune-k")
    err = refused_by_both(
        capsys, components, lambda: sm_peagle.tune_k(NAME, component="typo"),
        ["tune-k", NAME, "--component", "typo"],
    )  # fmt: skip
    assert f"no inference component 'typo'; its components: {both}" in err.message


def test_tune_k_component_sends_every_request_to_that_component(
    components: tuple[World, Any], capsys: Any
) -> None:
    """With --component, the bench tune-k runs carries it on every invocation (the
    estimate itself, from a served run, is tests/e2e/test_tune_k_component.py)."""
    world, _ = components
    run(capsys, "tune-k", NAME, "--component", "p-eagle", "-n", "2", "--acceptance-wait", "0")
    sent = [p for op, p in world.requests if op == "InvokeEndpointWithResponseStream"]
    assert sent and {p["InferenceComponentName"] for p in sent} == {f"{NAME}-p-eagle"}
