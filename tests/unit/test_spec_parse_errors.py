"""A spec file that does not parse or validate (issue 24, item 2): one line naming the file,
the line and column, what was expected there, and a fix; exit 2 and nothing sent, from
`peagle plan/deploy/apply/diff -f` and from the SDK (`sm_peagle.plan(path)` and friends
raise SpecError with the same words).

Expected values are written by hand from the rule: positions are 1-based and point at the
first character the parser could not accept (a validation error: at the key of the bad
field), counted in the file text below; the words are the parser's own, with the construct
it was in and the line that construct started on.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import sm_peagle
from sm_peagle.cli import output
from sm_peagle.cli.app import main
from sm_peagle.errors import SpecError

SCHEMA_FIX = "`peagle schema` lists every field and its rules"
MAPPING_FIX = "a spec is a mapping such as `model: gpt-oss-20b`; `peagle schema` lists every field"


def python(cli_line: str) -> str:
    """The SDK's wording of a CLI line: `peagle schema` is the call `sm_peagle.schema()`."""
    return cli_line.replace("`peagle schema`", "`sm_peagle.schema()`")


INDENT_FIX = (
    "check the indentation: the keys of one mapping start in the same column, "
    "and `- item` lines do not mix with `key: value` lines at one level"
)

# name -> (file content, the error line without "error: ")
SYNTAX: dict[str, tuple[str | bytes, str]] = {
    # The brief's example: a flow mapping whose entries lack a comma. The parser reads
    # "ml.g6e.xlarge\n  name" as one plain scalar, then stops at the ':' on line 3.
    "d.yaml": (
        "model: gpt-oss-20b\nendpoint: {instance_type: ml.g6e.xlarge\n  name: x}\n",
        "d.yaml:3:7: invalid YAML: expected ',' or '}', but got ':' in a flow mapping "
        "started at line 2 (fix: separate the entries of {…} with commas and close it "
        "with '}', or write the mapping as indented `key: value` lines)",
    ),
    "tab.yaml": (
        "model: gpt-oss-20b\n\tregion: us-east-1\n",
        "tab.yaml:2:1: invalid YAML: found character '\\t' that cannot start any token "
        "(fix: indent with spaces: YAML does not allow tabs)",
    ),
    "seq.yaml": (
        "model: gpt-oss-20b\nendpoint:\n  fallback_instance_types: [ml.g6e.xlarge\n",
        "seq.yaml:4:1: invalid YAML: expected ',' or ']', but got '<stream end>' in a flow "
        "sequence started at line 3 (fix: separate the items of […] with commas and close "
        "it with ']')",
    ),
    "colon.yaml": (
        "model: gpt: oss\n",
        "colon.yaml:1:11: invalid YAML: mapping values are not allowed here (fix: quote a "
        "value that contains ': ' (name: \"a: b\"), or put a nested key on its own line)",
    ),
    "indent.yaml": (
        "model: gpt-oss-20b\nendpoint:\n  instance_type: ml.g6e.xlarge\n name: x\n",
        "indent.yaml:4:2: invalid YAML: expected <block end>, but found '<block mapping "
        f"start>' in a block mapping started at line 1 (fix: {INDENT_FIX})",
    ),
    "quote.yaml": (
        "model: 'gpt-oss-20b\nregion: us-east-1\n",
        "quote.yaml:3:1: invalid YAML: found unexpected end of stream in a quoted scalar "
        "started at line 1 (fix: close the quote that this value opens)",
    ),
    "two.yaml": (
        "model: gpt-oss-20b\n---\nmodel: gpt-oss-120b\n",
        "two.yaml:2:1: invalid YAML: expected a single document in the stream, but found "
        "another document (fix: a spec is one YAML document: remove the `---` line or "
        "split the file)",
    ),
    "bell.yaml": (
        "model: gpt\x07\n",
        "bell.yaml:1:11: invalid YAML: character '\\x07' is not allowed (fix: remove it, "
        "or write it inside double quotes as \\x07)",
    ),
    "value.json": (
        '{"model": "gpt-oss-20b",\n "region": }\n',
        "value.json:2:12: invalid JSON: expecting value (fix: give a value there: a string "
        "in double quotes, a number, true, false, null, an object or a list; and no comma "
        "after the last entry)",
    ),
    "trailing.json": (
        '{"model": "gpt-oss-20b",}',
        "trailing.json:1:25: invalid JSON: expecting property name enclosed in double "
        "quotes (fix: JSON keys need double quotes, and there is no comma after the last "
        "entry; or write the spec as YAML)",
    ),
    "comma.json": (
        '{"model": "gpt-oss-20b"\n "region": "us-east-1"}',
        "comma.json:2:2: invalid JSON: expecting ',' delimiter (fix: separate the entries "
        "with commas)",
    ),
    "extra.json": (
        '{"model": "gpt-oss-20b"} {}',
        "extra.json:1:26: invalid JSON: extra data (fix: a spec is one JSON object: remove "
        "what follows its closing '}')",
    ),
    "empty.yaml": ("", f"empty.yaml: the file is empty (fix: {MAPPING_FIX})"),
    "list.yaml": (
        "- model: gpt-oss-20b\n",
        "list.yaml: a spec must be a mapping at the top level, this file holds a list "
        f"(fix: {MAPPING_FIX})",
    ),
    "scalar.yaml": (
        "gpt-oss-20b\n",
        "scalar.yaml: a spec must be a mapping at the top level, this file holds a single "
        f"value (str) (fix: {MAPPING_FIX})",
    ),
    "latin1.yaml": (
        b"model: gpt\xe9\n",
        "cannot read spec file 'latin1.yaml': not UTF-8 text (byte 0xe9 at offset 10) "
        "(fix: save the spec as UTF-8 YAML or JSON)",
    ),
}

TOP_LEVEL_KEYS = (
    "autoscaling, container, drafter, endpoint, inference_components, jumpstart_config, "
    "model, model_data, monitoring, network, region, role, speculative, tags"
)  # the spec's sections (README, "A deployment spec"; `peagle schema`)

VALIDATION: dict[str, tuple[str, str]] = {
    "typo.yaml": (
        "model: gpt-oss-20b\nendpoint:\n  instance_typ: ml.g6e.xlarge\n",
        "endpoint.instance_typ: unknown key 'instance_typ', did you mean 'instance_type'? "
        f"(typo.yaml:3:3) (fix: {SCHEMA_FIX})",
    ),
    "colour.yaml": (
        "model: gpt-oss-20b\ncolour: red\n",
        f"colour: unknown key 'colour', the keys here are: {TOP_LEVEL_KEYS} (colour.yaml:2:1) "
        f"(fix: {SCHEMA_FIX})",
    ),
    "mode.yaml": (
        "model: gpt-oss-20b\nregion: us-east-1\nspeculative: {mode: fast}\n",
        "speculative.mode: Input should be 'p-eagle', 'eagle3' or 'baseline', got 'fast' "
        f"(mode.yaml:3:15) (fix: {SCHEMA_FIX})",
    ),
    "two-errors.yaml": (
        "model: gpt-oss-20b\nspeculative: {mode: fast}\nendpoint:\n  instance_typ: x\n",
        "speculative.mode: Input should be 'p-eagle', 'eagle3' or 'baseline', got 'fast' "
        "(two-errors.yaml:2:15); endpoint.instance_typ: unknown key 'instance_typ', did you "
        f"mean 'instance_type'? (two-errors.yaml:4:3) (fix: {SCHEMA_FIX})",
    ),
    "mode.json": (
        '{"model": "gpt-oss-20b",\n "speculative": {"mode": "fast"}}\n',
        "speculative.mode: Input should be 'p-eagle', 'eagle3' or 'baseline', got 'fast' "
        f"(mode.json:2:18) (fix: {SCHEMA_FIX})",
    ),
    # Not in the file at all: nothing to point at.
    "no-model.yaml": (
        "region: us-east-1\n",
        f"model: Field required (fix: {SCHEMA_FIX})",
    ),
}


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every case's file in a fresh directory, which is the working directory: the
    messages name the files as the user typed them."""
    for name, (content, _) in {**SYNTAX, **VALIDATION}.items():
        if isinstance(content, bytes):
            (tmp_path / name).write_bytes(content)
        else:
            (tmp_path / name).write_text(content)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PEAGLE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PEAGLE_SANDBOX", raising=False)
    monkeypatch.delenv("PEAGLE_SANDBOX_URL", raising=False)
    return tmp_path


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """moto with peagle's harness, whose request log shows what a command sent; the fake
    environment of the sandbox plugin's `aws_credentials`, for the module."""
    from moto import mock_aws

    from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness

    home = tmp_path_factory.mktemp("aws")
    with pytest.MonkeyPatch.context() as mp:
        for name in list(os.environ):
            if name.startswith("AWS_ENDPOINT_URL") or name in {
                "AWS_PROFILE",
                "AWS_DEFAULT_PROFILE",
            }:
                mp.delenv(name)
        for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
            mp.setenv(name, "testing")
        mp.setenv("AWS_REGION", "us-east-1")
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        mp.setenv("AWS_CONFIG_FILE", str(home / "no-config"))
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", str(home / "no-credentials"))
        with mock_aws(), SageMakerHarness(region="us-east-1") as h:
            yield h


def cli(harness: Any, capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    harness.requests.clear()
    output.reset()
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert harness.requests.all() == [], (argv, harness.requests.all())
    return code, out, err


def sdk_error(harness: Any, call: Callable[[], Any]) -> SpecError:
    harness.requests.clear()
    with pytest.raises(SpecError) as info:
        call()
    assert harness.requests.all() == [], harness.requests.all()
    return info.value


CASES = {**SYNTAX, **VALIDATION}


@pytest.mark.parametrize("name", list(CASES))
def test_plan_names_the_file_the_place_and_the_fix(name, files, harness, capsys) -> None:
    expected = CASES[name][1]
    code, out, err = cli(harness, capsys, "plan", "-f", name)
    assert code == 2 and out == "" and "Traceback" not in err
    assert err == f"error: {expected}\n"
    assert sdk_error(harness, lambda: sm_peagle.plan(name)).one_line() == python(expected)


# The commands that read a spec file, each with the SDK call that does the same.
READERS: dict[str, tuple[list[str], Callable[[str], Any]]] = {
    "deploy": (["deploy", "--yes", "-f"], lambda p: sm_peagle.deploy(p)),
    "apply": (["apply", "--yes", "-f"], lambda p: sm_peagle.apply(p)),
    "diff": (["diff", "-f"], lambda p: sm_peagle.diff(p)),
}


@pytest.mark.parametrize("command", list(READERS))
@pytest.mark.parametrize("name", ["d.yaml", "value.json", "typo.yaml", "missing.yaml"])
def test_every_command_that_reads_a_spec_says_the_same_and_sends_nothing(
    command, name, files, harness, capsys
) -> None:
    argv, call = READERS[command]
    error = sdk_error(harness, lambda: call(name))
    code, out, err = cli(harness, capsys, *argv, name)
    assert code == 2 and out == ""
    assert python(err) == f"error: {error.one_line()}\n"
    if name != "missing.yaml":
        assert error.one_line() == python(CASES[name][1])


def test_a_missing_file_names_the_directory_a_relative_path_is_read_from(
    files, harness, capsys
) -> None:
    code, _, err = cli(harness, capsys, "plan", "-f", "missing.yaml")
    assert code == 2
    assert err == (
        "error: cannot read spec file 'missing.yaml': no such file "
        f"(fix: check the path; a relative path is from {files})\n"
    )


def test_a_directory_is_not_a_spec_file(files, harness, capsys) -> None:
    (files / "specs.yaml").mkdir()
    code, _, err = cli(harness, capsys, "plan", "-f", "specs.yaml")
    assert code == 2
    assert err == (
        "error: cannot read spec file 'specs.yaml': it is a directory "
        "(fix: give the path of a .yaml or .json spec file)\n"
    )


def test_with_json_the_error_document_carries_the_same_words(files, harness, capsys) -> None:
    code, out, err = cli(harness, capsys, "--json", "plan", "-f", "d.yaml")
    assert code == 2
    message, _, fix = SYNTAX["d.yaml"][1].partition(" (fix: ")
    error = {"type": "SpecError", "message": message, "fix": fix[:-1], "exit_code": 2}
    # issue 26: every --json document says where it came from
    assert json.loads(out) == {"label": "AWS", "error": error}
    assert err == f"error: {SYNTAX['d.yaml'][1]}\n"


def test_a_key_in_the_wrong_section_names_where_it_belongs(files, harness, capsys) -> None:
    """`mode` is a key of `speculative`, not of the top level (README's spec example)."""
    (files / "wrong.yaml").write_text("model: gpt-oss-20b\nmode: eagle3\n")
    code, _, err = cli(harness, capsys, "plan", "-f", "wrong.yaml")
    assert code == 2
    assert err.startswith("error: mode: unknown key 'mode' here, did you mean speculative.mode")
    assert err.endswith(f"? (wrong.yaml:2:1) (fix: {SCHEMA_FIX})\n")


def test_a_value_an_option_set_is_not_pointed_at_in_the_file(files, harness, capsys) -> None:
    """`--mode fast` overrides the file's `mode: eagle3`: the bad value is the option's,
    so no line of the file is named."""
    (files / "ok.yaml").write_text("model: gpt-oss-20b\nspeculative: {mode: eagle3}\n")
    expected = (
        "speculative.mode: Input should be 'p-eagle', 'eagle3' or 'baseline', got 'fast' "
        f"(fix: {SCHEMA_FIX})"
    )
    code, _, err = cli(harness, capsys, "plan", "-f", "ok.yaml", "--mode", "fast")
    assert code == 2 and err == f"error: {expected}\n"
    error = sdk_error(harness, lambda: sm_peagle.plan("ok.yaml", mode="fast"))
    assert error.one_line() == python(expected)
    assert (error.field, error.value) == ("mode", "fast")


def test_a_date_in_a_yaml_spec_is_checked_as_text_not_an_internal_error(
    files, harness, capsys
) -> None:
    """YAML reads 2024-01-01 as a date; the spec's own check must see it (it was a
    TypeError from json.dumps, exit 1 'internal error')."""
    (files / "date.yaml").write_text("model: gpt-oss-20b\nregion: 2024-01-01\n")
    code, _, err = cli(harness, capsys, "plan", "-f", "date.yaml")
    assert code == 2
    assert err.startswith("error: region: '2024-01-01' ") and "(date.yaml:2:1)" in err


def test_a_spec_from_a_dict_names_the_field_but_no_file(harness) -> None:
    error = sdk_error(harness, lambda: sm_peagle.plan({"model": "gpt-oss-20b", "colour": "red"}))
    assert error.one_line() == python(
        f"colour: unknown key 'colour', the keys here are: {TOP_LEVEL_KEYS} (fix: {SCHEMA_FIX})"
    )
