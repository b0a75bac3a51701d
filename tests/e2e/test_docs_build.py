"""The documentation site builds in strict mode, and strict mode bites; its generated
reference pages say what the installed CLI says.

- A copy of the site (mkdocs.yml, docs/, the reference hook) builds with
  `mkdocs build --strict`, with the five generated reference pages in it and the SDK page
  rendered from the docstrings.
- The same copy with one internal link broken, or one anchor, fails the build, naming it.
- The CLI reference holds, for every command `peagle --help` lists (and every subcommand
  its groups list), exactly what `peagle CMD --help` prints, run as a user runs it; the
  spec reference holds exactly the JSON Schema `peagle schema` prints.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import docs_reference  # noqa: E402

pytestmark = pytest.mark.e2e

BIN = Path(sys.executable).parent
_ENV = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PEAGLE_"))}
_ENV.update(COLUMNS="80", NO_COLOR="1", NO_MKDOCS_2_WARNING="1")
# A relative link to a page: [text](page.md) or [text](../dir/page.md#anchor).
_LINK = re.compile(r"\]\((?P<target>(?!https?:|#|mailto:)[^)#\s]+\.md)(?P<anchor>#[\w-]+)?\)")


def site_copy(dest: Path) -> Path:
    """mkdocs.yml, docs/, the hook and the griffe extension, copied as they are in this
    checkout."""
    shutil.copy2(ROOT / "mkdocs.yml", dest / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", dest / "docs")
    (dest / "scripts").mkdir()
    for script in ("docs_reference.py", "docs_griffe.py"):
        shutil.copy2(ROOT / "scripts" / script, dest / "scripts" / script)
    return dest


def build(site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "mkdocs"), "build", "--strict", "--site-dir", str(site / "site")],
        cwd=site, env=_ENV, capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def first_link(docs: Path) -> tuple[Path, re.Match[str]]:
    """The first relative link to a page in the hand-written pages, with an anchor if
    `anchored` (docs/reference/ is generated at build time, so not in docs/)."""
    for page in sorted(docs.rglob("*.md")):
        for m in _LINK.finditer(page.read_text(encoding="utf-8")):
            if (page.parent / m.group("target")).resolve().is_file():
                return page, m
    raise AssertionError("no page under docs/ links to another page")


def first_anchor(docs: Path) -> tuple[Path, re.Match[str]]:
    for page in sorted(docs.rglob("*.md")):
        for m in _LINK.finditer(page.read_text(encoding="utf-8")):
            if m.group("anchor") and (page.parent / m.group("target")).resolve().is_file():
                return page, m
    raise AssertionError("no page under docs/ links to an anchor of another page")


def test_the_site_builds_strict_with_the_generated_reference(tmp_path: Path) -> None:
    site = site_copy(tmp_path)
    proc = build(site)
    assert proc.returncode == 0, proc.stderr[-4000:]
    for page in ("cli", "sdk", "spec", "exit-codes", "settings"):
        assert (site / "site" / "reference" / page / "index.html").is_file(), page
    cli = (site / "site" / "reference" / "cli" / "index.html").read_text()
    assert 'id="peagle-deploy"' in cli and "Usage: peagle deploy" in cli
    sdk = (site / "site" / "reference" / "sdk" / "index.html").read_text()
    # mkdocstrings rendered deploy's own docstring, not just its name.
    import sm_peagle

    first_line = " ".join(sm_peagle.deploy.__doc__.strip().split("\n\n")[0].split()[:6])
    # deploy is the client's method (sm_peagle.deploy is the default client's), or, before
    # the client had it, the function of its module.
    anchors = ("sm_peagle.client.Client.deploy", f"{sm_peagle.deploy.__module__}.deploy")
    assert any(f'id="{a}"' in sdk for a in anchors), anchors
    assert first_line in " ".join(re.sub(r"<[^>]+>", " ", sdk).split()), first_line
    # An installed plugin's SDK is rendered too, from its own docstrings (the sandbox's).
    assert 'id="peagle_sandbox.sdk.start"' in sdk and "Start the local sandbox" in sdk


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    site = site_copy(tmp_path)
    page, m = first_link(site / "docs")
    text = page.read_text(encoding="utf-8")
    broken = m.group("target").replace(".md", "-gone.md")
    page.write_text(text[: m.start("target")] + broken + text[m.end("target") :])
    proc = build(site)
    assert proc.returncode != 0
    assert f"contains a link '{broken}" in proc.stderr, proc.stderr[-3000:]
    assert "Aborted with 1 warnings in strict mode" in proc.stdout  # this warning alone


def test_a_broken_anchor_fails_the_strict_build(tmp_path: Path) -> None:
    site = site_copy(tmp_path)
    page, m = first_anchor(site / "docs")
    text = page.read_text(encoding="utf-8")
    page.write_text(text[: m.start("anchor")] + "#no-such-heading" + text[m.end("anchor") :])
    proc = build(site)
    assert proc.returncode != 0
    assert f"contains a link '{m.group('target')}#no-such-heading'" in proc.stderr, proc.stderr
    assert "does not contain an anchor '#no-such-heading'" in proc.stderr
    assert "Aborted with 1 warnings in strict mode" in proc.stdout


# -- the references against the installed CLI ------------------------------------------


def peagle(*args: str) -> str:
    proc = subprocess.run(
        [str(BIN / "peagle"), *args],
        capture_output=True, text=True, env=_ENV, timeout=120, check=True,
    )  # fmt: skip
    return proc.stdout


def listed_commands(help_text: str) -> list[str]:
    """The names a group's help lists under "Commands:"."""
    section = help_text.split("\nCommands:\n", 1)[1] if "\nCommands:\n" in help_text else ""
    return re.findall(r"(?m)^  ([a-z][\w-]*)(?:\s{2,}|$)", section)


def test_the_cli_reference_is_every_commands_help_as_peagle_prints_it() -> None:
    # Which commands exist comes from the real `--help` of the root and of each group.
    root = peagle("--help")
    paths = [(name,) for name in listed_commands(root)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        helps = dict(zip(paths, pool.map(lambda p: peagle(*p, "--help"), paths), strict=True))
        groups = [path for path, text in helps.items() if listed_commands(text)]
        level = groups
        while level:  # groups within groups (`peagle sandbox clock advance`), to the leaves
            subs = [(*g, s) for g in level for s in listed_commands(helps[g])]
            helps.update(zip(subs, pool.map(lambda p: peagle(*p, "--help"), subs), strict=True))
            level = [path for path in subs if listed_commands(helps[path])]
    assert len(paths) >= 25 and ("drafter",) in groups and ("sandbox",) in groups
    expected = {"peagle": root.rstrip()}
    expected.update({"peagle " + " ".join(p): t.rstrip() for p, t in helps.items()})
    page = docs_reference.cli_page()
    found = dict(re.findall(r"(?ms)^#{2,4} (peagle(?: [\w-]+)*)\n\n```text\n(.*?)\n```$", page))
    assert sorted(found) == sorted(expected)
    for title, text in expected.items():
        assert found[title] == text, f"the CLI reference differs from `{title} --help`"


def test_the_spec_reference_is_the_schema_peagle_prints() -> None:
    block = re.search(
        r"(?ms)^## The JSON Schema\n.*?```json\n(.*?)\n```", docs_reference.spec_page()
    )
    assert block and json.loads(block.group(1)) == json.loads(peagle("schema"))


def _json_blocks(page: str) -> list[dict]:
    section = re.search(r"(?ms)^## `--json`\n(.*?)(?=^## )", page)
    assert section, "the exit-code page lost its --json section"
    return [json.loads(b) for b in re.findall(r"(?ms)^```json\n(.*?)\n```", section.group(1))]


def test_the_json_contract_shows_the_error_document_peagle_prints() -> None:
    """The exit-code page's example error documents have the keys, in the order, of the
    one `peagle --json` prints for bad input (exit 2, nothing sent): the first has the
    keys every error document has; the second adds those of an error about one parameter
    (`field`, `value`, `rule`), after them."""
    proc = subprocess.run(
        [str(BIN / "peagle"), "--json", "plan", "no-such-model"],
        capture_output=True, text=True, env=_ENV, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    real = json.loads(proc.stdout)
    shown, about_a_parameter = _json_blocks(docs_reference.exit_codes_page())[:2]
    assert list(shown) == list(real) and list(shown["error"]) == list(real["error"])[:4]
    # An unknown model may name its parameter (`model`): then with the same keys as the
    # second example, in its order.
    extra = list(real["error"])[4:]
    assert extra == [k for k in about_a_parameter["error"] if k in extra], extra
    assert shown["label"] == real["label"] == "AWS"  # no sandbox, no AWS_* settings here
    assert shown["error"]["type"] == real["error"]["type"] == "SpecError"
    assert shown["error"]["exit_code"] == real["error"]["exit_code"] == 2


def test_the_json_contract_shows_an_error_about_one_parameter() -> None:
    """The second example is what an error naming a parameter adds to the document
    (sm_peagle.errors.PeagleError.to_dict, whose keys the CLI's error boundary prints in
    order after `exit_code`), and the page names each key it adds."""
    from sm_peagle.errors import SpecError

    doc = SpecError("k must be at least 1", field="k", value=0, rule="k >= 1").to_dict()
    page = docs_reference.exit_codes_page()
    shown = _json_blocks(page)[1]
    assert list(shown) == ["label", "error"]
    assert list(shown["error"]) == list(doc)
    assert shown["error"]["field"] == "k"  # the SDK keyword, not the flag (-k)
    for key in ("field", "value", "rule"):
        assert f"`{key}` is " in page, key
