"""Spec options are declared once (cli/spec_options.SPEC_OPTIONS) and every command that
takes a spec has all of them: a new option is a field of the spec model, a field of
SpecOptions and one entry there, and the SDK's keyword arguments take it too."""

from __future__ import annotations

import dataclasses

import typer.main

from sm_peagle.cli.app import build_app
from sm_peagle.cli.spec_options import SPEC_OPTIONS
from sm_peagle.planning.spec.options import SpecOptions

SPEC_COMMANDS = ("plan", "deploy")
# Set through another option, not a flag of their own (--autoscale MIN:MAX sets both).
NO_FLAG = {"autoscale_min", "autoscale_max"}


def _params(command: str) -> set[str]:
    group = typer.main.get_command(build_app(command))
    return {p.name for p in group.commands[command].params}


def test_every_spec_option_is_a_field_of_spec_options_and_every_field_has_a_flag() -> None:
    fields = {f.name for f in dataclasses.fields(SpecOptions)}
    declared = [o.field for o in SPEC_OPTIONS]
    assert len(declared) == len(set(declared))
    assert set(declared) == fields - NO_FLAG


def test_plan_and_deploy_take_every_spec_option() -> None:
    names = {o.name for o in SPEC_OPTIONS}
    for command in SPEC_COMMANDS:
        assert names <= _params(command), command


def test_a_flag_reaches_the_plan_the_same_way_as_the_sdk_keyword(capsys) -> None:
    """`peagle plan … --instance-count 2 --fallback X` plans what
    sm_peagle.plan(…, instance_count=2, fallback=[X]) plans."""
    import json

    import sm_peagle
    from sm_peagle.cli.app import main

    code = main(
        [
            "plan",
            "gpt-oss-20b",
            "--instance-count",
            "2",
            "--fallback",
            "ml.g6e.12xlarge",
            "-k",
            "5",
            "--json",
        ]
    )
    out = capsys.readouterr().out
    cli = json.loads(out[: out.index("\n}\n") + 2])
    sdk = sm_peagle.plan("gpt-oss-20b", instance_count=2, fallback=["ml.g6e.12xlarge"], k=5)
    assert code in (0, 2)  # checks may fail on this machine's view; the requests are compared
    assert cli["create_endpoint_config"] == sdk.to_dict()["create_endpoint_config"]
    assert cli["create_model"] == sdk.to_dict()["create_model"]


def test_routing_strategy_reaches_the_variant_from_the_cli_and_the_sdk(capsys) -> None:
    """`--routing-strategy` / routing_strategy= set the production variant's RoutingConfig
    (AWS's CreateEndpointConfig: ProductionVariant.RoutingConfig.RoutingStrategy)."""
    import json

    import sm_peagle
    from sm_peagle.cli.app import main

    main(["plan", "gpt-oss-20b", "--routing-strategy", "LEAST_OUTSTANDING_REQUESTS", "--json"])
    out = capsys.readouterr().out
    variant = json.loads(out[: out.index("\n}\n") + 2])["create_endpoint_config"][
        "ProductionVariants"
    ][0]
    assert variant["RoutingConfig"] == {"RoutingStrategy": "LEAST_OUTSTANDING_REQUESTS"}
    sdk = sm_peagle.plan("gpt-oss-20b", routing_strategy="LEAST_OUTSTANDING_REQUESTS")
    assert sdk.create_endpoint_config["ProductionVariants"][0] == variant


def test_a_bad_routing_strategy_is_one_line_naming_the_choices(capsys) -> None:
    import pytest

    import sm_peagle
    from sm_peagle.cli.app import main
    from sm_peagle.errors import SpecError

    assert main(["plan", "gpt-oss-20b", "--routing-strategy", "FASTEST"]) == 2
    (line,) = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error:")]
    assert "endpoint.routing_strategy" in line and "LEAST_OUTSTANDING_REQUESTS" in line
    with pytest.raises(SpecError, match="endpoint.routing_strategy"):
        sm_peagle.plan("gpt-oss-20b", routing_strategy="FASTEST")
