"""Models with published P-EAGLE heads, and what is actually known about each.

A field is None where no checked source gives it; plan then asks the user for the input
(`--model-data`, `--drafter`) or resolves it live from JumpStart. Nothing here is an S3
path that was not read from a real JumpStart spec.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

__all__ = ["DrafterInfo", "ModelEntry", "MODELS", "find_model"]


@dataclass(frozen=True)
class DrafterInfo:
    hf_id: str
    trained_k: int | None
    recommended_k: int | None
    layers: int | None
    bytes: int | None
    bytes_estimated: bool
    note: str = ""


@dataclass(frozen=True)
class ModelEntry:
    alias: str
    hf_id: str
    jumpstart_id: str | None
    # True only where a real JumpStart spec was read (bundled as a snapshot).
    jumpstart_wiring_confirmed: bool
    jumpstart_config: str | None
    jumpstart_snapshot: str | None
    total_params_b: float | None
    active_params_b: float | None
    hidden_size: int | None
    num_layers: int | None
    num_kv_heads: int | None
    head_dim: int | None
    vocab_size: int | None
    weight_bytes: int | None
    weight_note: str
    drafter: DrafterInfo | None
    default_instance: str
    default_k: int
    default_k_source: str
    extra_env: dict[str, str] = field(default_factory=dict)
    sources: tuple[str, ...] = ()
    # config.json architectures[0] of the target: vLLM must register it (the minimum vLLM
    # per mode is derived from vLLM's source data, `vllm/gates.py`).
    architecture: str | None = None
    # A multimodal target: parallel drafting raises NotImplementedError on it before
    # vLLM 0.21.0 (`v1/spec_decode/eagle.py`), so P-EAGLE needs a newer image.
    multimodal: bool = False
    # The plugin target that serves this entry (`AwsTarget.name`), for a model a plugin
    # contributes (`plugins.models()`): its weights exist only there, so the SDK refuses it
    # anywhere else (`ops.deployment.refuse_target_only`). None for a real model.
    served_by: str | None = None
    model_data: str | None = None
    drafter_source: str | None = None
    vllm_version: str | None = None

    def default_k_origin(self) -> tuple[str, str]:
        """(source, reason) of `default_k`, as `Plan.k_origin` says it: "jumpstart" (the
        JumpStart config's K), "head_card" or "peagle" (no source read)."""
        if self.default_k_source.startswith("JumpStart"):
            return "jumpstart", "JumpStart's default for this model"
        if self.default_k_source == "head card":
            return "head_card", "the head card's default"
        return "peagle", f"peagle's default; {self.default_k_source}"

    def kv_bytes_per_token(self) -> int | None:
        """K and V for every layer in bf16; ignores sliding-window savings (conservative)."""
        if None in (self.num_layers, self.num_kv_heads, self.head_dim):
            return None
        return 2 * self.num_layers * self.num_kv_heads * self.head_dim * 2  # type: ignore[operator]

    def to_dict(self) -> dict:
        return asdict(self)


_GPT_OSS_ENV = {"TIKTOKEN_ENCODINGS_BASE": "/opt/ml/model"}

MODELS: tuple[ModelEntry, ...] = (
    ModelEntry(
        alias="gpt-oss-20b",
        hf_id="openai/gpt-oss-20b",
        jumpstart_id="openai-reasoning-gpt-oss-20b",
        jumpstart_wiring_confirmed=True,
        jumpstart_config="lmi-optimized",
        jumpstart_snapshot="openai-reasoning-gpt-oss-20b.lmi-optimized.json",
        total_params_b=21.0,
        active_params_b=3.6,
        hidden_size=2880,
        num_layers=24,
        num_kv_heads=8,
        head_dim=64,
        vocab_size=201088,
        weight_bytes=13_800_000_000,
        weight_note="HF checkpoint, MXFP4 MoE experts (approx.)",
        drafter=DrafterInfo(
            "amazon/GPT-OSS-20B-P-EAGLE",
            trained_k=10,
            recommended_k=7,
            layers=4,
            bytes=3_600_000_000,
            bytes_estimated=False,
            note="ptd_token_id=201020",
        ),
        default_instance="ml.g7e.2xlarge",
        default_k=3,
        default_k_source="JumpStart lmi-optimized SM_VLLM_SPECULATIVE_CONFIG",
        extra_env=_GPT_OSS_ENV,
        sources=("JumpStart spec openai-reasoning-gpt-oss-20b v3.38.0", "HF model cards"),
        architecture="GptOssForCausalLM",
    ),
    ModelEntry(
        alias="gpt-oss-120b",
        hf_id="openai/gpt-oss-120b",
        jumpstart_id="openai-reasoning-gpt-oss-120b",
        jumpstart_wiring_confirmed=False,
        jumpstart_config=None,
        jumpstart_snapshot=None,
        total_params_b=117.0,
        active_params_b=5.1,
        hidden_size=2880,
        num_layers=36,
        num_kv_heads=8,
        head_dim=64,
        vocab_size=201088,
        weight_bytes=65_300_000_000,
        weight_note="HF checkpoint, MXFP4 MoE experts (approx.)",
        drafter=DrafterInfo(
            "amazon/gpt-oss-120b-p-eagle",
            trained_k=8,
            recommended_k=5,
            layers=4,
            bytes=3_600_000_000,
            bytes_estimated=True,
            note="size estimated from the GPT-OSS-20B head (same hidden size and vocab)",
        ),
        default_instance="ml.g7e.2xlarge",
        default_k=5,
        default_k_source="head card",
        extra_env=_GPT_OSS_ENV,
        sources=("JumpStart model id confirmed; its spec was not read", "HF model cards"),
        architecture="GptOssForCausalLM",
    ),
    ModelEntry(
        alias="qwen3-coder-30b-a3b-instruct",
        hf_id="Qwen/Qwen3-Coder-30B-A3B-Instruct",
        jumpstart_id=None,  # not found in any stored source: resolve live (ListHubContents)
        jumpstart_wiring_confirmed=False,
        jumpstart_config=None,
        jumpstart_snapshot=None,
        total_params_b=30.5,
        active_params_b=3.3,
        hidden_size=2048,
        num_layers=48,
        num_kv_heads=4,
        head_dim=128,
        vocab_size=151936,
        weight_bytes=61_100_000_000,
        weight_note="bf16 (the P-EAGLE head was trained on the FP8 target, ~31 GB)",
        drafter=DrafterInfo(
            "amazon/Qwen3-Coder-30B-A3B-Instruct-P-EAGLE",
            trained_k=18,
            recommended_k=10,
            layers=4,
            bytes=2_000_000_000,
            bytes_estimated=True,
            note="trained on the FP8 target; size estimated",
        ),
        default_instance="ml.g7e.2xlarge",
        default_k=10,
        default_k_source="head card",
        sources=("AWS P-EAGLE blog (seed 004)", "HF model cards"),
        architecture="Qwen3MoeForCausalLM",
    ),
    ModelEntry(
        alias="gemma-4-31b-it",
        hf_id="google/gemma-4-31b-it",
        jumpstart_id="huggingface-vlm-gemma-4-31b-it",
        jumpstart_wiring_confirmed=False,
        jumpstart_config=None,
        jumpstart_snapshot=None,
        total_params_b=31.0,
        active_params_b=31.0,
        hidden_size=None,
        num_layers=None,
        num_kv_heads=None,
        head_dim=None,
        vocab_size=None,
        weight_bytes=62_000_000_000,
        weight_note="bf16 estimate from the parameter count",
        drafter=None,  # AWS announced a head; its id, K and shape are not in any source read
        default_instance="ml.g7e.2xlarge",
        default_k=3,
        default_k_source="no head card read",
        sources=("JumpStart model id confirmed; its spec was not read", "AWS P-EAGLE blog"),
        architecture="Gemma4ForConditionalGeneration",
        multimodal=True,
    ),
)

_BY_NAME: dict[str, ModelEntry] = {}
for _m in MODELS:
    _BY_NAME[_m.alias] = _m
    if _m.jumpstart_id:
        _BY_NAME[_m.jumpstart_id] = _m
    _BY_NAME[_m.hf_id.lower()] = _m


_PLUGIN_MODELS: dict[str, ModelEntry] | None = None


def _plugin_models() -> dict[str, ModelEntry]:
    """Installed plugins' entries, read once and only on a miss (the entry-point scan is not
    free). A plugin with a target serves its models only there, whatever they say
    (`served_by` is set here); one without a target adds models AWS serves. A key
    `ModelEntry` does not have is left out."""
    global _PLUGIN_MODELS
    if _PLUGIN_MODELS is None:
        from dataclasses import fields

        from .. import plugins

        known = {f.name for f in fields(ModelEntry)}
        _PLUGIN_MODELS = {}
        for d, target in plugins.models():
            given = {k: v for k, v in d.items() if k in known}
            entry = ModelEntry(
                **{**given, "drafter": DrafterInfo(**d["drafter"]), "served_by": target}
            )
            _PLUGIN_MODELS[entry.alias] = entry
    return _PLUGIN_MODELS


def find_model(name: str) -> ModelEntry | None:
    """Look a model up by alias, JumpStart id or HF id (case-insensitive for HF ids)."""
    return _BY_NAME.get(name) or _BY_NAME.get(name.lower()) or _plugin_models().get(name)
