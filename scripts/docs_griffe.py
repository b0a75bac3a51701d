"""A griffe extension for the SDK reference (mkdocs.yml, the python handler's `extensions`):
every field of a public class is documented once, and no field renders as an empty box.

mkdocstrings renders a class's `Attributes:` docstring section as a table AND each
attribute member as a box of its own, which for a field without a docstring of its own
(a dataclass field, an instance attribute set in `__init__`) is a heading with nothing
under it. So:

- an attribute member with no docstring of its own that the `Attributes:` section of its
  class (or of a base class, as for an error's `exit_code`) describes is dropped from the
  members: the section's table documents it, with its type;
- a pydantic model's field with no docstring gets its `Field(description=...)` as its
  docstring (griffe reads code, not pydantic's metadata; the description is the one the
  spec's JSON Schema carries).

What is left without a docstring is an undocumented field, and shows as the empty box the
docs test (tests/e2e/test_sdk_reference.py) looks for.
"""

from __future__ import annotations

import importlib
from typing import Any

import griffe


def _attributes_documented(cls: griffe.Class) -> set[str]:
    """The names the `Attributes:` sections of `cls` and its bases (as far as griffe
    resolves them) describe."""
    try:
        classes = [cls, *cls.mro()]
    except ValueError:  # a base griffe cannot resolve (an external class): this one only
        classes = [cls]
    names: set[str] = set()
    for c in classes:
        if c.docstring is None:
            continue
        # Parsed here, while the members are still there: an entry without a type takes
        # its member's annotation (griffe's Google parser); the parse is cached, so the
        # table keeps the type after the member is dropped.
        for section in c.docstring.parsed:
            if section.kind is griffe.DocstringSectionKind.attributes:
                names.update(a.name for a in section.value)
    return names


def _pydantic_descriptions(cls: griffe.Class) -> dict[str, str]:
    """{field: description} of the pydantic model at `cls.path` ({} for anything else)."""
    module, _, name = cls.path.rpartition(".")
    try:
        obj: Any = getattr(importlib.import_module(module), name)
    except Exception:  # noqa: BLE001 - not importable as such (nested, dynamic): no fields
        return {}
    fields = getattr(obj, "model_fields", None)
    if not isinstance(fields, dict):
        return {}
    return {k: _field_description(obj, k, f) for k, f in fields.items()}


def _field_description(model: type, key: str, field: Any) -> str:
    """A field's description; for one without (a nested section of the spec, `tags`), the
    first paragraph of its model's docstring, and where the spec reference lists it."""
    if getattr(field, "description", None):
        return field.description
    nested = [t for t in (field.annotation, *getattr(field.annotation, "__args__", ())) if
              isinstance(t, type) and hasattr(t, "model_fields")]  # fmt: skip
    where = f"[{model.__name__}](spec.md#{model.__name__.lower()})"
    if nested:
        doc = " ".join((nested[0].__doc__ or "").strip().split("\n\n")[0].split())
        link = f"[{nested[0].__name__}](spec.md#{nested[0].__name__.lower()})"
        return f"{doc} Every key: {link}." if doc else f"Every key: {link}."
    return f"The spec's `{key}` key: see {where}."


def _classes(obj: griffe.Object) -> Any:
    for member in obj.members.values():
        if member.is_alias:
            continue
        if member.is_class:
            yield member
        if member.is_module or member.is_class:
            yield from _classes(member)


def _runtime_docstring(fn: griffe.Function) -> str | None:
    """The docstring of the object at `fn.path` as Python sees it once imported."""
    import inspect

    owner, _, name = fn.path.rpartition(".")
    module_path, _, cls_name = owner.rpartition(".")
    try:
        obj: Any = importlib.import_module(owner)
    except ImportError:
        try:
            obj = getattr(importlib.import_module(module_path), cls_name)
        except Exception:  # noqa: BLE001 - not importable as such: keep the source's
            return None
    return inspect.getdoc(getattr(obj, name, None))


def _spec_option_docs(pkg: griffe.Module, loader: griffe.GriffeLoader) -> None:
    """A method decorated with `documents_spec_options` (plan, deploy, diff, apply,
    update) gets its docstring as imported: the decorator adds an `Args:` entry for each
    spec option from the one table (planning/spec/options.py), which griffe, reading the
    source, would not see."""
    for cls in list(_classes(pkg)):
        for member in cls.members.values():
            if member.is_alias or not member.is_function:
                continue
            if not any("documents_spec_options" in str(d.value) for d in member.decorators):
                continue
            doc = _runtime_docstring(member)
            if doc:
                member.docstring = griffe.Docstring(
                    doc,
                    parent=member,
                    parser=loader.docstring_parser,
                    parser_options=loader.docstring_options,
                )


class FieldDocs(griffe.Extension):
    """See the module docstring."""

    def on_package(self, *, pkg: griffe.Module, loader: griffe.GriffeLoader, **_: Any) -> None:
        _spec_option_docs(pkg, loader)
        for cls in list(_classes(pkg)):
            undocumented = {
                name: m
                for name, m in cls.members.items()
                if not m.is_alias and m.is_attribute and not m.docstring
            }
            if not undocumented:
                continue
            in_table = _attributes_documented(cls)
            descriptions = _pydantic_descriptions(cls)
            for name, member in undocumented.items():
                if name in in_table:
                    del cls.members[name]
                elif name in descriptions:
                    member.docstring = griffe.Docstring(
                        descriptions[name],
                        parent=member,
                        parser=loader.docstring_parser,
                        parser_options=loader.docstring_options,
                    )
