"""`drafter push` refuses exactly what `deploy --drafter` refuses, with the same error
(issue 33, item 7): push ran a subset of deploy's checks (config, weights, dtypes), so a
head vLLM refuses at start, or one that fails every request, was uploaded and then
refused by the deploy.

Each head is peagle's synthetic head for gpt-oss-20b with one property changed (the
makers are the second-pass tests'). deploy's error line is read from `peagle deploy
gpt-oss-20b --drafter HEAD`; push must print that line, plus what it did not do.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import sm_peagle
from sm_peagle.cli.faces import CliFace
from sm_peagle.errors import CheckFailed, SpecError
from tests.integration.lifecycle_env import World, run
from tests.integration.test_drafter_second_pass_cli import (
    DEST,
    FAILING,
    made,
    mutating,
    uploads,
)

NOT_UPLOADED = "; nothing was uploaded (--force pushes it anyway)"


def deploy_error(capsys: Any, world: World, head: Path, *target: str) -> str:
    """deploy's one error line for `head` (exit 2, nothing sent)."""
    world.requests.clear()
    code, _, err = run(capsys, "deploy", *target, "--drafter", str(head), "--yes")
    lines = err.strip().splitlines()
    assert code == 2 and lines[-1].startswith("error: drafter."), err
    assert mutating(world) == []
    return lines[-1]


# Heads vLLM refuses whatever the target: the old push uploaded each of them.
ANY_TARGET = ["prefixed", "no-model-type", "no-intermediate", "mask-at-vocab"]


@pytest.mark.parametrize("name", ANY_TARGET)
def test_push_refuses_what_deploy_refuses_with_the_same_error(
    world: World, sagemaker_harness: Any, capsys: Any, tmp_path: Path, name: str
) -> None:
    _, check, _ = FAILING[name]
    head = made(tmp_path, name)
    line = deploy_error(capsys, world, head, "gpt-oss-20b")
    assert line.startswith(f"error: {check}: ")
    sagemaker_harness.requests.clear()
    for target in ((), ("--model", "gpt-oss-20b")):  # with or without the target named
        code, out, err = run(capsys, "drafter", "push", str(head), DEST, *target)
        assert code == 2 and out == "", err
        assert err.strip().splitlines() == [line + NOT_UPLOADED], (target, err)
    with pytest.raises(CheckFailed) as e:
        sm_peagle.drafter_push(head, DEST, model="gpt-oss-20b")
    # The CLI's words for the push's own clause (`--force`); Python says `force=True`.
    assert f"error: {e.value.one_line(CliFace('drafter'))}" == line + NOT_UPLOADED
    assert e.value.message.endswith("; nothing was uploaded (force=True pushes it anyway)")
    assert uploads(sagemaker_harness) == []


def test_a_head_that_fails_only_for_its_target_is_refused_when_push_names_it(
    world: World, sagemaker_harness: Any, capsys: Any, tmp_path: Path
) -> None:
    """Aux layers past gpt-oss-20b's 24: a fault of this head on this target. With the
    target named push refuses it as that deploy does; without one it cannot know, and
    says what it did not verify."""
    head = made(tmp_path, "aux-past-target")
    line = deploy_error(capsys, world, head, "gpt-oss-20b")
    assert line.startswith("error: drafter.aux_layers: ")
    sagemaker_harness.requests.clear()
    code, _, err = run(capsys, "drafter", "push", str(head), DEST, "-m", "gpt-oss-20b")
    assert code == 2 and err.strip().splitlines() == [line + NOT_UPLOADED], err
    assert uploads(sagemaker_harness) == []
    code, _, err = run(capsys, "drafter", "push", str(head), DEST)
    assert code == 0, err
    assert "warning: drafter.aux_layers: not checked" in err
    assert "PutObject" in uploads(sagemaker_harness)


def test_push_checks_the_deploy_it_is_for(
    world: World, sagemaker_harness: Any, capsys: Any, tmp_path: Path
) -> None:
    """--vllm-version and -k are deploy's: a head whose mask_hidden is sized for vLLM
    0.31.0 deploys on a 0.31.0 image and is refused on the default one, by both."""
    head = made(tmp_path, "two-layers", "0.31.0")
    default = deploy_error(capsys, world, head, "gpt-oss-20b")
    code, _, err = run(capsys, "drafter", "push", str(head), DEST, "-m", "gpt-oss-20b")
    assert code == 2 and err.strip().splitlines() == [default + NOT_UPLOADED], err
    world.requests.clear()
    pinned = ("--vllm-version", "0.31.0")
    code, _, err = run(capsys, "plan", "gpt-oss-20b", "--drafter", str(head), *pinned)
    assert code == 0, err  # deploy's plan accepts it (with a warning)
    code, _, err = run(capsys, "drafter", "push", str(head), DEST, "-m", "gpt-oss-20b", *pinned)
    assert code == 0, err
    assert "PutObject" in uploads(sagemaker_harness)


def test_push_refuses_a_mode_without_a_head_as_check_does(
    world: World, sagemaker_harness: Any, capsys: Any, tmp_path: Path
) -> None:
    """`--mode baseline` serves no head: `drafter check` refuses it before reading the head,
    and push must too (with the target named, its baseline plan has no head checks at all,
    so any head was uploaded unchecked)."""
    head = made(tmp_path, "prefixed")  # a head deploy --drafter refuses
    code, _, check_err = run(capsys, "drafter", "check", str(head), "--mode", "baseline")
    assert code == 2
    sagemaker_harness.requests.clear()
    for target in ((), ("--model", "gpt-oss-20b")):
        code, out, err = run(
            capsys, "drafter", "push", str(head), DEST, "--mode", "baseline", *target
        )
        assert (code, out, err) == (2, "", check_err), target
    with pytest.raises(SpecError) as e:
        sm_peagle.drafter_push(head, DEST, model="gpt-oss-20b", mode="baseline")
    assert f"error: {e.value.one_line()}" == check_err.strip()
    assert uploads(sagemaker_harness) == []
