"""The SDK reference, as the site renders it (a strict build of a copy of the site): it
leads with the client, whose `deploy` lists the spec options it takes as documented
parameters, and no field renders as an empty box (a heading with nothing under it: what
mkdocstrings shows for an attribute documented nowhere).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from tests.e2e.test_docs_build import build, site_copy

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def sdk_html(tmp_path_factory: pytest.TempPathFactory) -> str:
    site = site_copy(tmp_path_factory.mktemp("site"))
    proc = build(site)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return (site / "site" / "reference" / "sdk" / "index.html").read_text(encoding="utf-8")


class _Objects(HTMLParser):
    """Each documented object of a mkdocstrings page: its heading's id, whether its
    contents box is empty (no text, no element), and the names in its Parameters table."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[dict] = []
        self.heading: str | None = None
        self.empty: list[str] = []
        self.params: dict[str, list[str]] = {}
        self._section: str | None = None
        self._cell = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if "doc-heading" in cls and a.get("id"):
            self.heading = a["id"]
        if self.stack:
            self.stack[-1]["children"] += 1
        self.stack.append({"tag": tag, "cls": cls, "text": [], "children": 0, "id": self.heading})
        if tag == "tr" and "doc-section-item" in cls:
            self._cell = 0
        elif tag == "td":
            self._cell += 1

    def handle_endtag(self, tag: str) -> None:
        while self.stack:
            e = self.stack.pop()
            if e["tag"] == tag:
                break
        if "doc-contents" in e["cls"] and not "".join(e["text"]).strip() and not e["children"]:
            self.empty.append(e["id"])

    def handle_data(self, data: str) -> None:
        for e in self.stack:
            e["text"].append(data)
        if self.stack and "doc-section-title" in self.stack[-1]["cls"]:
            self._section = data.strip().rstrip(":")
        elif (
            self._section == "Parameters"
            and self.stack
            and self.stack[-1]["tag"] == "code"
            and self._cell == 1
            and data.strip()
        ):
            self.params.setdefault(self.heading or "", []).append(data.strip())


def objects(html: str) -> _Objects:
    parser = _Objects()
    parser.feed(html)
    return parser


def test_the_parser_finds_empty_boxes_and_parameters() -> None:
    """The checks below can fail: an attribute box with nothing in it is found, one with a
    description is not, and a Parameters table's names are read."""
    page = """
    <h4 id="m.C.a" class="doc doc-heading">a</h4>
    <div class="doc doc-contents ">
    </div>
    <h4 id="m.C.b" class="doc doc-heading">b</h4>
    <div class="doc doc-contents "><p>The b.</p></div>
    <h4 id="m.C.f" class="doc doc-heading">f</h4>
    <div class="doc doc-contents "><p><span class="doc-section-title">Parameters:</span></p>
    <table><tbody><tr class="doc-section-item"><td><code>k</code></td>
    <td><code>int</code></td><td><p>K.</p></td></tr></tbody></table></div>
    """
    found = objects(page)
    assert found.empty == ["m.C.a"]
    assert found.params == {"m.C.f": ["k"]}


def test_the_reference_leads_with_the_client(sdk_html: str) -> None:
    ids = re.findall(r'<h[2-6] id="([\w.-]+)" class="doc doc-heading"', sdk_html)
    assert ids[0] == "sm_peagle.client.Client"
    sections = re.findall(r'<h2 id="([\w-]+)"', sdk_html)
    assert sections[:3] == ["the-client", "results", "errors"], sections


def test_deploy_documents_the_spec_options_by_name(sdk_html: str) -> None:
    # A few spec options a user reaches for first (the spec's own keys: k is
    # speculative.num_speculative_tokens, the others are named as in the spec).
    params = objects(sdk_html).params.get("sm_peagle.client.Client.deploy", [])
    missing = [p for p in ("k", "mode", "role", "instance_type") if p not in params]
    assert not missing, f"Client.deploy documents {params}, not {missing}"


def test_no_field_renders_as_an_empty_box(sdk_html: str) -> None:
    empty = objects(sdk_html).empty
    assert not empty, (
        "documented nowhere (describe each in its class docstring's Attributes: section): "
        + ", ".join(map(str, empty))
    )
