"""`invoke` and `chat` results: the SDK's `to_dict()` is the document `peagle invoke
--json` / `peagle chat --json` print (the CLI builds none of its own), read by attribute,
against a local server speaking the SageMaker runtime wire format."""

from __future__ import annotations

import io
import json

import pytest

import sm_peagle
from sm_peagle.cli.app import main
from tests.stream_fixtures import COMPLETION_TOKENS, ENDPOINT, TEXT, fake_runtime

# What `peagle invoke --json` has printed since it had --json (and each chat turn), in order.
ANSWER_KEYS = [
    "text",
    "finish_reason",
    "usage",
    "ttft_s",
    "e2e_s",
    "output_tokens_per_s",
    "mean_tokens_per_chunk",
    "tpot_s",
    "spec_decode",
]
TIMES = {"ttft_s", "e2e_s", "output_tokens_per_s", "tpot_s"}  # differ from call to call


@pytest.fixture
def fake(aws_credentials, monkeypatch):
    with fake_runtime(monkeypatch) as server:
        yield server


def _cli(capsys, *argv: str) -> dict:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _same_but_times(a: dict, b: dict) -> None:
    assert {k: v for k, v in a.items() if k not in TIMES} == {
        k: v for k, v in b.items() if k not in TIMES
    }


def test_invoke_to_dict_is_the_cli_document(fake, capsys) -> None:
    doc = _cli(capsys, "invoke", ENDPOINT, "hi", "--json")
    result = sm_peagle.invoke(ENDPOINT, "hi")
    assert isinstance(result, sm_peagle.InvokeResult)
    assert list(result.to_dict()) == ANSWER_KEYS == [k for k in doc if k != "label"]
    _same_but_times(result.to_dict(), {k: v for k, v in doc.items() if k != "label"})
    assert result.text == doc["text"] == TEXT
    assert result.usage is not None and result.usage.completion_tokens == COMPLETION_TOKENS
    assert doc["usage"]["completion_tokens"] == COMPLETION_TOKENS


def test_chat_transcript_is_the_cli_document(fake, capsys, monkeypatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("first\nsecond\n"))
    doc = _cli(capsys, "--json", "chat", ENDPOINT, "--system", "be kind")

    session = sm_peagle.chat(ENDPOINT, system="be kind")
    turns = [session.send("first"), session.send("second")]
    transcript = session.transcript()
    assert [t.text for t in transcript.turns] == [t.text for t in turns] == [TEXT, TEXT]
    mine = transcript.to_dict()
    assert list(mine) == ["endpoint", "component", "messages", "turns"]
    assert [k for k in doc if k != "label"] == list(mine)
    assert mine["endpoint"] == doc["endpoint"] == ENDPOINT and mine["component"] is None
    assert (
        mine["messages"]
        == doc["messages"]
        == [
            {"role": "system", "content": "be kind"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": TEXT},
            {"role": "user", "content": "second"},
            {"role": "assistant", "content": TEXT},
        ]
    )
    assert [list(t) for t in doc["turns"]] == [ANSWER_KEYS, ANSWER_KEYS]
    for a, b in zip(mine["turns"], doc["turns"], strict=True):
        _same_but_times(a, b)
