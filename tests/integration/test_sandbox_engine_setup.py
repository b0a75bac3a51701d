"""The real-engine host's pure parts, without an engine: the flag table, the /opt/ml
mapping, materialising S3 model data (zero-byte folder keys fail as on SageMaker), the
entrypoint's sandbox-only model root, vLLM's error line, and the engine label."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from peagle_sandbox.engine_files import MaterialiseError, materialise
from peagle_sandbox.engine_host import last_error_line
from peagle_sandbox.engine_setup import (
    SANDBOX_FLAGS,
    container_environ,
    entrypoint_command,
    flag_table_lines,
    map_opt_ml,
)
from sm_peagle.benchmarking.results import engine_of
from sm_peagle.container.entrypoint import main as entrypoint_main

SPEC = {
    "model": "/opt/ml/additional-model-data-sources/eagle",
    "method": "eagle3",
    "num_speculative_tokens": 3,
    "parallel_drafting": True,
}
MODEL_ENV = {
    "SM_VLLM_SPECULATIVE_CONFIG": json.dumps(SPEC),
    "HF_MODEL_ID": "/opt/ml/model",
    "TIKTOKEN_ENCODINGS_BASE": "/opt/ml/model",
    "SM_VLLM_MAX_MODEL_LEN": "4096",
    "SM_VLLM_QUANTIZATION": "fp8",
    "SM_VLLM_TENSOR_PARALLEL_SIZE": "4",
    "OTHER": "/opt/mlx/not-a-mount",
}


def test_every_argv_flag_the_sandbox_adds_is_in_the_table() -> None:
    argv = entrypoint_command(Path("/venv/bin/python"), 41234)
    assert argv[:4] == ["/venv/bin/python", "-m", "sm_peagle.container.entrypoint", "serve"]
    flags = {a for a in argv[4:] if a.startswith("--")}
    table = {r.name for r in SANDBOX_FLAGS if r.how == "argv"}
    assert flags == table == {"--port", "--host", "--enforce-eager", "--tensor-parallel-size"}
    assert argv[argv.index("--port") + 1] == "41234"
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert all(r.reason for r in SANDBOX_FLAGS)
    lines = flag_table_lines()
    assert len(lines) == len(SANDBOX_FLAGS) + 1 and "--max-model-len [kept]" in "\n".join(lines)


def test_environment_changes_are_the_table_and_every_other_flag_passes(tmp_path: Path) -> None:
    root = tmp_path / "opt-ml"
    base = {"PATH": "/usr/bin", "AWS_SECRET_ACCESS_KEY": "x", "SM_VLLM_LEAKED": "1"}
    env, notes = container_environ(
        MODEL_ENV, root, engine_home=tmp_path, shim_dir=tmp_path / "bin", base=base
    )
    assert "SM_VLLM_QUANTIZATION" not in env  # the one `drop` row
    assert any("SM_VLLM_QUANTIZATION removed" in n for n in notes)
    # Every other SM_VLLM_ variable reaches the entrypoint unchanged (apart from /opt/ml).
    assert env["SM_VLLM_MAX_MODEL_LEN"] == "4096"
    assert env["SM_VLLM_TENSOR_PARALLEL_SIZE"] == "4"  # overridden in argv, not here
    assert "SM_VLLM_LEAKED" not in env and not any(k.startswith("AWS_") for k in env)
    for rule in SANDBOX_FLAGS:
        if rule.how == "env" and "," not in rule.name and not rule.value.startswith("<"):
            assert env[rule.name] == rule.value
    assert env["PEAGLE_OPT_ML_ROOT"] == str(root)
    assert env["PATH"].split(":")[0] == str(tmp_path / "bin")


def test_opt_ml_is_rewritten_in_every_value_and_logged(tmp_path: Path) -> None:
    root = tmp_path / "root"
    env, notes = map_opt_ml(MODEL_ENV, root)
    assert json.loads(env["SM_VLLM_SPECULATIVE_CONFIG"])["model"] == (
        f"{root}/additional-model-data-sources/eagle"
    )
    assert env["HF_MODEL_ID"] == env["TIKTOKEN_ENCODINGS_BASE"] == f"{root}/model"
    assert env["OTHER"] == "/opt/mlx/not-a-mount"  # only /opt/ml as a whole component
    assert sorted(n.split(":")[0] for n in notes) == [
        "HF_MODEL_ID",
        "SM_VLLM_SPECULATIVE_CONFIG",
        "TIKTOKEN_ENCODINGS_BASE",
    ]


def test_entrypoint_finds_the_model_under_the_sandbox_root(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    seen: list[list[str]] = []
    code = entrypoint_main(
        ["serve", "--port", "9999"],
        env={"PEAGLE_OPT_ML_ROOT": str(tmp_path), "SM_VLLM_ENFORCE_EAGER": "true"},
        exec_fn=lambda _file, argv: seen.append(argv),
        err=io.StringIO(),
    )
    assert code == 0
    assert seen[0][:5] == ["vllm", "serve", str(tmp_path / "model"), "--port", "8080"]
    assert seen[0][-2:] == ["--port", "9999"]  # the sandbox's flags come last and win


@pytest.fixture
def s3():  # noqa: ANN201 - a boto3 client
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket="models")
        yield client


def _container(extra: list[dict] | None = None) -> dict:
    src = {"S3Uri": "s3://models/tiny/", "S3DataType": "S3Prefix", "CompressionType": "None"}
    head = {"S3Uri": "s3://models/head", "S3DataType": "S3Prefix", "CompressionType": "None"}
    return {
        "ModelDataSource": {"S3DataSource": src},
        "AdditionalModelDataSources": [{"ChannelName": "eagle", "S3DataSource": head}]
        + (extra or []),
    }


def test_materialise_lays_out_model_and_channels(s3, tmp_path: Path) -> None:  # noqa: ANN001
    for key in ("tiny/config.json", "tiny/sub/tokenizer.json", "head/model.safetensors"):
        s3.put_object(Bucket="models", Key=key, Body=b"x")
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("inner.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    s3.put_object(Bucket="models", Key="pack/model.tar.gz", Body=buf.getvalue())
    gz = {"S3Uri": "s3://models/pack/model.tar.gz", "S3DataType": "S3Object"}
    extra = [{"ChannelName": "gz", "S3DataSource": {**gz, "CompressionType": "Gzip"}}]
    notes = materialise(s3, _container(extra), tmp_path)
    assert (tmp_path / "model" / "config.json").read_bytes() == b"x"
    assert (tmp_path / "model" / "sub" / "tokenizer.json").is_file()
    head = tmp_path / "additional-model-data-sources" / "eagle" / "model.safetensors"
    assert head.is_file()
    assert (tmp_path / "additional-model-data-sources" / "gz" / "inner.txt").read_text() == "hi"
    assert len(notes) == 3


def test_a_zero_byte_folder_key_fails_like_sagemaker(s3, tmp_path: Path) -> None:  # noqa: ANN001
    s3.put_object(Bucket="models", Key="tiny/config.json", Body=b"x")
    s3.put_object(Bucket="models", Key="head/", Body=b"")  # what "Create folder" makes
    s3.put_object(Bucket="models", Key="head/model.safetensors", Body=b"x")
    with pytest.raises(MaterialiseError, match=r"zero-byte 'folder' object s3://models/head/"):
        materialise(s3, _container(), tmp_path)


def test_an_empty_prefix_fails(s3, tmp_path: Path) -> None:  # noqa: ANN001
    with pytest.raises(MaterialiseError, match="no objects under s3://models/tiny/"):
        materialise(s3, _container(), tmp_path)


def test_failure_reason_is_vllms_own_error_line() -> None:
    # The tail of vLLM 0.31.0's output for --max-model-len 4096 on the tiny model.
    tail = [
        "    s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)",
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig",
        "  Value error, User-specified max_model_len (4096) is greater than the derived "
        "max_model_len (max_position_embeddings=2048.0 ...)",
        "    For further information visit https://errors.pydantic.dev/2.14/v/value_error",
    ]
    assert last_error_line(tail).startswith("Value error, User-specified max_model_len (4096)")
    assert last_error_line([]) == "(the engine wrote nothing)"


def test_results_say_which_engine_made_them() -> None:
    assert engine_of(True, {"engine": "SIMULATED"}, "0.31.0") == "SIMULATED"
    assert engine_of(True, {"engine": "simulated"}, None) == "SIMULATED"
    real = "vllm 0.31.0 (CPU, tiny model)"
    assert engine_of(True, {"engine": real}, "0.31.0") == real
    assert engine_of(False, None, "0.18.0") == "vllm 0.18.0 on SageMaker"


class _Metrics:
    """A stand-in engine's /metrics: vLLM's gauge lines (labelled, as 0.31 writes them) with
    the request in flight for the first `busy` scrapes, then none."""

    def __init__(self, busy: int) -> None:
        self.busy, self.scrapes = busy, 0

    def serve(self) -> tuple[Any, int]:
        import http.server
        import threading

        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                running = 1 if outer.scrapes < outer.busy else 0
                outer.scrapes += 1
                body = (
                    "# HELP vllm:num_requests_running Number of requests in model execution.\n"
                    f'vllm:num_requests_running{{engine="0",model_name="m"}} {running}.0\n'
                    'vllm:num_requests_waiting{engine="0",model_name="m"} 0.0\n'
                ).encode()
                self.send_response(200)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server, server.server_address[1]


def test_a_losing_fleet_drains_its_requests_before_it_stops(monkeypatch) -> None:  # noqa: ANN001
    """A rollback (or commit) stops the losing fleet's engine only once vLLM's own gauges say
    no request is running or waiting: an invocation routed to it just before the deployment
    settled is answered, not cut (a 502)."""
    from peagle_sandbox import engine_host
    from peagle_sandbox.engine_runs import Engine, requests_in_flight

    metrics = _Metrics(busy=3)
    server, port = metrics.serve()
    try:
        assert requests_in_flight(port) == 1  # the labelled gauge lines are read
        monkeypatch.setattr(engine_host, "DRAIN_GRACE_S", 0.0)
        engine = Engine("us-east-1", "ep", "cfg", "update", 1)
        engine.proc, engine.port, engine.ready = object(), port, True  # type: ignore[assignment]
        engine_host.EngineHost._drain(None, engine)  # type: ignore[arg-type]
        assert metrics.scrapes == 4  # polled until the gauges read 0 (3 busy + the idle one)
    finally:
        server.shutdown()
    assert requests_in_flight(port) is None  # a gone engine: nothing to wait for
