"""The deployment spec models: what a user asks for, validated on the way in.

Every model forbids unknown keys, so a typo in a YAML file is an error that names the
key instead of a silently ignored setting (the same reason vLLM forbids unknown keys in
its speculative config). Rules that need more than one field, or the catalog, live in
`sm_peagle.planning.steps.checks`; the rules here are the ones a single field can decide.
Reading a spec from a file or a dict is `spec_loading`; flat options are `spec_options`.
"""

from __future__ import annotations

import hashlib
import json
import re
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ...errors import text
from ...vllm.speculative import VERSION_GATED_KEYS
from ..components.specs import InferenceComponentsSpec
from .rollout_spec import RolloutSpec

__all__ = [
    "Mode",
    "SpeculativeSpec",
    "DrafterSpec",
    "ContainerSpec",
    "EndpointSpec",
    "NetworkSpec",
    "AutoscalingSpec",
    "DeploymentSpec",
    "S3_URI_RE",
    "AWS_NAME_RE",
]

# SageMaker endpoint / endpoint-config / variant names (botocore: EndpointName).
AWS_NAME_RE = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
# Bucket naming rules (3-63 chars, lower case, digits, dots, hyphens) + optional key.
S3_URI_RE = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?:/(?P<key>.*))?$")
CHANNEL_RE = re.compile(r"^[A-Za-z0-9.\-_]{1,64}$")
ROLE_ARN_RE = re.compile(r"^arn:aws[a-z\-]*:iam::\d{12}:role/[a-zA-Z_0-9+=,.@\-/]{1,512}$")
ENGINE_ARG_RE = re.compile(r"^[a-z][a-z0-9_\-]*$")


class Mode(StrEnum):
    P_EAGLE = "p-eagle"
    EAGLE3 = "eagle3"
    BASELINE = "baseline"

    def __str__(self) -> str:
        return self.value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_enum_values=False)


def _check_s3_uri(value: str) -> str:
    if not S3_URI_RE.match(value) or "//" in value[5:]:
        raise ValueError(
            f"malformed S3 URI {value!r}: expected s3://bucket/prefix/ with a valid bucket name"
        )
    return value


class SpeculativeSpec(_Strict):
    """How the target decodes: P-EAGLE, EAGLE-3, or no speculation at all."""

    mode: Mode = Mode.P_EAGLE
    num_speculative_tokens: int | None = Field(
        default=None,
        description="K, tokens proposed per step. Default: the catalog's value for the model.",
    )
    draft_tensor_parallel_size: int | None = Field(default=None, ge=1)
    max_model_len: int | None = Field(default=None, ge=1)
    quantization: str | None = None
    enforce_eager: bool | None = None
    disable_padded_drafter_batch: bool | None = None
    disable_by_batch_size: int | None = Field(default=None, ge=1)
    num_speculative_tokens_per_batch_size: list[list[int]] | None = Field(
        default=None,
        description="Dynamic K (vLLM >= 0.24.0): [[start, end, K], ...] over inclusive "
        "batch-size ranges (--k-schedule 1-4:7,5-32:5); checked by planning/dynamic_k.py.",
    )
    # vLLM's own keys, passed through to the speculative config. Whether the image's
    # vLLM accepts each, and which values, is read from its source per version
    # (`vllm/config/speculative.py`, sm_peagle/vllm/data/vllm_source_facts.json) when the
    # plan is built, so only the types and vLLM's own bounds are checked here.
    rejection_sample_method: str | None = Field(
        default=None,
        description="vLLM's rejection sampler, one of the values the image's vLLM lists "
        "(0.33.0: standard, synthetic, block, fly; 0.18.0: strict, probabilistic). fly is "
        "lossy: outputs may differ from the target model's (a plan warning; --strict fails).",
    )
    disable_lookahead_block_hashes: bool | None = None
    draft_lm_head_quantization: str | None = Field(
        default=None, description="fp8 | nvfp4 (vLLM >= 0.33.0, Model Runner V2 only)."
    )
    xpress_topc: int | None = Field(default=None, ge=0)
    fly_window_size: int | None = Field(default=None, ge=1)
    fly_entropy_threshold: float | None = Field(default=None, ge=0)
    fly_entropy_top_k: int | None = Field(default=None, ge=1)

    @field_validator("num_speculative_tokens")
    @classmethod
    def _k_positive(cls, k: int | None) -> int | None:
        if k is not None and k < 1:
            raise ValueError(f"K must be at least 1 (got {k})")
        if k is not None and k > 128:
            raise ValueError(f"K must be at most 128, vLLM's rejection-sampler limit (got {k})")
        return k

    @model_validator(mode="after")
    def _baseline_has_no_k(self) -> SpeculativeSpec:
        if self.mode == Mode.BASELINE and self.num_speculative_tokens is not None:
            raise ValueError(
                text(
                    "mode baseline proposes no tokens, so K={n} means nothing: drop {k}, or "
                    "use mode p-eagle or eagle3",
                    n=self.num_speculative_tokens,
                )
            )
        return self


class DrafterSpec(_Strict):
    """Where the drafter head comes from and the channel it is mounted under."""

    source: str | None = Field(
        default=None,
        description="None = the catalog's head; s3://bucket/prefix/; or a local directory.",
    )
    channel: str = "eagle"
    trained_k: int | None = Field(default=None, ge=1, description="K the head was trained for.")
    recommended_k: int | None = Field(default=None, ge=1)
    bucket: str | None = Field(default=None, description="Bucket to push a local head to.")

    @field_validator("source")
    @classmethod
    def _source(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if v.startswith("s3:") or "://" in v:
            _check_s3_uri(v)
            if not v.endswith("/"):
                raise ValueError(f"drafter S3 URI must be a prefix ending in '/' (got {v!r})")
        return v

    @field_validator("channel")
    @classmethod
    def _channel(cls, v: str) -> str:
        if not CHANNEL_RE.match(v):
            raise ValueError(
                f"channel name {v!r} must be 1-64 characters of letters, digits, '.', '-' or '_'"
            )
        return v

    @property
    def is_s3(self) -> bool:
        return bool(self.source and self.source.startswith("s3://"))

    @property
    def is_local(self) -> bool:
        return bool(self.source) and not self.is_s3


class ContainerSpec(_Strict):
    """The serving container: an image, or a vLLM version to resolve the AWS DLC for."""

    image: str | None = None
    vllm_version: str | None = None
    cuda: str | None = Field(
        default=None,
        description="CUDA level of an image outside the published list (cu129, cu130): "
        "decides the host AMI. Published images carry theirs.",
        pattern=r"^cu\d{3}$",
    )
    engine_args: dict[str, str | int | float | bool] = Field(
        default_factory=dict,
        description="Extra `vllm serve` flags: {max_model_len: 8192} -> SM_VLLM_MAX_MODEL_LEN.",
    )
    env: dict[str, str | None] = Field(
        default_factory=dict,
        description="Extra raw environment. A null value removes a variable peagle would "
        "set by default (TENSOR_PARALLEL_DEGREE: null), so a spec can say what an adopted "
        "endpoint lacks; it cannot remove what the endpoint needs to serve (the speculative "
        "config, where the model is).",
    )

    @field_validator("vllm_version")
    @classmethod
    def _version(cls, v: str | None) -> str | None:
        if v is not None:
            from ...vllm.versions import VllmVersion

            VllmVersion(v)  # raises ValueError with a clear message
        return v

    @field_validator("image")
    @classmethod
    def _image(cls, v: str | None) -> str | None:
        if v is not None and (not v or any(c.isspace() for c in v) or ":" not in v):
            raise ValueError(f"image {v!r} must be a full URI with a tag, e.g. <ecr>/vllm:0.18.0-…")
        return v

    @field_validator("engine_args")
    @classmethod
    def _engine_args(cls, v: dict[str, Any]) -> dict[str, Any]:
        for key in v:
            if not ENGINE_ARG_RE.match(key):
                raise ValueError(
                    f"engine arg {key!r} must look like a vllm flag name (max_model_len)"
                )
            if key.replace("-", "_") == "speculative_config":
                raise ValueError(
                    "set the speculative config through `speculative:`, not engine_args"
                )
        return v


class EndpointSpec(_Strict):
    """The SageMaker endpoint: names, instances, timeouts and host settings."""

    name: str | None = None
    instance_type: str | None = None
    instance_count: int = Field(default=1, ge=1, le=100)
    variant_name: str = "AllTraffic"
    hosting: Literal["endpoint", "inference-components"] = Field(
        default="endpoint",
        description="endpoint: one model on the variant; inference-components: one or more "
        "components (see inference_components), managed instance scaling, scale to zero.",
    )
    volume_size_gb: int | None = Field(default=None, ge=1, le=512)
    model_data_download_timeout: int = Field(default=3600, ge=60, le=3600)
    container_startup_health_check_timeout: int = Field(default=3600, ge=60, le=3600)
    routing_strategy: Literal["LEAST_OUTSTANDING_REQUESTS", "RANDOM"] | None = None
    inference_ami_version: str | None = None
    fallback_instance_types: list[str] = Field(
        default_factory=list,
        max_length=4,
        description="Capacity fallbacks, in priority order (ProductionVariant InstancePools).",
    )
    # How the next update moves traffic (planning/rollout.py); outside the spec hash and tags.
    rollout: RolloutSpec | None = None
    # When the endpoint deletes itself (planning/expiry.py); outside the spec hash and tags:
    # the live schedule and the endpoint's `peagle:expires` tag are its record.
    ttl: str | int | None = Field(
        default=None,
        description="Delete the endpoint after this long (4h, 90m, 1d) or at this UTC time "
        "(2026-12-01T18:00Z), by an EventBridge Scheduler schedule: no peagle process runs.",
    )
    ttl_role: str | None = Field(
        default=None,
        description="The role the expiry schedule runs as (default: peagle-ttl-deleter, made "
        "and reused by peagle); it must trust scheduler.amazonaws.com.",
    )

    @field_validator("ttl")
    @classmethod
    def _ttl(cls, v: str | int | None) -> str | int | None:
        if v is not None:
            from ..expiry import parse_expiry

            parse_expiry(v)
        return v

    @field_validator("ttl_role")
    @classmethod
    def _ttl_role(cls, v: str | None) -> str | None:
        if v is not None and not ROLE_ARN_RE.match(v):
            raise ValueError(f"{v!r} is not an IAM role ARN (arn:aws:iam::123456789012:role/…)")
        return v

    @field_validator("fallback_instance_types")
    @classmethod
    def _fallbacks(cls, v: list[str]) -> list[str]:
        for t in v:
            cls._instance_type(t)
        if len(set(v)) != len(v):
            raise ValueError("fallback instance types must be distinct")
        return v

    @field_validator("name", "variant_name")
    @classmethod
    def _aws_name(cls, v: str | None) -> str | None:
        if v is not None and not AWS_NAME_RE.match(v):
            raise ValueError(
                f"{v!r} is not a valid SageMaker name: 1-63 letters, digits and hyphens, "
                "starting and ending with a letter or digit (no '_' or '.')"
            )
        return v

    @field_validator("instance_type")
    @classmethod
    def _instance_type(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"ml\.[a-z0-9\-]+\.[a-z0-9]+", v):
            raise ValueError(f"{v!r} is not an instance type of the form ml.<family>.<size>")
        return v


class AutoscalingSpec(_Strict):
    """Target tracking on sagemaker:variant:DesiredInstanceCount.

    Cooldowns default long because a GPU instance takes many minutes to download weights
    and pass health checks: scaling out again before the last one serves wastes money,
    and scaling in on a short lull throws away a warm instance.
    """

    min_instances: int = Field(ge=1)
    max_instances: int = Field(ge=1, le=100)
    target_concurrency: float | None = Field(
        default=None, gt=0, description="Concurrent requests per instance (high-res metric)."
    )
    target_invocations: float | None = Field(
        default=None, gt=0, description="Invocations per instance per minute."
    )
    scale_out_cooldown: int = Field(default=600, ge=0, le=86400)
    scale_in_cooldown: int = Field(default=1800, ge=0, le=86400)

    @model_validator(mode="after")
    def _consistent(self) -> AutoscalingSpec:
        if self.max_instances < self.min_instances:
            raise ValueError(
                f"max_instances {self.max_instances} is below min_instances {self.min_instances}"
            )
        if self.target_concurrency is not None and self.target_invocations is not None:
            raise ValueError("give target_concurrency or target_invocations, not both")
        return self


def _aws_ids(ids: list[str], prefix: str, what: str) -> list[str]:
    """`ids` unchanged if each is PREFIX- and 8 to 17 hex digits (subnet-…, sg-…)."""
    for s in ids:
        if not re.fullmatch(rf"{prefix}-[0-9a-f]{{8,17}}", s):
            raise ValueError(f"{s!r} is not {what} ({prefix}-0123abcd…)")
    return ids


class NetworkSpec(_Strict):
    """VPC placement, encryption and network isolation (on by default, as JumpStart does)."""

    subnets: list[str] = Field(default_factory=list, max_length=16)
    security_group_ids: list[str] = Field(default_factory=list, max_length=5)
    kms_key_id: str | None = None
    enable_network_isolation: bool = True

    @field_validator("subnets")
    @classmethod
    def _subnets(cls, v: list[str]) -> list[str]:
        return _aws_ids(v, "subnet", "a subnet id")

    @field_validator("security_group_ids")
    @classmethod
    def _sgs(cls, v: list[str]) -> list[str]:
        return _aws_ids(v, "sg", "a security group id")

    @field_validator("kms_key_id")
    @classmethod
    def _kms(cls, v: str | None) -> str | None:
        if v is not None and not re.fullmatch(r"[a-zA-Z0-9:/_\-]{1,2048}", v):
            raise ValueError(f"{v!r} is not a KMS key id, alias or ARN")
        return v

    @model_validator(mode="after")
    def _vpc_pairs(self) -> NetworkSpec:
        if bool(self.subnets) != bool(self.security_group_ids):
            raise ValueError("subnets and security_group_ids must be given together")
        return self


# CloudWatch Logs' retention values (PutRetentionPolicy, botocore's logs model).
LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)


class MonitoringSpec(_Strict):
    """Speculation health that AWS computes after peagle exits (`--monitor`): a CloudWatch
    Logs transformer and metric filters that turn vLLM's SpecDecoding lines into metrics,
    an alarm "speculation stopped paying" and a dashboard (planning/monitoring.py).

    Not part of the spec hash or the spec tags: what runs on SageMaker does not change
    with it, so turning it on or off sends no SageMaker request. The live alarm, filters
    and log group are its record (read back by `diff`, `apply` and `adopt`)."""

    enabled: bool = True
    threshold: float | None = Field(
        default=None,
        gt=1.0,
        description="Acceptance length below which speculation is not paying; default "
        "from K (planning/monitoring.py: default_threshold).",
    )
    period_seconds: int = Field(
        default=60,
        ge=60,
        le=86400,
        description="The alarm's period: a multiple of 60 (metric filters publish "
        "standard-resolution metrics).",
    )
    evaluation_periods: int = Field(default=5, ge=1, le=100)
    datapoints_to_alarm: int | None = Field(
        default=None, ge=1, le=100, description="default: min(3, evaluation_periods)"
    )
    log_retention_days: int = Field(default=30)
    keep_logs: bool = Field(
        default=False,
        description="Keep the log group peagle created when the endpoint is deleted.",
    )
    alarm_actions: list[str] = Field(default_factory=list, max_length=5)

    @field_validator("period_seconds")
    @classmethod
    def _period(cls, v: int) -> int:
        if v % 60:
            raise ValueError(f"period_seconds {v} must be a multiple of 60")
        return v

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, v: int) -> int:
        if v not in LOG_RETENTION_DAYS:
            raise ValueError(
                f"log_retention_days {v} is not one CloudWatch Logs takes: "
                + ", ".join(map(str, LOG_RETENTION_DAYS))
            )
        return v

    @field_validator("alarm_actions")
    @classmethod
    def _actions(cls, v: list[str]) -> list[str]:
        for a in v:
            if not re.fullmatch(r"arn:aws[a-z\-]*:[a-z0-9\-]+:[a-z0-9\-]*:\d{0,12}:\S{1,1000}", a):
                raise ValueError(f"alarm action {a!r} is not an ARN (an SNS topic's, say)")
        return v

    @model_validator(mode="after")
    def _datapoints(self) -> MonitoringSpec:
        n = self.datapoints_to_alarm
        if n is not None and n > self.evaluation_periods:
            raise ValueError(
                f"datapoints_to_alarm {n} is more than evaluation_periods {self.evaluation_periods}"
            )
        return self

    @property
    def alarm_datapoints(self) -> int:
        """M of N: the datapoints that must breach (default 3, or every period if fewer)."""
        return self.datapoints_to_alarm or min(3, self.evaluation_periods)


# Speculative fields added after endpoints were deployed with peagle: left out of the
# spec hash while unset, so those endpoints show no drift.
_HASHED_ONLY_WHEN_SET = ("num_speculative_tokens_per_batch_size", *VERSION_GATED_KEYS)


class DeploymentSpec(_Strict):
    """Everything peagle needs to plan one P-EAGLE (or EAGLE-3, or baseline) endpoint."""

    model: str = Field(description="Catalog alias (peagle models) or a JumpStart model id.")
    model_data: str | None = Field(
        default=None,
        description="s3://…/ prefix (uncompressed), s3://…/model.tar.gz, or hf://org/name.",
    )
    jumpstart_config: str | None = Field(
        default=None, description="JumpStart inference config; default: the top-ranked one."
    )
    region: str | None = None
    role: str | None = Field(default=None, description="SageMaker execution role ARN.")
    speculative: SpeculativeSpec = Field(default_factory=SpeculativeSpec)
    drafter: DrafterSpec = Field(default_factory=DrafterSpec)
    container: ContainerSpec = Field(default_factory=ContainerSpec)
    endpoint: EndpointSpec = Field(default_factory=EndpointSpec)
    network: NetworkSpec = Field(default_factory=NetworkSpec)
    autoscaling: AutoscalingSpec | None = None
    inference_components: InferenceComponentsSpec | None = None
    monitoring: MonitoringSpec | None = None
    tags: dict[str, str] = Field(default_factory=dict)

    @field_validator("model")
    @classmethod
    def _model(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._\-]{0,127}", v):
            raise ValueError(f"{v!r} is not a model alias or JumpStart model id")
        return v

    @field_validator("model_data")
    @classmethod
    def _model_data(cls, v: str | None) -> str | None:
        if v is None:
            return v
        if v.startswith("hf://"):
            if not re.fullmatch(r"hf://[A-Za-z0-9_.\-]+/[A-Za-z0-9_.\-]+", v):
                raise ValueError(f"{v!r} is not a Hugging Face id (hf://org/name)")
            return v
        _check_s3_uri(v)
        if not (v.endswith("/") or v.endswith(".tar.gz")):
            raise ValueError(f"model data {v!r} must be a prefix ending in '/' or a .tar.gz")
        return v

    @field_validator("region")
    @classmethod
    def _region(cls, v: str | None) -> str | None:
        from ...catalog.regions import region_problem

        problem = region_problem(v) if v is not None else None
        if problem:
            raise ValueError(problem)
        return v

    @field_validator("role")
    @classmethod
    def _role(cls, v: str | None) -> str | None:
        if v is not None and not ROLE_ARN_RE.match(v):
            raise ValueError(f"{v!r} is not an IAM role ARN (arn:aws:iam::123456789012:role/…)")
        return v

    @property
    def monitored(self) -> bool:
        """True when the spec asks for speculation health (`monitoring`, enabled)."""
        return self.monitoring is not None and self.monitoring.enabled

    def sha256(self) -> str:
        """Stable hash of what was asked for; tagged on resources to detect drift."""
        data = self.model_dump(mode="json")
        # Monitoring is CloudWatch's, not SageMaker's: it never changes the names.
        data.pop("monitoring", None)
        # So is the rollout: it says how the next update changes the endpoint, not what runs.
        data["endpoint"].pop("rollout", None)
        # So is the expiry: the schedule and the endpoint's tag are its record.
        data["endpoint"].pop("ttl", None)
        data["endpoint"].pop("ttl_role", None)
        # Hosting fields at their defaults hash as before they existed, so endpoints an
        # older peagle deployed show no drift.
        if data.get("inference_components") is None:
            data.pop("inference_components", None)
        elif data["inference_components"].get("scale_in") is None:
            data["inference_components"].pop("scale_in", None)  # no ScaleInPolicy
        if data["endpoint"].get("hosting") == "endpoint":
            data["endpoint"].pop("hosting")
        for key in _HASHED_ONLY_WHEN_SET:  # unset: the hash an older peagle computed
            if data["speculative"].get(key) is None:
                data["speculative"].pop(key, None)
        canon = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canon.encode()).hexdigest()
