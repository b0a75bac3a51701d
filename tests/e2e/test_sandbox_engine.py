"""The sandbox's pure parts, without a server: the acceptance model, the event-stream frames
(decoded by botocore's own parser), the irregular splitter, the --sandbox switch and activate().
"""

from __future__ import annotations

import json
import random
import statistics

import pytest
from botocore.eventstream import EventStreamBuffer

from peagle_sandbox.engine import (
    CONSTANTS,
    Speculation,
    count_tokens,
    expected_acceptance_length,
    simulate,
)
from peagle_sandbox.eventstream import IrregularSplitter, SplitPolicy, payload_part
from peagle_sandbox.manager import SandboxInfo, activate
from peagle_sandbox.openai_format import BadRequest, parse_request
from sm_peagle.cli.app import _take_target_options


@pytest.mark.parametrize("mode", ["p-eagle", "eagle3"])
def test_acceptance_matches_the_documented_model(mode: str) -> None:
    spec = Speculation(mode, 3)
    gens = [simulate(f"p{i}", 10, 400, spec, ignore_eos=True) for i in range(40)]
    decode = [s for g in gens for s in g.steps[1:] if s.tokens == 1 + s.accepted]
    mean = statistics.fmean(s.tokens for s in decode)
    expected = expected_acceptance_length(CONSTANTS.alpha(mode), 3)
    assert abs(mean - expected) < 0.1
    assert all(s.drafted == 3 and 0 <= s.accepted <= 3 for g in gens for s in g.steps[1:])
    assert gens[0].steps[0].tokens == 1 and gens[0].steps[0].drafted == 0  # prefill


def test_text_is_deterministic_and_independent_of_mode() -> None:
    a = simulate("same prompt", 5, 64, Speculation("p-eagle", 3))
    b = simulate("same prompt", 5, 64, Speculation())
    assert a.text == b.text and a.completion_tokens == b.completion_tokens
    assert all(s.tokens == 1 for s in b.steps)
    assert len(a.steps) < len(b.steps)
    assert simulate("same prompt", 5, 10, Speculation()).finish_reason == "length"


def test_step_time_constants() -> None:
    c = CONSTANTS
    assert c.step_ms("baseline", 0) == c.target_step_ms
    assert c.step_ms("eagle3", 7) - c.step_ms("eagle3", 3) > c.step_ms("p-eagle", 7) - c.step_ms(
        "p-eagle", 3
    )  # sequential drafting grows with K, parallel drafting barely does


def test_requests_are_validated_like_vllm() -> None:
    req = parse_request(
        json.dumps({"messages": [{"role": "user", "content": "hi there"}]}).encode()
    )
    assert req.kind == "chat" and req.prompt_tokens == count_tokens("hi there") + 4 + 3
    with pytest.raises(BadRequest):
        parse_request(b'{"messages": [], "max_tokens": 5}')
    with pytest.raises(BadRequest):
        parse_request(b'{"prompt": "x", "max_tokens": 0}')


def test_frames_decode_with_botocore_and_splits_reassemble() -> None:
    events = [
        (f'data: {{"n": {i}, "t": "caf\u00e9 \U0001f642"}}\n\n'.encode(), i) for i in range(50)
    ]
    written: list[int] = []
    splitter = IrregularSplitter(random.Random(7), SplitPolicy(hold_probability=0.3))
    frames = list(splitter.frames(events, lambda tag, t: written.append(tag)))
    buffer = EventStreamBuffer()
    buffer.add_data(b"".join(frames))
    messages = list(buffer)
    assert all(m.headers[":event-type"] == "PayloadPart" for m in messages)
    payloads = [m.payload for m in messages]
    assert b"".join(payloads) == b"".join(data for data, _ in events)
    assert written == list(range(50))  # every event reported once, in order
    assert len(payloads) != len(events)


def test_payload_part_matches_the_wire_format() -> None:
    buffer = EventStreamBuffer()
    buffer.add_data(payload_part(b"abc"))
    (message,) = list(buffer)
    assert message.payload == b"abc" and message.headers[":message-type"] == "event"


@pytest.mark.parametrize(
    ("argv", "args", "given"),
    [
        (["--sandbox", "ls", "--json"], ["ls", "--json"], ("--sandbox",)),
        (["ls", "--sandbox"], ["ls", "--sandbox"], None),  # after the command: its own args
        (["--help"], ["--help"], None),
        (
            ["--json", "--sandbox-engine=vllm", "ls"],
            ["--json", "ls"],
            ("--sandbox-engine", "vllm"),
        ),
    ],
)
def test_sandbox_flag(monkeypatch, argv, args, given) -> None:
    # The sandbox's root options are its target's (declared through the plugin contract):
    # the CLI strips them before the command parses, whatever their position among the
    # product's own root flags, and never after the command name.
    # setenv first, so the undo restores what the run exports (a given option's setting
    # is exported for the rest of the process): delenv of an unset name records nothing.
    for name in ("PEAGLE_SANDBOX", "PEAGLE_SANDBOX_ENGINE"):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    out, chosen = _take_target_options(argv)
    assert out == args
    assert (chosen.given if chosen else None) == given
    if chosen is not None:
        assert chosen.target.name == "sandbox"


def test_activate_never_leaves_real_credentials_or_endpoints() -> None:
    info = SandboxInfo(1, 5, "http://127.0.0.1:5", "http://127.0.0.1:5", "", "/x")
    env = {
        "AWS_PROFILE": "prod",
        "AWS_SESSION_TOKEN": "real",
        "AWS_ACCESS_KEY_ID": "AKIAREAL",
        "AWS_ENDPOINT_URL_S3": "https://s3.example",
        "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true",
        "PEAGLE_ROLE_ARN": "arn:aws:iam::999999999999:role/real",
        "AWS_DEFAULT_REGION": "us-west-2",
    }
    activate(info, env)
    assert env["AWS_ACCESS_KEY_ID"] == "peagle-sandbox"
    assert not {"AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"} & set(env)
    assert "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS" not in env
    assert env["AWS_ENDPOINT_URL"] == env["AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME"] == info.url
    assert env["PEAGLE_ROLE_ARN"] == info.role_arn and env["AWS_DEFAULT_REGION"] == "us-west-2"


def test_only_the_switch_setting_chooses_the_sandbox(monkeypatch) -> None:
    # PEAGLE_SANDBOX_ENGINE sets the engine of a sandbox chosen otherwise; alone it never
    # started one (before the contract the CLI read only PEAGLE_SANDBOX), and must not now.
    monkeypatch.delenv("PEAGLE_SANDBOX", raising=False)
    monkeypatch.setenv("PEAGLE_SANDBOX_ENGINE", "vllm")
    assert _take_target_options(["ls"]) == (["ls"], None)
    monkeypatch.setenv("PEAGLE_SANDBOX", "1")
    out, chosen = _take_target_options(["ls"])
    assert out == ["ls"] and chosen is not None and chosen.target.name == "sandbox"
    assert chosen.values == {"--sandbox": True}
