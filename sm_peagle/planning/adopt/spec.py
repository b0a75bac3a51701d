"""`peagle adopt`, the pure part: from Describe* answers to a deployment spec.

Given what an endpoint runs (DescribeEndpoint / DescribeEndpointConfig / DescribeModel,
its tags and its scaling target), `reconstruct` finds the smallest spec that plans to
the same requests, and lists the fields it could not represent:

1. refuse what one spec cannot describe (`adopt_refusals.refusal`);
2. name the model: `--model`, else JumpStart's tags (`sagemaker-sdk:jumpstart-model-id`,
   as the SageMaker SDK tags what it deploys), else `HF_MODEL_ID`, else the weights' S3
   prefix matched against the bundled JumpStart snapshots;
3. the speculative mode and K from SM_VLLM_SPECULATIVE_CONFIG (eagle3 + parallel_drafting
   = p-eagle; eagle3 alone = eagle3; none = baseline), the drafter channel from its path;
4. the endpoint, network, tags and autoscaling fields as they are;
5. plan that, and where the requests differ, pin the image, weights, drafter source and
   environment entries explicitly (a null for a default the endpoint lacks); plan again.
   What still differs is listed: only what a spec cannot express.

The spec is round-tripped through the tag encoding before the last plan, so the verdict
is about the spec `update` and `apply` will read back, not the one built here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ...catalog.jumpstart import load_snapshot
from ...catalog.models import find_model
from ...checks import Check, passed, warned
from ...errors import Call, Param, PeagleError, SpecError, as_text, text
from ...vllm.speculative import PASSTHROUGH_KEYS, SPEC_ENV
from ..build import plan
from ..plan_result import Plan
from ..spec.loading import spec_from_data
from ..spec.model import DeploymentSpec
from ..steps.environment import MODEL_LOCATION
from ..steps.scaling import CONCURRENCY_METRIC, INVOCATIONS_METRIC
from .compare import Difference, compare, deployed_view, plan_view
from .refusals import Deployed, primary_model, refusal, speculative_of_env

__all__ = ["Adoption", "Deployed", "reconstruct"]

JS_MODEL_ID = "sagemaker-sdk:jumpstart-model-id"
JS_VERSION = "sagemaker-sdk:jumpstart-model-version"
JS_CONFIG = "sagemaker-sdk:jumpstart-inference-config-name"
NOT_CARRIED_TAGS = ("peagle:", "aws:", "sagemaker-sdk:")
# Every key the plan passes through to vLLM (one list, so a key the spec learns is also
# carried when adopting: adopt must never drop a setting the endpoint runs with).
_SPECULATIVE_KEYS = (*PASSTHROUGH_KEYS, "num_speculative_tokens_per_batch_size")


@dataclass
class Adoption:
    """The reconstructed spec, its plan, and what that plan would change."""

    spec: DeploymentSpec
    plan: Plan
    differences: list[Difference]
    notes: list[Check] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "endpoint": self.plan.names["endpoint"],
            "spec": self.spec.model_dump(mode="json", exclude_defaults=True),
            "spec_sha256": self.plan.spec_sha256,
            "differences": [d.to_dict() for d in self.differences],
            "notes": [c.to_dict() for c in self.notes],
            "checks": [c.to_dict() for c in self.plan.checks],
        }


def _refuse(
    d: Deployed, reason: str, remedy: str | None = None, field: str | None = None
) -> SpecError:
    # text(): a reason or remedy naming a parameter or a call keeps it (`model=` / --model)
    message = text("cannot adopt {name}: {reason}", name=d.name, reason=as_text(reason))
    return SpecError(message, remedy=remedy, field=field)


def _identify(d: Deployed, override: str | None) -> tuple[str, str]:
    """(spec.model, how it was found)."""
    if override:
        entry = find_model(override)
        return (entry.alias if entry else override), text("{model}")
    for where, tags in (("endpoint", d.tags), ("model", d.model_tags)):
        if tags.get(JS_MODEL_ID):
            entry = find_model(tags[JS_MODEL_ID])
            return (entry.alias if entry else tags[JS_MODEL_ID]), f"{where} tag {JS_MODEL_ID}"
    container = primary_model(d).get("PrimaryContainer") or {}
    hf_id = (container.get("Environment") or {}).get("HF_MODEL_ID", "")
    if hf_id and not hf_id.startswith("/") and (entry := find_model(hf_id)):
        return entry.alias, "HF_MODEL_ID"
    uri = ((container.get("ModelDataSource") or {}).get("S3DataSource") or {}).get("S3Uri")
    if uri and (alias := _alias_by_weights(uri, d)):
        return alias, f"weights {uri}"
    raise _refuse(
        d,
        "cannot tell which model it serves (no JumpStart tags, no HF_MODEL_ID of a known "
        f"model, weights {uri or 'unknown'} match no bundled JumpStart spec)",
        text("pass {m} (see `{models}`)", m=Param("model", "ALIAS"), models=Call("models")),
        field="model",
    )


def _alias_by_weights(uri: str, d: Deployed) -> str | None:
    from ...catalog.jumpstart import resolve
    from ...catalog.models import MODELS

    variant = d.config["ProductionVariants"][0]
    for m in MODELS:
        if not m.jumpstart_snapshot:
            continue
        try:
            js = resolve(
                load_snapshot(m.jumpstart_snapshot),
                region=d.region,
                instance_type=variant.get("InstanceType"),
            )
        except PeagleError:
            continue
        if js.model_data_source["S3DataSource"]["S3Uri"] == uri:
            return m.alias
    return None


def _speculative(d: Deployed) -> tuple[dict[str, Any], str | None]:
    """The `speculative:` section and the drafter channel (None for baseline)."""
    env = (primary_model(d).get("PrimaryContainer") or {}).get("Environment") or {}
    cfg = speculative_of_env(env)
    if cfg is None:
        return {"mode": "baseline"}, None
    mode = "p-eagle" if cfg.get("parallel_drafting") is True else "eagle3"
    data: dict[str, Any] = {"mode": mode}
    if cfg.get("num_speculative_tokens") is not None:
        data["num_speculative_tokens"] = cfg["num_speculative_tokens"]
    for key in _SPECULATIVE_KEYS:
        if cfg.get(key) is not None:
            data[key] = cfg[key]
    return data, str(cfg["model"]).rstrip("/").rsplit("/", 1)[-1]


def _endpoint(d: Deployed) -> dict[str, Any]:
    v = d.config["ProductionVariants"][0]
    out: dict[str, Any] = {
        "name": d.name,
        "variant_name": v["VariantName"],
        "instance_type": v.get("InstanceType"),
        "instance_count": v.get("InitialInstanceCount", 1),
    }
    pairs = (
        ("model_data_download_timeout", "ModelDataDownloadTimeoutInSeconds"),
        ("container_startup_health_check_timeout", "ContainerStartupHealthCheckTimeoutInSeconds"),
        ("inference_ami_version", "InferenceAmiVersion"),
        ("volume_size_gb", "VolumeSizeInGB"),
    )
    for key, aws_key in pairs:
        if v.get(aws_key) is not None:
            out[key] = v[aws_key]
    if (v.get("RoutingConfig") or {}).get("RoutingStrategy"):
        out["routing_strategy"] = v["RoutingConfig"]["RoutingStrategy"]
    return out


def _network(d: Deployed) -> dict[str, Any]:
    model = primary_model(d)
    out: dict[str, Any] = {
        "enable_network_isolation": bool(model.get("EnableNetworkIsolation", False))
    }
    vpc = model.get("VpcConfig") or {}
    if vpc.get("Subnets"):
        out["subnets"] = list(vpc["Subnets"])
        out["security_group_ids"] = list(vpc.get("SecurityGroupIds") or [])
    if d.config.get("KmsKeyId"):
        out["kms_key_id"] = d.config["KmsKeyId"]
    return out


def _autoscaling(d: Deployed) -> tuple[dict[str, Any] | None, list[Check]]:
    """The `autoscaling:` section, when the target and its one policy fit the spec."""
    if not d.scaling_target:
        return None, []
    t = d.scaling_target
    rng = f"{t['MinCapacity']}..{t['MaxCapacity']}"
    tracking = [p for p in d.scaling_policies if p.get("PolicyType") == "TargetTrackingScaling"]
    cfg = (tracking[0].get("TargetTrackingScalingPolicyConfiguration") or {}) if tracking else {}
    metric = (cfg.get("PredefinedMetricSpecification") or {}).get("PredefinedMetricType")
    if len(d.scaling_policies) != 1 or metric not in (CONCURRENCY_METRIC, INVOCATIONS_METRIC):
        names = ", ".join(p["PolicyName"] for p in d.scaling_policies) or "no policy"
        return None, [
            warned(
                "autoscaling",
                f"scalable target {rng} with {names}: not one target-tracking policy on "
                f"{CONCURRENCY_METRIC} or {INVOCATIONS_METRIC}, so not in the spec; "
                "it is left as it is and removed with the endpoint",
            )
        ]
    data: dict[str, Any] = {"min_instances": t["MinCapacity"], "max_instances": t["MaxCapacity"]}
    key = "target_concurrency" if metric == CONCURRENCY_METRIC else "target_invocations"
    data[key] = cfg["TargetValue"]
    for ours, theirs in (
        ("scale_out_cooldown", "ScaleOutCooldown"),
        ("scale_in_cooldown", "ScaleInCooldown"),
    ):
        if cfg.get(theirs) is not None:
            data[ours] = cfg[theirs]
    return data, [passed("autoscaling", f"{rng} instances, {metric} target {cfg['TargetValue']}")]


def _base(d: Deployed, model: str, jumpstart_spec: dict | None) -> tuple[dict, list[Check]]:
    """Everything but the sources: identity, speculative, endpoint, network, tags, scaling."""
    speculative, channel = _speculative(d)
    data: dict[str, Any] = {
        "model": model,
        "region": d.region,
        "role": primary_model(d).get("ExecutionRoleArn"),
        "speculative": speculative,
        "endpoint": _endpoint(d),
        "network": _network(d),
    }
    if channel:
        data["drafter"] = {"channel": channel}
    # Not carried: peagle's own, AWS's reserved `aws:` and the SageMaker SDK's provenance
    # (`sagemaker-sdk:jumpstart-*`), which would make what peagle creates later claim to
    # be that JumpStart deployment. They only identify the model (`_identify`).
    user_tags = {k: v for k, v in d.tags.items() if not k.startswith(NOT_CARRIED_TAGS)}
    if user_tags:
        data["tags"] = user_tags
    notes: list[Check] = []
    config_name = d.tags.get(JS_CONFIG) or d.model_tags.get(JS_CONFIG)
    entry = find_model(model)
    js = jumpstart_spec or (
        load_snapshot(entry.jumpstart_snapshot) if entry and entry.jumpstart_snapshot else None
    )
    if config_name and js and config_name in (js.get("inference_configs") or {}):
        data["jumpstart_config"] = config_name
    version = d.tags.get(JS_VERSION) or d.model_tags.get(JS_VERSION)
    if version and js and version != js.get("version"):
        notes.append(
            passed(
                "jumpstart",
                f"deployed from JumpStart v{version}; peagle reads v{js.get('version')}, "
                "so what differs is pinned in the spec",
            )
        )
    scaling, scaling_notes = _autoscaling(d)
    if scaling:
        data["autoscaling"] = scaling
    return data, notes + scaling_notes


def _try_plan(data: dict[str, Any], jumpstart_spec: dict | None) -> Plan | None:
    try:
        return plan(spec_from_data(data), jumpstart_spec=jumpstart_spec)
    except PeagleError:
        return None


def _pin_sources(data: dict, d: Deployed, diffs: list[Difference] | None) -> dict:
    """Pin the image, the weights and the drafter's S3 source where the plan differs
    (everything, when the first plan could not even be built)."""
    out = json.loads(json.dumps(data))
    container = primary_model(d).get("PrimaryContainer") or {}
    paths = {x.path for x in diffs} if diffs is not None else None

    def differs(prefix: str) -> bool:
        return paths is None or any(p.startswith(prefix) for p in paths)

    if differs("model.PrimaryContainer.Image"):
        out.setdefault("container", {})["image"] = container["Image"]
    md = (container.get("ModelDataSource") or {}).get("S3DataSource") or {}
    hf_id = (container.get("Environment") or {}).get("HF_MODEL_ID", "")
    if differs("model.PrimaryContainer.ModelData"):
        if md.get("S3Uri"):
            out["model_data"] = md["S3Uri"]
        elif container.get("ModelDataUrl"):
            out["model_data"] = container["ModelDataUrl"]
        elif hf_id.count("/") == 1 and not hf_id.startswith("/"):
            out["model_data"] = f"hf://{hf_id}"
    channel = (out.get("drafter") or {}).get("channel")
    # Only a head at another place is pinned: a pinned source is "not the catalog's head"
    # to the plan (no card, so no recommended K), which a difference in, say, its
    # CompressionType does not make it.
    head_moved = paths is None or any(
        p.startswith("model.PrimaryContainer.AdditionalModelDataSources") and p.endswith("S3Uri")
        for p in paths
    )
    if channel and head_moved:
        for src in container.get("AdditionalModelDataSources") or []:
            if src.get("ChannelName") == channel:
                out["drafter"]["source"] = src["S3DataSource"]["S3Uri"]
    return out


def _pin_environment(data: dict, d: Deployed, diffs: list[Difference]) -> dict:
    """container.env entries for every variable the plan leaves out or sets otherwise,
    and a null for every variable the plan would set that the endpoint does not have
    (it removes that default). Not the speculative config (peagle writes it from
    `speculative:`; what differs there is listed) nor where the model is (a spec cannot
    remove it: `steps.environment.remove_defaults`)."""
    out = json.loads(json.dumps(data))
    env = (primary_model(d).get("PrimaryContainer") or {}).get("Environment") or {}
    prefix = "model.PrimaryContainer.Environment."
    keys = {x.path[len(prefix) :].split(".", 1)[0] for x in diffs if x.path.startswith(prefix)}
    for key in sorted(keys - {SPEC_ENV}):
        if key in env:
            out.setdefault("container", {}).setdefault("env", {})[key] = env[key]
        elif key not in MODEL_LOCATION:
            out.setdefault("container", {}).setdefault("env", {})[key] = None
    return out


def reconstruct(
    d: Deployed, *, model: str | None = None, jumpstart_spec: dict | None = None
) -> Adoption:
    """The spec that plans to what `d` runs, or SpecError saying why there is none."""
    if reason := refusal(d):
        raise _refuse(d, *reason)
    alias, how = _identify(d, model)
    base, notes = _base(d, alias, jumpstart_spec)
    deployed = deployed_view(primary_model(d), d.config)
    first = _try_plan(base, jumpstart_spec)
    data = _pin_sources(base, d, compare(deployed, plan_view(first)) if first else None)
    try:
        second = plan(spec_from_data(data), jumpstart_spec=jumpstart_spec)
        data = _pin_environment(data, d, compare(deployed, plan_view(second)))
        # What `update` and `apply` will read back from the tags (see lifecycle.spec_tags).
        spec = spec_from_data(spec_from_data(data).model_dump(mode="json", exclude_defaults=True))
        final = plan(spec, jumpstart_spec=jumpstart_spec)
    except PeagleError as e:
        raise _refuse(d, e.message, e.remedy) from None
    notes.insert(0, passed("adopt.model", text("{alias} (from the {how})", alias=alias, how=how)))
    notes += _k_advice(final)
    return Adoption(spec, final, compare(deployed, plan_view(final)), notes)


def _k_advice(p: Plan) -> list[Check]:
    """The catalog head's recommended K, when the endpoint runs the catalog's head.
    Silent on a pinned drafter source: it is pinned only when the head's S3 location is
    not the catalog's (`_pin_sources`), so it is another head whose card peagle does not
    know; `plan` and deploy preflight treat a pinned source the same way."""
    head = p.model.drafter if (p.model and p.spec.drafter.source is None) else None
    k = (p.speculative_config or {}).get("num_speculative_tokens")
    if head is None or head.recommended_k is None or k is None or k >= head.recommended_k:
        return []
    return [
        warned(
            "speculative.num_speculative_tokens",
            f"K={k} but the head's recommended K is {head.recommended_k} ({head.hf_id})",
            text(
                "{update}, then measure with `{bench}`",
                update=Call("update", p.names["endpoint"], k=head.recommended_k),
                bench=Call("bench"),
            ),
            field="k",
        )
    ]
