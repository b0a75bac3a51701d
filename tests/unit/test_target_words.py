"""What peagle says about a plugin's target comes from the target (issue 35): a plugin
written only against `sm_peagle.contract` (below: target `emu`, one model it serves) is
named, labelled and offered in its own words, and peagle adds none of its own.

- a model a target serves is refused anywhere else, before any request, with the target's
  run as the remedy; on the target, the note names the engine the target reports;
- the "talking to" line and the unreachable remedy name the target by its state;
- an old `sm_peagle.<name>` resolves only through a plugin's `moved()`, and importing a
  submodule never loads plugins.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

import sm_peagle
from sm_peagle import plugins
from sm_peagle.catalog import models
from sm_peagle.contract import PluginBase, TargetState, Wording
from sm_peagle.errors import SpecError

URL = "http://127.0.0.1:1"
MODEL: dict[str, Any] = {
    "alias": "emu-tiny",
    "hf_id": "emu/tiny-llama",
    "jumpstart_id": None,
    "jumpstart_wiring_confirmed": False,
    "jumpstart_config": None,
    "jumpstart_snapshot": None,
    "total_params_b": 0.0026,
    "active_params_b": 0.0026,
    "hidden_size": 256,
    "num_layers": 4,
    "num_kv_heads": 2,
    "head_dim": 64,
    "vocab_size": 512,
    "weight_bytes": 5_300_000,
    "weight_note": "bf16, the emulator's model",
    "drafter": {
        "hf_id": "emu/tiny-head",
        "trained_k": 5,
        "recommended_k": 3,
        "layers": 1,
        "bytes": 2_200_000,
        "bytes_estimated": False,
        "note": "a P-EAGLE head",
    },
    "default_instance": "ml.g7e.2xlarge",
    "default_k": 3,
    "default_k_source": "emu plugin",
    "sources": ("the emu plugin",),
    "architecture": "LlamaForCausalLM",
    "model_data": "s3://emu-bucket/tiny-llama/",
    "drafter_source": "s3://emu-bucket/tiny-head/",
    "vllm_version": "0.31.0",
    "only_the_plugin_knows": True,  # a key ModelEntry does not have: left out
}


class _Target:
    name = "emu"
    options = ()
    offer = Wording(cli="--emu", python="emu.client()")
    run = Wording(cli="peagle --emu", python="`emu.client()`")

    def activate(self, values: Mapping[str, str | bool]) -> TargetState:
        raise AssertionError("not activated in these tests")

    def current(self) -> TargetState | None:
        return TargetState(
            "emu",
            URL,
            "EMU (SIMULATED)",
            engine="MADE-UP",
            carry=("--emu",),
            unreachable=Wording(cli="`peagle emu status`", python="emu.status()"),
        )


class _Plugin(PluginBase):
    name = "emu"

    def target(self) -> Any:
        return _Target()

    def models(self) -> Sequence[Mapping[str, Any]]:
        return (MODEL,)


@pytest.fixture
def emu(monkeypatch: pytest.MonkeyPatch) -> None:
    """The emu plugin is the only one installed; this process talks to AWS."""
    monkeypatch.setattr(plugins, "installed", lambda: (_Plugin(),))
    monkeypatch.setattr(models, "_PLUGIN_MODELS", None)
    monkeypatch.delenv("PEAGLE_TARGET", raising=False)
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SAGEMAKER"):
        monkeypatch.delenv(name, raising=False)


def test_a_target_s_model_is_served_by_it_and_refused_elsewhere(emu: None) -> None:
    from sm_peagle.cli.faces import CliFace

    entry = models.find_model("emu-tiny")
    assert entry is not None and entry.served_by == "emu"
    with pytest.raises(SpecError) as err:
        sm_peagle.Client(region="us-east-1").deploy("emu-tiny")
    assert str(err.value) == (
        "emu-tiny is a emu-only model: its weights exist only on the emu plugin's target, "
        "not on AWS"
    )
    assert err.value.remedy == "deploy it on that target: `emu.client()`"
    assert err.value.one_line(CliFace("deploy")).endswith(
        "(fix: deploy it on that target: peagle --emu)"
    )


def test_on_its_target_the_model_is_served_by_the_engine_the_target_reports(
    emu: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sm_peagle.ops.deployment import refuse_target_only

    monkeypatch.setenv("PEAGLE_TARGET", "emu")
    said: list[str] = []
    refuse_target_only("emu-tiny", say=said.append)
    assert said == ["emu-tiny: a emu-only model, served by the emu's MADE-UP engine"]
    refuse_target_only("gpt-oss-20b", say=said.append)  # a real model: nothing to say
    assert len(said) == 1


def test_a_plugin_without_a_target_adds_models_aws_serves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class _Catalog(PluginBase):
        name = "catalog"

        def models(self) -> Sequence[Mapping[str, Any]]:
            return (MODEL,)

    monkeypatch.setattr(plugins, "installed", lambda: (_Catalog(),))
    monkeypatch.setattr(models, "_PLUGIN_MODELS", None)
    from sm_peagle.ops.deployment import refuse_target_only

    entry = models.find_model("emu-tiny")
    assert entry is not None and entry.served_by is None
    refuse_target_only("emu-tiny")  # not refused


def test_the_talking_to_line_names_the_target_by_its_state(
    emu: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sm_peagle.ops.target import talking_to

    assert talking_to("us-east-1") == "talking to: AWS, region us-east-1"
    monkeypatch.setenv("PEAGLE_TARGET", "emu")
    assert talking_to("us-east-1") == (
        f"talking to: EMU (SIMULATED) at {URL} (peagle's local emu; not AWS)"
    )
    assert talking_to("us-east-1", endpoint_url="http://10.0.0.1:5000") == (
        "talking to: custom AWS endpoint http://10.0.0.1:5000 (region us-east-1)"
    )


def test_an_unreachable_target_names_the_target_s_own_remedy(
    emu: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from botocore.exceptions import EndpointConnectionError

    from sm_peagle.aws import as_peagle_error
    from sm_peagle.cli.faces import CliFace

    # AWS's own endpoint, unreachable: the fix offers the installed target
    on_aws = as_peagle_error(
        EndpointConnectionError(endpoint_url="https://api.sagemaker.us-east-1.amazonaws.com")
    )
    assert on_aws is not None
    assert on_aws.remedy == "check the network, a proxy, or the region; or run with emu.client()"
    assert on_aws.one_line(CliFace("status")).endswith("or run with --emu)")
    monkeypatch.setenv("PEAGLE_TARGET", "emu")
    on_target = as_peagle_error(EndpointConnectionError(endpoint_url=URL))
    assert on_target is not None
    assert on_target.remedy == "the emu did not answer: emu.status()"
    assert on_target.one_line(CliFace("status")).endswith(
        "(fix: the emu did not answer: `peagle emu status`)"
    )


def test_an_old_name_resolves_only_through_a_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plugins, "installed", lambda: ())
    with pytest.raises(AttributeError, match="module 'sm_peagle' has no attribute 'use_sandbox'"):
        sm_peagle.use_sandbox  # noqa: B018

    class _Moved(PluginBase):
        def moved(self) -> Mapping[str, str]:
            return {"sm_peagle.old_name": "os.path.join"}

    monkeypatch.setattr(plugins, "installed", lambda: (_Moved(),))
    with pytest.warns(FutureWarning, match="sm_peagle.old_name moved to os.path.join"):
        import os.path

        assert sm_peagle.old_name is os.path.join  # type: ignore[attr-defined]


def test_importing_a_submodule_loads_no_plugin() -> None:
    """`from . import settings` asks the package's `__getattr__` first: a submodule must
    not make it scan the entry points and import a plugin (a cold start pays for it)."""
    code = (
        "import sys, sm_peagle\n"
        "from sm_peagle import settings, errors\n"
        "from sm_peagle.cli import output\n"
        "print(sorted(m for m in sys.modules if m.endswith('peagle_plugin') or "
        "m == 'sm_peagle.plugins'))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
