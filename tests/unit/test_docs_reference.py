"""The site's reference pages (scripts/docs_reference.py, generated at build time) say
what the code does:

- the CLI page has the root help and one section per command it lists (the comparison with
  `peagle CMD --help` run as a user runs it, for every command, is in
  tests/e2e/test_docs_build.py);
- the spec page carries exactly the spec model's JSON Schema, and a row for every key of
  every object in it (tests/e2e/test_docs_build.py compares it with `peagle schema`);
- the settings page has every `PEAGLE_*` variable, the exit-code page every error class
  with its exit code, and the SDK page every public name of `sm_peagle`;
- the MkDocs hook adds the five pages, and refuses a hand-written copy in docs/.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import pytest

import sm_peagle
from sm_peagle import errors, settings

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import docs_reference  # noqa: E402


def listed_commands(help_text: str) -> list[str]:
    """The names a group's help lists under "Commands:"."""
    section = help_text.split("\nCommands:\n", 1)[1] if "\nCommands:\n" in help_text else ""
    return re.findall(r"(?m)^  ([a-z][\w-]*)(?:\s{2,}|$)", section)


def sections(page: str) -> dict[str, str]:
    """heading "peagle …" -> the ```text block under it."""
    found = re.findall(r"(?ms)^#{2,4} (peagle(?: [\w-]+)*)\n\n```text\n(.*?)\n```$", page)
    return {title: body for title, body in found}


@pytest.fixture(scope="module")
def cli_page() -> str:
    return docs_reference.cli_page()


def test_the_cli_page_has_the_root_help_and_a_section_per_command(cli_page: str) -> None:
    found = sections(cli_page)
    assert found["peagle"].startswith("Usage: peagle [OPTIONS] COMMAND [ARGS]...")
    for name in listed_commands(found["peagle"]):
        assert found[f"peagle {name}"].startswith(f"Usage: peagle {name} "), name
    assert listed_commands("x\nCommands:\n  a    x\n  b-c  y\n  d\n") == ["a", "b-c", "d"]


def test_the_cli_page_links_each_command_to_its_section(cli_page: str) -> None:
    links = re.findall(r"\[`(peagle [\w -]+)`\]\(#([\w-]+)\)", cli_page)
    assert len(links) == len(sections(cli_page)) - 1  # every command but the root
    for title, anchor in links:
        # Python-Markdown's toc slug of a heading of words and hyphens.
        assert anchor == re.sub(r"[\s]+", "-", title.lower()), title


@pytest.fixture(scope="module")
def spec_page() -> str:
    return docs_reference.spec_page()


def test_the_spec_page_carries_the_schema_and_a_row_per_key(spec_page: str) -> None:
    schema = sm_peagle.DeploymentSpec.model_json_schema()
    block = re.search(r"(?ms)^## The JSON Schema\n.*?```json\n(.*?)\n```", spec_page)
    assert block and json.loads(block.group(1)) == schema
    definitions = {schema["title"]: schema, **schema["$defs"]}
    for name, node in definitions.items():
        part = re.search(rf"(?ms)^## {name}\n(.*?)(?=^## )", spec_page)
        assert part, f"no section for {name}"
        for key, prop in node.get("properties", {}).items():
            row = re.search(rf"(?m)^\| `{key}` \|(.*)\|$", part.group(1))
            assert row, f"{name}.{key} has no row"
            description = " ".join(prop.get("description", "").split())
            assert description.replace("|", "\\|") in row.group(1), f"{name}.{key}"
            if key in node.get("required", []):
                assert "| required |" in row.group(0), f"{name}.{key} is required"
        for value in node.get("enum", []):
            assert f"`{value}`" in part.group(1), f"{name}: {value}"


def test_the_settings_page_lists_every_variable() -> None:
    page = docs_reference.settings_page()
    for name, what in settings.VARIABLES.items():
        row = re.search(rf"(?m)^\| `{name}` \| (.*) \|$", page)
        assert row and row.group(1) == " ".join(what.split()), name


def test_the_exit_code_page_lists_every_error_class_with_its_code() -> None:
    page = docs_reference.exit_codes_page()
    classes = [
        v
        for v in vars(errors).values()
        if isinstance(v, type) and issubclass(v, errors.PeagleError)
    ]
    assert len(classes) >= 15
    for cls in classes:
        row = re.search(rf"(?m)^\| `{cls.__name__}` \| (\d+) \|", page)
        assert row and int(row.group(1)) == cls.exit_code, cls.__name__
    for code in ("0", "1", "2", "3", "130", "143, 129"):
        assert re.search(rf"(?m)^\| {code} \| ", page), code


def _sections(page: str) -> dict[str, str]:
    """ "## title" -> what is under it, in page order."""
    return dict(re.findall(r"(?ms)^## (.+?)\n(.*?)(?=^## |\Z)", page))


def _operations_table(page: str) -> dict[str, str]:
    """method -> its module-level function ("" when none), from the client's table."""
    rows = re.findall(r"(?m)^\| \[`(\w+)`\]\[sm_peagle\.client\.Client\.\1\] \| (.*?) \|", page)
    return dict(rows)


def test_the_sdk_page_renders_every_public_name() -> None:
    """Each public name is rendered once: the client and every class or function that is
    not an operation by its own `:::` entry; an operation (a module-level function that
    is the default client's method) by the client's method, in the operations table."""
    page = docs_reference.sdk_page()
    # peagle's own (an installed plugin's SDK has its own section: see below).
    targets = re.findall(r"(?m)^::: (sm_peagle\.[\w.]+)$", page)
    table = _operations_table(page)
    names = [n for n in sm_peagle.__all__ if n != "__version__"]
    rendered = [t.rsplit(".", 1)[1] for t in targets] + [
        m for m, function in table.items() if function == f"`sm_peagle.{m}`"
    ]
    assert sorted(rendered) == sorted({*names, "Client"})
    for target in targets:
        module, name = target.rsplit(".", 1)
        obj = getattr(importlib.import_module(module), name)
        assert name == "Client" or obj is getattr(sm_peagle, name)
    from sm_peagle.client import Client

    for method in table:
        assert callable(getattr(Client, method)), method


def test_an_installed_plugin_s_sdk_has_its_own_section() -> None:
    """The sandbox plugin's SDK (`peagle_sandbox.__all__`) is rendered under its own
    heading, each name from where it is defined, and nowhere else on the page."""
    import peagle_sandbox

    page = docs_reference.sdk_page()
    section = _sections(page)["The sandbox plugin"]
    assert "`peagle-sandbox` distribution" in section
    targets = re.findall(r"(?m)^::: ([\w.]+)$", section)
    assert [t.rsplit(".", 1)[1] for t in targets] == list(peagle_sandbox.__all__)
    for target in targets:
        module, name = target.rsplit(".", 1)
        assert getattr(importlib.import_module(module), name) is getattr(peagle_sandbox, name)
    assert "start" in peagle_sandbox.__all__ and "SandboxState" in peagle_sandbox.__all__
    elsewhere = page.replace(section, "")
    assert not re.search(r"(?m)^::: peagle_sandbox\.", elsewhere)


def test_the_page_leads_with_the_client_then_results_then_errors() -> None:
    page = docs_reference.sdk_page()
    sections = _sections(page)
    assert list(sections)[:3] == ["The client", "Results", "Errors"]
    assert re.findall(r"(?m)^::: ([\w.]+)$", page)[0] == "sm_peagle.client.Client"
    results = re.findall(r"(?m)^::: [\w.]+\.(\w+)$", sections["Results"])
    errors_ = re.findall(r"(?m)^::: [\w.]+\.(\w+)$", sections["Errors"])
    for name in [n for n in sm_peagle.__all__ if n != "__version__"]:
        obj = getattr(sm_peagle, name)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            assert name in errors_, name
        elif isinstance(obj, type) and hasattr(obj, "to_dict"):
            assert name in results, name
    assert "Plan" in results and "EndpointStatus" in results and "SpecError" in errors_
    # The errors' section says what an error carries and how it names things.
    for word in ("`field`", "`value`", "`rule`", "`remedy`", "`Param`", "`Call`", "`Text`"):
        assert word in sections["Errors"], word


class _Ops:
    """Stands in for a mixin of operations (sm_peagle.ops.*)."""

    def status(self, name: str) -> None:
        """The status of one endpoint. More words."""

    def helper_of_the_client(self) -> None:
        """Not a module-level function."""


def test_the_operations_are_the_clients_methods(monkeypatch) -> None:
    """A client whose operations come from a mixin: each is rendered as the client's own
    method (inherited members), listed in the table with its module-level function, and
    not rendered again as a function."""
    from sm_peagle import client as client_module

    class Client(_Ops, client_module.Session):
        """A client."""

    monkeypatch.setattr(client_module, "Client", Client)
    monkeypatch.setattr(
        docs_reference,
        "sdk_names",
        lambda: [("status", "sm_peagle.ops.endpoints"), ("load_spec", "sm_peagle.planning")],
    )
    page = docs_reference.sdk_page()
    client = _sections(page)["The client"]
    # The session's own public methods (context, with_aws) are the client's too.
    assert (
        '      inherited_members: ["status", "helper_of_the_client", "context", "with_aws"]\n'
        in client
    )
    assert _operations_table(page) == {
        "status": "`sm_peagle.status`",
        "helper_of_the_client": "",
        "context": "",
        "with_aws": "",
    }
    assert "| The status of one endpoint. |" in client
    assert "::: sm_peagle.ops.endpoints.status" not in page


def test_a_public_name_outside_every_section_is_still_rendered(monkeypatch) -> None:
    monkeypatch.setattr(sm_peagle, "thing", object(), raising=False)
    monkeypatch.setattr(
        docs_reference,
        "sdk_names",
        lambda: [("load_spec", "sm_peagle.planning.spec.loading"), ("thing", "sm_peagle.x")],
    )
    page = docs_reference.sdk_page()
    assert "## The deployment spec\n\n::: sm_peagle.planning.spec.loading.load_spec\n" in page
    assert page.endswith("## More of the SDK\n\n::: sm_peagle.x.thing\n")


def test_every_public_name_has_its_own_section() -> None:
    # "More of the SDK" is the fallback that keeps a build from failing over a heading;
    # a name there wants a section in SDK_SECTIONS.
    assert "## More of the SDK" not in docs_reference.sdk_page()


def test_the_hook_adds_the_pages_and_refuses_a_copy_in_docs(tmp_path: Path) -> None:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File, Files

    docs = tmp_path / "docs"
    (docs / "reference").mkdir(parents=True)
    hook = str(ROOT / "scripts" / "docs_reference.py")
    config = MkDocsConfig(config_file_path=str(tmp_path / "mkdocs.yml"))
    config.load_dict(
        {"site_name": "t", "docs_dir": str(docs), "site_dir": str(tmp_path / "s"), "hooks": [hook]}
    )
    assert config.validate() == ([], [])
    # The hook as MkDocs loaded it, generating one small page instead of the five.
    module = config["hooks"][hook]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(module, "generate", lambda: {"reference/x.md": "# x\n"})
        files = config.plugins.on_files(Files([]), config=config)
        assert [f.src_uri for f in files] == ["reference/x.md", "assets/peagle.css"]
        assert files.get_file_from_path("reference/x.md").content_string == "# x\n"
        (docs / "reference" / "x.md").write_text("# stale\n")
        copy = Files([File("reference/x.md", str(docs), str(tmp_path / "s"), False)])
        with pytest.raises(PluginError, match=r"docs/reference/x.md is generated at build"):
            config.plugins.on_files(copy, config=config)


def test_the_docs_extra_wraps_signatures_and_the_test_extra_builds_as_it_does() -> None:
    """mkdocstrings-python wraps a separate signature only with a formatter installed
    (black, else ruff; without one it leaves each signature on one line): the `docs` extra
    installs one, and the `test` extra installs everything the `docs` extra does, so the
    suite builds the site as a writer does."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]

    def names(reqs: list[str]) -> set[str]:
        return {re.split(r"[\[<>=!~ ;]", r, maxsplit=1)[0] for r in reqs}

    assert names(extras["docs"]) & {"black", "ruff"}
    assert names(extras["docs"]) <= names(extras["test"])
