"""GPU instance types peagle can place a vLLM endpoint on.

GPU counts, memory, vCPU and RAM are AWS's published figures. Prices are on-demand
SageMaker hosting $/h in us-east-1 where a published figure was found, otherwise None;
`sm_peagle.catalog.pricing` fills the rest live from the AWS Price List API when
credentials exist. Never guess a price: a None shows as "unknown". A price holds for
`price_region` only: another region's price is unknown, never this one unlabelled
(`pricing.price_in`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

__all__ = ["InstanceType", "INSTANCES", "get_instance", "instance_family"]


@dataclass(frozen=True)
class InstanceType:
    name: str
    gpus: int
    gpu: str
    gpu_memory_gb: float
    vcpu: int
    ram_gib: int
    usd_per_hour: float | None = None
    price_source: str | None = None
    arm_host: bool = False
    # Every type here carries local NVMe instance storage; SageMaker ties some options
    # (VolumeSizeInGB, KmsKeyId for storage) to EBS-only types.
    local_nvme: bool = True
    # Why a live price lookup kept the catalog figure (or found none); None otherwise.
    price_note: str | None = None
    # The region `usd_per_hour` was published for (SageMaker prices differ by region).
    price_region: str | None = None

    @property
    def total_gpu_memory_gb(self) -> float:
        return self.gpus * self.gpu_memory_gb

    def to_dict(self) -> dict:
        d = asdict(self)
        d["total_gpu_memory_gb"] = self.total_gpu_memory_gb
        return d


_BLOG = "AWS blog, us-east-1"
_BLOG_REGION = "us-east-1"


def _g7e(size: str, gpus: int, vcpu: int, ram: int, price: float | None = None) -> InstanceType:
    return InstanceType(
        f"ml.g7e.{size}",
        gpus,
        "RTX PRO 6000 Blackwell",
        96,
        vcpu,
        ram,
        price,
        _BLOG if price is not None else None,
        price_region=_BLOG_REGION if price is not None else None,
    )


def _g6e(size: str, gpus: int, vcpu: int, ram: int, price: float | None = None) -> InstanceType:
    return InstanceType(
        f"ml.g6e.{size}",
        gpus,
        "L40S",
        48,
        vcpu,
        ram,
        price,
        _BLOG if price is not None else None,
        price_region=_BLOG_REGION if price is not None else None,
    )


_ALL = [
    _g7e("2xlarge", 1, 8, 64, 4.20),
    _g7e("4xlarge", 1, 16, 128),
    _g7e("8xlarge", 1, 32, 256),
    _g7e("12xlarge", 2, 48, 512),
    _g7e("24xlarge", 4, 96, 1024),
    _g7e("48xlarge", 8, 192, 2048),
    InstanceType("ml.p6-b200.48xlarge", 8, "B200", 179, 192, 2048),
    InstanceType("ml.p6-b300.48xlarge", 8, "B300", 268, 192, 4096),
    InstanceType("ml.p6e-gb200.36xlarge", 4, "GB200", 186, 144, 960, arm_host=True),
    _g6e("xlarge", 1, 4, 32),
    _g6e("2xlarge", 1, 8, 64),
    _g6e("4xlarge", 1, 16, 128),
    _g6e("8xlarge", 1, 32, 256),
    _g6e("16xlarge", 1, 64, 512),
    _g6e("12xlarge", 4, 48, 384, 13.12),
    _g6e("24xlarge", 4, 96, 768),
    _g6e("48xlarge", 8, 192, 1536),
    InstanceType("ml.p5.48xlarge", 8, "H100", 80, 192, 2048),
    InstanceType("ml.p5e.48xlarge", 8, "H200", 141, 192, 2048),
    InstanceType("ml.p5en.48xlarge", 8, "H200", 141, 192, 2048),
]

INSTANCES: dict[str, InstanceType] = {i.name: i for i in _ALL}


def get_instance(name: str) -> InstanceType | None:
    return INSTANCES.get(name)


def instance_family(name: str) -> str:
    """'ml.g7e.2xlarge' -> 'g7e'; 'ml.p6-b200.48xlarge' -> 'p6-b200' (JumpStart's keys)."""
    parts = name.split(".")
    return parts[1] if len(parts) == 3 else name


def with_price(inst: InstanceType, usd: float | None, source: str) -> InstanceType:
    return replace(inst, usd_per_hour=usd, price_source=source if usd is not None else None)
