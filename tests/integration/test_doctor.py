"""`peagle doctor` (SDK `sm_peagle.doctor()`) against local stand-ins for its sources.

The package index and GitHub are local HTTP servers that log every request (or a port
nothing listens on), ECR is moto's, the sandbox is the real one. Expected versions come
from the data files peagle ships (the image list read here as JSON, the facts through
their reader, never through doctor) and from the documented rule: exit 0 when current,
3 when something newer exists, 1 when a check failed; an unreachable source is
"not checked", with the reason.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from sm_peagle.ops import doctor_sources
from tests.plan_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
CHECKS = {"vllm", "dlc_image", "sandbox_engine", "botocore", "credentials"}
NETWORK = ("vllm", "dlc_image", "credentials")


def _v(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.lstrip("v").split("."))


def facts_newest() -> str:
    """The newest version peagle's facts cover, as the facts file's reader lists them."""
    from sm_peagle.vllm import facts

    return max(facts.covered(), key=_v)


def images_newest() -> dict[str, str]:
    """The newest pinned classic version and server vX.Y.Z in the shipped image list."""
    doc = json.loads((ROOT / "sm_peagle/catalog/data/published_images.json").read_text())
    classic = [r["vllm_version"] for r in doc["images"]
               if r["family"] == "classic" and r["tag_kind"] == "full"]  # fmt: skip
    server = [r["tag"].removeprefix("server-sagemaker-cuda-") for r in doc["images"]
              if r["family"] == "server" and r["tag_kind"] == "full_version"]  # fmt: skip
    return {"classic": max(classic, key=_v), "server": max(server, key=_v)}


def bump(version: str) -> str:
    """The next minor version: newer than `version` by the documented ordering."""
    major, minor, _ = _v(version)
    return f"{'v' if version.startswith('v') else ''}{major}.{minor + 1}.0"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Stub:
    """A local HTTP server answering path -> (status, body), logging each request path."""

    def __init__(self, routes: dict[str, tuple[int, bytes]]) -> None:
        self.routes = routes
        self.log: list[str] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                stub.log.append(self.path)
                status, body = stub.routes.get(self.path, (404, b"{}"))
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:  # noqa: N802 - AWS's query protocol posts
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.do_GET()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def pypi_doc(releases: dict[str, list[dict[str, Any]]], info: str) -> bytes:
    """PyPI's JSON API document (/pypi/vllm/json), as much of it as matters."""
    return json.dumps({"info": {"name": "vllm", "version": info}, "releases": releases}).encode()


def github_routes(classic: list[str], server: list[str]) -> dict[str, tuple[int, bytes]]:
    """GitHub's contents API: the data directory's listing (with the EC2 files and an
    older duplicate, as the repository has) and the changelog, raw."""
    names = [f"{v}-gpu-sagemaker.yml" for v in classic] + [f"{v}-gpu-ec2.yml" for v in classic]
    names.append("0.13-gpu-sagemaker.yml")
    listing = [{"name": n, "type": "file"} for n in names]
    changelog = "# Changelog\n\n## ARM64 CPU v9.0.0: 2026-09-25\n\n" + "".join(
        f"## {v} — 2026-01-01\n\n**Tags:** `server-sagemaker-cuda-{v[:-2]}`\n\n" for v in server
    )
    return {
        "/contents/docs/src/data/vllm": (200, json.dumps(listing).encode()),
        "/contents/docs/vllm/changelog/index.md": (200, changelog.encode()),
    }


@pytest.fixture
def offline_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict[str, Any]:
    """No credentials, no engine, no sandbox; the index and GitHub on a closed port."""
    for name in list(os.environ):
        if name.startswith(("AWS_", "PEAGLE_SANDBOX")):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")  # no instance-role lookup
    monkeypatch.setenv("PEAGLE_ENGINE_HOME", str(tmp_path / "engine"))
    port = closed_port()
    monkeypatch.setenv("PEAGLE_PYPI_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setattr(doctor_sources, "DLC_SOURCE", f"http://127.0.0.1:{port}/contents")
    return {"port": port}


@pytest.fixture
def stubs(monkeypatch: pytest.MonkeyPatch, offline_env: dict[str, Any]) -> Iterator[dict]:
    """The index and GitHub as local servers; each test sets their answers."""
    index, github = Stub({}), Stub({})
    monkeypatch.setenv("PEAGLE_PYPI_URL", index.url)
    monkeypatch.setattr(doctor_sources, "DLC_SOURCE", f"{github.url}/contents")
    yield {"index": index, "github": github}
    index.close()
    github.close()


def doctor_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = run_cli(capsys, "doctor", "--json", *args)
    assert "Traceback" not in err
    return code, json.loads(out)


def test_unreachable_sources_leave_every_check_present_and_the_network_ones_not_checked(
    capsys: pytest.CaptureFixture[str], offline_env: dict[str, Any]
) -> None:
    code, doc = doctor_json(capsys)
    assert set(doc["checks"]) == CHECKS
    for name in NETWORK:
        assert doc["checks"][name]["status"] == "not checked", (name, doc["checks"][name])
    # The reason names the source that did not answer.
    assert f"127.0.0.1:{offline_env['port']} unreachable" in doc["checks"]["vllm"]["detail"]
    assert "GitHub: 127.0.0.1" in doc["checks"]["dlc_image"]["detail"]
    assert "ECR: no credentials" in doc["checks"]["dlc_image"]["detail"]
    assert doc["checks"]["credentials"]["detail"] == "no credentials"
    # What this peagle knows is there even when nothing could be compared with it.
    assert doc["checks"]["vllm"]["known"] == facts_newest()
    known = images_newest()
    assert (
        doc["checks"]["dlc_image"]["known"]
        == f"classic {known['classic']}, server {known['server']}"
    )
    assert doc["label"] == "AWS"
    # Nothing newer was seen and nothing failed (this venv's botocore has every field).
    assert doc["checks"]["botocore"]["status"] == "ok"
    assert code == doc["exit_code"] == 0


def test_a_newer_vllm_on_the_index_exits_3_and_names_it(
    capsys: pytest.CaptureFixture[str], stubs: dict[str, Any]
) -> None:
    newest = facts_newest()
    newer = bump(newest)
    later = bump(newer)
    file = [{"filename": "x.tar.gz", "yanked": False}]
    releases = {
        newest: file,
        newer: file,
        f"{later}rc1": file,  # a pre-release is not a release
        later: [{"filename": "x.tar.gz", "yanked": True}],  # a yanked one neither
        bump(later): [],  # nor one without files
    }
    stubs["index"].routes["/pypi/vllm/json"] = (200, pypi_doc(releases, info=newer))
    known = images_newest()
    stubs["github"].routes.update(github_routes([known["classic"]], [f"{known['server']}"]))

    code, doc = doctor_json(capsys)
    row = doc["checks"]["vllm"]
    assert (row["status"], row["known"], row["found"]) == ("newer", newest, newer)
    assert doc["checks"]["dlc_image"]["status"] == "ok"
    assert code == doc["exit_code"] == 3
    assert stubs["index"].log == ["/pypi/vllm/json"]

    code, out, _ = run_cli(capsys, "doctor")
    assert code == 3
    assert f"vLLM {newer}" in out.splitlines()[-1]  # the verdict names it


def test_the_index_at_the_facts_version_and_the_image_list_current_exit_0(
    capsys: pytest.CaptureFixture[str], stubs: dict[str, Any]
) -> None:
    newest = facts_newest()
    file = [{"filename": "x.whl", "yanked": False}]
    stubs["index"].routes["/pypi/vllm/json"] = (200, pypi_doc({newest: file}, info=newest))
    known = images_newest()
    stubs["github"].routes.update(github_routes([known["classic"]], [known["server"]]))
    code, doc = doctor_json(capsys)
    assert doc["checks"]["vllm"]["status"] == "ok"
    assert doc["checks"]["dlc_image"]["status"] == "ok"
    assert doc["checks"]["dlc_image"]["source"].startswith("GitHub")
    assert code == 0


def test_newer_dlc_images_on_github_exit_3_naming_both_families(
    capsys: pytest.CaptureFixture[str], stubs: dict[str, Any]
) -> None:
    known = images_newest()
    classic, server = bump(known["classic"]), bump(known["server"])
    stubs["github"].routes.update(
        github_routes([known["classic"], classic], [known["server"], server])
    )
    code, doc = doctor_json(capsys)
    row = doc["checks"]["dlc_image"]
    assert row["status"] == "newer"
    assert row["found"] == f"classic {classic}, server {server}"
    assert row["source"] == f"GitHub {doctor_sources.DLC_SOURCE}"
    assert row["tried"] == {"ecr": "no credentials", "github": None}  # None: it answered
    assert code == 3
    assert stubs["github"].log == [
        "/contents/docs/src/data/vllm",
        "/contents/docs/vllm/changelog/index.md",
    ]


def test_an_index_error_is_not_checked_with_the_status(
    capsys: pytest.CaptureFixture[str], stubs: dict[str, Any]
) -> None:
    stubs["index"].routes["/pypi/vllm/json"] = (503, b"busy")
    code, doc = doctor_json(capsys)
    assert doc["checks"]["vllm"]["status"] == "not checked"
    assert "HTTP 503" in doc["checks"]["vllm"]["detail"]
    assert code == 0


def test_offline_asks_nothing(capsys: pytest.CaptureFixture[str], stubs: dict[str, Any]) -> None:
    code, doc = doctor_json(capsys, "--offline")
    assert stubs["index"].log == [] and stubs["github"].log == []
    for name in NETWORK:
        assert doc["checks"][name]["status"] == "not checked"
    assert code == 0


@pytest.mark.parametrize(
    ("argv", "env", "needle"),
    [
        (["--source-timeout", "0"], {}, "--source-timeout"),
        (["--source-timeout", "soon"], {}, "not a duration"),
        (["--region", "mars-1"], {}, "mars-1"),
        ([], {"PEAGLE_PYPI_URL": "ftp://mirror.example"}, "PEAGLE_PYPI_URL"),
    ],
)
def test_bad_input_is_one_line_exit_2_and_asks_nothing(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    stubs: dict[str, Any],
    argv: list[str],
    env: dict[str, str],
    needle: str,
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, out, err = run_cli(capsys, "doctor", *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "(fix: " in lines[0]
    assert needle in lines[0]
    assert out == ""
    assert stubs["index"].log == [] and stubs["github"].log == []


def test_the_sdk_returns_the_same_rows(
    capsys: pytest.CaptureFixture[str], stubs: dict[str, Any]
) -> None:
    import sm_peagle

    report = sm_peagle.doctor(source_timeout="2s")
    _, doc = doctor_json(capsys, "--source-timeout", "2s")
    assert report.to_dict()["checks"].keys() == doc["checks"].keys()
    assert {c.name: c.status for c in report.checks} == {
        k: v["status"] for k, v in doc["checks"].items()
    }
    assert report.exit_code == doc["exit_code"]


def test_ecr_answers_with_the_users_credentials_and_the_row_names_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stubs: dict[str, Any]
) -> None:
    """ECR DescribeImages on AWS's DLC registry (moto; the caller is that account, since
    moto's ECR keeps each account's repositories apart). ECR is preferred to GitHub."""
    from moto import mock_aws

    account = "763104351884"  # AWS's DLC registry in most regions (facts 3)
    for name, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-west-2",
        "MOTO_ACCOUNT_ID": account,
    }.items():
        monkeypatch.setenv(name, value)
    known = images_newest()
    classic, server = bump(known["classic"]), bump(known["server"])
    stubs["github"].routes.update(github_routes([known["classic"]], [known["server"]]))
    tags = [
        f"{known['classic']}-gpu-py312-cu130-ubuntu24.04-sagemaker",
        f"{classic}-gpu-py312-cu130-ubuntu24.04-sagemaker",
        f"{bump(classic)}-gpu-py312-cu130-ubuntu24.04-ec2",  # not a SageMaker image
        f"{bump(classic)[:-2]}-gpu-py312",  # a floating tag
        f"server-sagemaker-cuda-{server}",
        f"server-cuda-{bump(server)}",  # the EC2 server image
    ]
    with mock_aws():
        import boto3

        ecr = boto3.client("ecr", region_name="us-west-2")
        ecr.create_repository(repositoryName="vllm")
        for tag in tags:
            manifest = {
                "schemaVersion": 2,
                "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "config": {"digest": tag},
                "layers": [],
            }
            ecr.put_image(repositoryName="vllm", imageManifest=json.dumps(manifest), imageTag=tag)
        code, doc = doctor_json(capsys)
    row = doc["checks"]["dlc_image"]
    assert (row["status"], row["found"]) == ("newer", f"classic {classic}, server {server}")
    assert row["source"] == f"ECR DescribeImages {account} (us-west-2)"
    creds = doc["checks"]["credentials"]
    assert (creds["status"], creds["account"], creds["region"]) == ("ok", account, "us-west-2")
    assert code == 3


def test_under_the_sandbox_the_account_and_region_are_the_sandboxs_labelled(
    capsys: pytest.CaptureFixture[str], offline_env: dict[str, Any], tmp_path: Path
) -> None:
    """`peagle --sandbox doctor --json`: STS is the sandbox's, and the document says so."""
    import peagle_sandbox

    saved = dict(os.environ)  # --sandbox points this process at the sandbox: undo it all
    os.environ["PEAGLE_STATE_DIR"] = str(tmp_path / "state")
    try:
        code, out, err = run_cli(capsys, "--sandbox", "doctor", "--json")
        state = peagle_sandbox.status().to_dict()
    finally:
        peagle_sandbox.stop()
        os.environ.clear()
        os.environ.update(saved)
    doc = json.loads(out)
    assert "Traceback" not in err
    assert doc["label"] == "SANDBOX (SIMULATED)"
    creds = doc["checks"]["credentials"]
    assert creds["status"] == "ok" and creds["source"] == "SANDBOX (SIMULATED)"
    assert (creds["account"], creds["region"]) == (state["account"], "us-east-1")
    assert doc["checks"]["sandbox_engine"]["running"] == "SIMULATED"
    # AWS's registry is not asked through the sandbox (named by its label).
    assert "SANDBOX (SIMULATED) is not AWS's registry" in doc["checks"]["dlc_image"]["tried"]["ecr"]
    assert code == 0


def test_rejected_credentials_fail_the_check_with_the_fix_exit_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stubs: dict[str, Any]
) -> None:
    """STS answers ExpiredToken (a local stand-in speaking STS's error format)."""
    sts = Stub({"/": (403, STS_EXPIRED)})
    try:
        for name, value in {
            "AWS_ACCESS_KEY_ID": "AKIAEXPIRED",
            "AWS_SECRET_ACCESS_KEY": "expired",
            "AWS_DEFAULT_REGION": "eu-west-1",
            "AWS_ENDPOINT_URL_STS": sts.url,
            "AWS_ENDPOINT_URL_ECR": sts.url,  # never AWS's ECR with these keys
        }.items():
            monkeypatch.setenv(name, value)
        code, doc = doctor_json(capsys)
    finally:
        sts.close()
    row = doc["checks"]["credentials"]
    assert row["status"] == "failed"
    assert "ExpiredToken" in row["detail"] and "(fix: refresh your AWS credentials" in row["detail"]
    assert code == doc["exit_code"] == 1
    assert doc["summary"].startswith("failed: credentials: ")


STS_EXPIRED = (
    b'<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error>'
    b"<Type>Sender</Type><Code>ExpiredToken</Code>"
    b"<Message>The security token included in the request is expired</Message>"
    b"</Error><RequestId>r-1</RequestId></ErrorResponse>"
)


@contextmanager
def silent_index(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """A package index that takes the connection and never answers (the kernel accepts it
    into the backlog; nobody reads); its port."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        monkeypatch.setenv("PEAGLE_PYPI_URL", f"http://127.0.0.1:{port}")
        yield port


def test_a_source_that_never_answers_is_not_checked_after_the_timeout(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, offline_env: dict
) -> None:
    with silent_index(monkeypatch) as port:
        code, doc = doctor_json(capsys, "--source-timeout", "0.3")
    row = doc["checks"]["vllm"]
    assert row["status"] == "not checked"
    assert row["detail"] == f"127.0.0.1:{port} did not answer within 0.3 s"
    assert code == 0


def test_the_old_timeout_spelling_still_bounds_each_source_and_warns(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, offline_env: dict
) -> None:
    """Issue 35: `--timeout` is the whole wait on deploy, update and apply; doctor's bound
    on each source is `--source-timeout`, its old spelling kept for one release."""
    with silent_index(monkeypatch) as port:
        code, out, err = run_cli(capsys, "doctor", "--json", "--timeout", "0.3")
    assert json.loads(out)["checks"]["vllm"]["detail"] == (
        f"127.0.0.1:{port} did not answer within 0.3 s"
    )
    assert code == 0
    assert err.splitlines() == [
        "warning: --timeout is deprecated, use --source-timeout (removed in the next release)"
    ]


def test_the_sdk_keyword_timeout_still_works_with_a_future_warning(
    monkeypatch: pytest.MonkeyPatch, offline_env: dict
) -> None:
    import sm_peagle

    with silent_index(monkeypatch) as port, pytest.warns(FutureWarning) as caught:
        report = sm_peagle.doctor(timeout="0.3")
    assert [str(w.message) for w in caught] == [
        "doctor(timeout=) is deprecated: use source_timeout= (removed in the next release)"
    ]
    assert caught[0].filename == __file__  # it points at the caller's line
    assert report.check("vllm").detail == f"127.0.0.1:{port} did not answer within 0.3 s"
    with pytest.raises(TypeError, match="give source_timeout= only"):
        sm_peagle.doctor(timeout="1s", source_timeout="2s")
