"""`peagle invoke` and `peagle chat` through the CLI entry point, against a local server
speaking the SageMaker runtime wire format (botocore does the real decoding)."""

from __future__ import annotations

import io
import json
import re

import pytest

from sm_peagle.cli.app import main
from sm_peagle.runtime.eventstream_encode import model_stream_error, payload_parts
from tests.stream_fixtures import (
    COMPLETION_TOKENS,
    ENDPOINT,
    PIECES,
    PROMPT_TOKENS,
    TEXT,
    fake_runtime,
    model_error_reply,
    vllm_chat_stream,
)

STATS = re.compile(
    rf"^TTFT \d+\.\d\ds · {COMPLETION_TOKENS} output tokens · \d+\.\d tok/s · "
    rf"{COMPLETION_TOKENS / len(PIECES):.2f} tokens/chunk$",
    re.M,
)


@pytest.fixture
def fake(aws_credentials, monkeypatch):
    with fake_runtime(monkeypatch) as server:
        yield server


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_invoke_streams_text_and_prints_stats(fake, capsys) -> None:
    code, out, err = run(capsys, "invoke", ENDPOINT, "Say hello", "--max-tokens", "32")
    assert code == 0, err
    assert out == TEXT + "\n"
    assert err.startswith("talking to: ")
    assert f"runtime: custom endpoint {fake.url}" in err
    assert STATS.search(err), err
    (req,) = fake.requests
    assert req["path"].endswith("/invocations-response-stream")
    assert req["body"]["messages"] == [{"role": "user", "content": "Say hello"}]
    assert req["body"]["max_tokens"] == 32 and req["body"]["stream_options"]["include_usage"]


def test_invoke_no_stream(fake, capsys) -> None:
    code, out, err = run(capsys, "invoke", ENDPOINT, "hi", "--no-stream", "--system", "terse")
    assert code == 0, err
    assert out == TEXT + "\n"
    assert re.search(rf"^e2e \d+\.\d\ds · {COMPLETION_TOKENS} output tokens", err, re.M), err
    (req,) = fake.requests
    assert req["path"].endswith("/invocations")
    assert req["body"]["messages"][0] == {"role": "system", "content": "terse"}


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_invoke_json(fake, capsys, stream) -> None:
    code, out, err = run(capsys, "invoke", ENDPOINT, "hi", stream, "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["text"] == TEXT and doc["finish_reason"] == "stop"
    assert doc["usage"] == {
        "prompt_tokens": PROMPT_TOKENS,
        "completion_tokens": COMPLETION_TOKENS,
        "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
    }
    assert doc["e2e_s"] > 0 and doc["output_tokens_per_s"] > 0
    if stream == "--stream":
        assert 0 < doc["ttft_s"] <= doc["e2e_s"]
        assert doc["mean_tokens_per_chunk"] == COMPLETION_TOKENS / len(PIECES)
    else:
        assert doc["ttft_s"] is None and doc["mean_tokens_per_chunk"] is None


def test_invoke_raw_payload(fake, capsys, tmp_path) -> None:
    raw = tmp_path / "payload.json"
    raw.write_text(json.dumps({"prompt": "Once upon", "max_tokens": 7, "seed": 3}))
    code, out, err = run(capsys, "invoke", ENDPOINT, "--raw", raw)
    assert code == 0, err
    assert out == TEXT + "\n"
    body = fake.requests[0]["body"]
    assert body["prompt"] == "Once upon" and body["seed"] == 3 and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}


def test_invoke_model_error_is_one_line_exit_1(fake, capsys) -> None:
    fake.stream_reply = None
    fake.invoke_reply = lambda _req: model_error_reply(400, "bad max_tokens")
    code, out, err = run(capsys, "invoke", ENDPOINT, "hi", "--no-stream")
    assert code == 1 and out == ""
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: the model on") and "400" in last and "bad max_tokens" in last
    assert "Traceback" not in err


def test_invoke_stream_error_keeps_streamed_text(fake, capsys) -> None:
    stream = vllm_chat_stream()
    cut = stream.index(b"data:", stream.index("世界".encode()))
    fake.stream_reply = lambda _req: [*payload_parts(stream[:cut], [9]), model_stream_error("x")]
    code, out, err = run(capsys, "invoke", ENDPOINT, "hi")
    assert code == 1
    assert out == "héllo → 世界\n"
    assert err.strip().splitlines()[-1].startswith("error: ModelInvocationTimeExceeded: x")


def test_invoke_without_prompt_is_bad_input(fake, capsys) -> None:
    code, _, err = run(capsys, "invoke", ENDPOINT)
    assert code == 2 and err.startswith("error: give a prompt")
    assert fake.requests == []


def test_chat_keeps_history_across_turns(fake, capsys, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("first question\n\nsecond one\n/exit\nnever\n"))
    code, out, err = run(capsys, "chat", ENDPOINT, "--system", "be kind")
    assert code == 0, err
    assert out == (TEXT + "\n") * 2
    assert len(STATS.findall(err)) == 2
    first, second = (r["body"]["messages"] for r in fake.requests)
    assert first == [
        {"role": "system", "content": "be kind"},
        {"role": "user", "content": "first question"},
    ]
    assert second == [
        *first,
        {"role": "assistant", "content": TEXT},
        {"role": "user", "content": "second one"},
    ]


def test_chat_ends_at_end_of_input(fake, capsys, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("only\n"))
    code, out, _ = run(capsys, "chat", ENDPOINT, "--no-stream")
    assert code == 0 and out == TEXT + "\n"
    assert fake.requests[0]["body"]["messages"] == [{"role": "user", "content": "only"}]


def test_chat_json_is_one_transcript_document(fake, capsys, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("first\nsecond\n"))
    code, out, err = run(capsys, "--json", "chat", ENDPOINT, "--system", "be kind")
    assert code == 0, err
    doc = json.loads(out)  # one document: nothing else on stdout
    assert [m["role"] for m in doc["messages"]] == ["system", "user", "assistant", "user",
                                                    "assistant"]  # fmt: skip
    assert [m["content"] for m in doc["messages"][2::2]] == [TEXT, TEXT]
    assert [t["text"] for t in doc["turns"]] == [TEXT, TEXT]
    assert err.count(TEXT) == 2  # the answers were shown on stderr meanwhile


def test_chat_error_with_piped_input_exits_1(fake, capsys, monkeypatch) -> None:
    fake.stream_reply = lambda _req: [model_stream_error("too slow")]
    monkeypatch.setattr("sys.stdin", io.StringIO("hi\nagain\n"))
    code, _, err = run(capsys, "chat", ENDPOINT)
    assert code == 1 and "ModelInvocationTimeExceeded" in err
    assert len(fake.requests) == 1
