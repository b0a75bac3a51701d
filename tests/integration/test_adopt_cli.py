"""`peagle adopt`'s confirmation and outputs, against moto: without --yes it asks at a
terminal (no -> "aborted", exit 1, nothing tagged) and refuses in one line elsewhere (exit
2, like `peagle delete`); a spec file it cannot write is bad input (exit 2) and nothing is
tagged; --json prints one JSON document, the error included; the checks give one verdict
on K."""

from __future__ import annotations

import io
import json
import sys

import pytest
import yaml

from tests.integration.lifecycle_env import run
from tests.integration.test_adopt import NAME, all_tags, create_jumpstart_endpoint
from tests.integration.test_adopt_refusals import assert_untouched, one_error_line


class Terminal(io.StringIO):
    """stdin as a terminal that types `answer`."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def endpoint(world):
    create_jumpstart_endpoint(world.role_arn)
    before = all_tags()
    world.requests.clear()
    return before


def test_without_yes_and_without_a_terminal_it_refuses_in_one_line(
    world, capsys, monkeypatch, endpoint
):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, _, err = run(capsys, "adopt", NAME)
    assert code == 2
    line = one_error_line(err)
    assert line.endswith(
        "needs confirmation, and there is no terminal to ask "
        "(fix: pass --yes in non-interactive use)"
    ), line
    assert_untouched(world, endpoint)
    # The same words and exit code as `peagle delete` without --yes.
    create_jumpstart_endpoint(world.role_arn, name="other", config="other-c", model="other-m")
    code, _, err = run(capsys, "delete", "other")
    assert code == 2 and "pass --yes in non-interactive use" in one_error_line(err)


def test_with_json_the_refusal_is_one_json_document(world, capsys, monkeypatch, endpoint):
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    code, out, _ = run(capsys, "adopt", NAME, "--json")
    assert code == 2
    error = json.loads(out)["error"]
    assert error["exit_code"] == 2 and "no terminal to ask" in error["message"]
    assert error["fix"] == "pass --yes in non-interactive use"
    assert_untouched(world, endpoint)


def test_at_a_terminal_no_aborts_and_yes_adopts(world, capsys, monkeypatch, endpoint):
    monkeypatch.setattr(sys, "stdin", Terminal("n\n"))
    code, out, err = run(capsys, "adopt", NAME)
    assert code == 1 and "aborted" in err
    assert "as managed by peagle? [y/N]" in err  # the prompt is not the output
    assert err.splitlines()[-1] == "error: aborted"  # on its own line, after the prompt
    assert_untouched(world, endpoint)
    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    code, out, err = run(capsys, "adopt", NAME)
    assert code == 0, err
    assert f"adopted {NAME}: 3 resources tagged peagle:managed" in out  # (no echo of "y")
    assert {tags.get("peagle:managed") for tags in all_tags().values()} == {"true"}


def test_with_json_at_a_terminal_stdout_is_exactly_one_json_document(
    world, capsys, monkeypatch, endpoint
):
    """`peagle adopt X --json > out.json` at a terminal: the prompt goes to stderr, so the
    user sees it and the file holds the result alone; the same for delete."""
    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    code, out, err = run(capsys, "adopt", NAME, "--json")
    assert code == 0, err
    assert "as managed by peagle? [y/N]" in err
    doc = json.loads(out)  # the whole of stdout: nothing before or after the document
    assert doc["action"] == "adopted" and len(doc["tagged"]) == 3
    monkeypatch.setattr(sys, "stdin", Terminal("y\n"))
    code, out, err = run(capsys, "delete", NAME, "--json")
    assert code == 0, err
    assert f"Delete endpoint {NAME}" in err
    assert NAME in json.loads(out)["deleted"]


@pytest.mark.parametrize("dry_run", [True, False])
def test_a_spec_file_it_cannot_write_is_bad_input_and_tags_nothing(
    world, capsys, tmp_path, endpoint, dry_run
):
    target = tmp_path / "no-such-dir" / "spec.yaml"
    flags = ["--dry-run"] if dry_run else ["--yes"]
    code, out, err = run(capsys, "adopt", NAME, *flags, "-o", str(target))
    assert code == 2
    line = one_error_line(err)
    # Refused before any request, by the one output-path check every writer shares.
    assert line.startswith(f"error: --output: directory {target.parent} does not exist"), line
    assert not target.exists()
    assert_untouched(world, endpoint)


def test_dry_run_json_is_one_document_and_the_spec_file_matches_it(
    world, capsys, tmp_path, endpoint
):
    target = tmp_path / "spec.yaml"
    code, out, err = run(capsys, "adopt", NAME, "--dry-run", "--json", "-o", str(target))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["action"] == "dry-run" and doc["tagged"] == []
    # One verdict on K: JumpStart runs 3, the head's card recommends 7; the plan's own
    # "K=3" pass is not listed under it as well.
    k_checks = [c for c in doc["checks"] if c["name"] == "speculative.num_speculative_tokens"]
    assert [(c["status"], c["message"]) for c in k_checks] == [
        ("warn", "K=3 but the head's recommended K is 7 (amazon/GPT-OSS-20B-P-EAGLE)")
    ]
    assert yaml.safe_load(target.read_text()) == doc["spec"]
    assert_untouched(world, endpoint)
