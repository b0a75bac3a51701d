"""The pure rules of a per-component K/mode change (planning/component_change.py): which
components a refusal names, and what the spec becomes. The moto-backed end-to-end checks
are tests/integration/test_component_k_update.py."""

from __future__ import annotations

import pytest

from sm_peagle.cli.faces import CliFace
from sm_peagle.errors import SpecError
from sm_peagle.planning.components.change import change_component, refuse_top_level_change
from sm_peagle.planning.spec.options import spec_from_options

EP = "ep"


def spec(*components: str, **kw: object) -> object:
    return spec_from_options("gpt-oss-20b", components=list(components) or None, **kw)


def test_k_without_a_component_names_every_component_that_takes_a_k() -> None:
    s = spec("p-eagle:k=7", "fast:mode=p-eagle,k=5", "baseline")
    with pytest.raises(SpecError) as e:
        refuse_top_level_change(s, EP, k=4, mode=None)
    # One error; Python words it with keywords, the CLI with flags (no face switch).
    assert str(e.value) == (
        "ep hosts inference components; pass component='p-eagle' k=4 "
        "(K is per component: p-eagle, fast)"
    )
    assert e.value.message.render(CliFace("update")) == (
        "ep hosts inference components; pass --component p-eagle -k 4 "
        "(K is per component: p-eagle, fast)"
    )
    assert e.value.field == "component"


def test_k_when_every_component_runs_baseline() -> None:
    with pytest.raises(SpecError, match="none of which takes a K"):
        refuse_top_level_change(spec("baseline"), EP, k=4, mode=None)


def test_a_single_model_endpoint_is_not_refused() -> None:
    refuse_top_level_change(spec(), EP, k=4, mode="eagle3")  # no components: no refusal


def test_change_replaces_one_component_and_keeps_the_others() -> None:
    s = change_component(spec("p-eagle:k=7", "baseline"), EP, "ep-p-eagle", k=5)
    comps = {c.name: (c.mode, c.k) for c in s.inference_components.components}
    assert comps == {"p-eagle": (None, 5), "baseline": (None, None)}


def test_switching_to_baseline_drops_the_k_and_a_k_for_baseline_is_refused() -> None:
    s = change_component(spec("p-eagle:k=7", "baseline"), EP, "p-eagle", mode="baseline")
    assert s.inference_components.components[0].k is None
    assert s.inference_components.components[0].mode == "baseline"
    with pytest.raises(SpecError, match="component baseline runs baseline"):
        change_component(spec("p-eagle:k=7", "baseline"), EP, "baseline", k=3)


def test_the_implicit_component_is_named_for_the_mode() -> None:
    s = spec(hosting="inference-components", k=7)
    changed = change_component(s, EP, "p-eagle", k=4)
    assert [(c.name, c.k) for c in changed.inference_components.components] == [("p-eagle", 4)]
    with pytest.raises(SpecError, match="its components: p-eagle"):
        change_component(s, EP, "baseline", k=4)
    with pytest.raises(SpecError, match="hosts no inference components"):
        change_component(spec(), EP, "p-eagle", k=4)
