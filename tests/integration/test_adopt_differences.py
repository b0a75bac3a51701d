"""`peagle adopt` and the fields a spec cannot carry (issue 18: "Refuse, with the reason,
what peagle cannot represent"): when the reconstructed spec does not plan to the requests
the endpoint runs, adopt refuses (one line listing them, exit 2, nothing tagged) unless
`--accept-differences` is given; then it adopts and says what the next update or apply
will change. `--dry-run` shows the differences either way.

The endpoint here is JumpStart's GPT-OSS-20B deployment with `"parallel_drafting": false`
in SM_VLLM_SPECULATIVE_CONFIG: EAGLE-3 drafting, which peagle's `eagle3` mode plans
without that key, so the plan would drop it.
"""

from __future__ import annotations

import json

import pytest

import sm_peagle
from sm_peagle.errors import SpecError
from tests.integration.lifecycle_env import REGION, run
from tests.integration.test_adopt import NAME, SPEC_ENV, all_tags, create_jumpstart_endpoint, js_env
from tests.integration.test_adopt_refusals import assert_untouched, refused_adoption

PATH = f"model.PrimaryContainer.Environment.{SPEC_ENV}.parallel_drafting"


@pytest.fixture
def endpoint(world):
    env = js_env()
    cfg = json.loads(env[SPEC_ENV])
    cfg["parallel_drafting"] = False
    env[SPEC_ENV] = json.dumps(cfg)
    create_jumpstart_endpoint(world.role_arn, env=env)
    before = all_tags()
    world.requests.clear()
    return before


def test_differences_are_refused_in_one_line_and_nothing_is_tagged(world, capsys, endpoint):
    line = refused_adoption(world, capsys)
    assert f"cannot adopt {NAME}: its spec does not plan to what it runs" in line
    assert f"{PATH}: endpoint has false, peagle would send nothing" in line
    assert "--accept-differences" in line


def test_dry_run_lists_them(world, capsys, endpoint):
    code, out, err = run(capsys, "adopt", NAME, "--dry-run", "--json")
    assert code == 0, err
    assert json.loads(out)["differences"] == [{"path": PATH, "deployed": False, "planned": None}]
    code, out, _ = run(capsys, "adopt", NAME, "--dry-run")
    assert code == 0
    assert "Not represented (1): the next update or apply would change" in out
    assert_untouched(world, endpoint)


def test_accept_differences_adopts_and_says_what_the_next_update_changes(world, capsys, endpoint):
    code, out, err = run(capsys, "adopt", NAME, "--yes", "--accept-differences")
    assert code == 0, err
    assert f"the next update or apply will change 1 field(s): {PATH}" in out
    assert {t.get("peagle:managed") for t in all_tags().values()} == {"true"}


def test_the_sdk_refuses_the_same_and_accepts_on_request(world, endpoint):
    with pytest.raises(SpecError, match="its spec does not plan to what it runs"):
        sm_peagle.Endpoint.adopt(NAME, region=REGION)
    assert all_tags() == endpoint
    ep = sm_peagle.Endpoint.adopt(NAME, region=REGION, accept_differences=True)
    assert [d.path for d in ep.adoption.differences] == [PATH]
    assert ep.adoption.spec.speculative.mode.value == "eagle3"
    assert ep.spec() == ep.adoption.spec  # read back from the tags
