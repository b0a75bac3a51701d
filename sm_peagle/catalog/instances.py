"""GPU instance types peagle can place a vLLM endpoint on.

GPU counts, memory, vCPU and RAM are AWS's published figures. Prices are on-demand
SageMaker hosting $/h in us-east-1 where a published figure was found, otherwise None;
`sm_peagle.lifecycle.live_prices` fills the rest live from the AWS Price List API when
credentials exist. Never guess a price: a None shows as "unknown". A price holds for
`price_region` only: another region's price is unknown, never this one unlabelled
(`regional_prices.price_in`).

Local instance storage is data too (LOCAL_NVME_FAMILIES, with its source): SageMaker's
CreateEndpointConfig fails when KmsKeyId is given for a Nitro instance with local storage.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

__all__ = [
    "InstanceType",
    "INSTANCES",
    "INSTANCE_STORE_SOURCE",
    "LOCAL_NVME_FAMILIES",
    "get_instance",
    "instance_family",
]

# Families whose every size has NVMe SSD instance store volumes (local storage). Source:
# the Amazon EC2 Instance Types guide, "Specifications for Amazon EC2 accelerated computing
# instances", section "Instance store specifications" (SageMaker's ml.<type> runs on the EC2
# type of the same name). Why it matters: the CreateEndpointConfig API reference, KmsKeyId:
# "If you specify a value for KmsKeyId when using any nitro-based instances with local
# storage, the call to CreateEndpointConfig fails." Their volumes are encrypted by a
# hardware module on the instance instead.
INSTANCE_STORE_SOURCE = (
    "Amazon EC2 Instance Types guide, accelerated computing, instance store specifications "
    "(docs.aws.amazon.com/ec2/latest/instancetypes/ac.html#ac_instance-store)"
)
LOCAL_NVME_FAMILIES: frozenset[str] = frozenset(
    {"g6e", "g7e", "p5", "p5e", "p5en", "p6-b200", "p6-b300", "p6e-gb200"}
)


def instance_family(name: str) -> str:
    """'ml.g7e.2xlarge' -> 'g7e'; 'ml.p6-b200.48xlarge' -> 'p6-b200' (JumpStart's keys)."""
    parts = name.split(".")
    return parts[1] if len(parts) == 3 else name


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
    # Local NVMe instance storage (LOCAL_NVME_FAMILIES): no KmsKeyId on the endpoint config,
    # and VolumeSizeInGB is for EBS-only types. Filled from the family in __post_init__.
    local_nvme: bool | None = None
    storage_source: str | None = None
    # Why a live price lookup kept the catalog figure (or found none); None otherwise.
    price_note: str | None = None
    # The region `usd_per_hour` was published for (SageMaker prices differ by region).
    price_region: str | None = None

    def __post_init__(self) -> None:
        if self.local_nvme is None:
            object.__setattr__(
                self, "local_nvme", instance_family(self.name) in LOCAL_NVME_FAMILIES
            )
        if self.storage_source is None:
            object.__setattr__(self, "storage_source", INSTANCE_STORE_SOURCE)

    @property
    def total_gpu_memory_gb(self) -> float:
        return self.gpus * self.gpu_memory_gb

    def to_dict(self) -> dict:
        d = asdict(self)
        d["total_gpu_memory_gb"] = self.total_gpu_memory_gb
        return d


_BLOG = "AWS blog, us-east-1"
_BLOG_REGION = "us-east-1"


def _gpu_type(
    name: str, gpus: int, gpu: str, gpu_gb: int, vcpu: int, ram: int, price: float | None
) -> InstanceType:
    # A catalog price is the AWS blog's, which holds for us-east-1 only.
    priced = price is not None
    return InstanceType(
        name,
        gpus,
        gpu,
        gpu_gb,
        vcpu,
        ram,
        price,
        _BLOG if priced else None,
        price_region=_BLOG_REGION if priced else None,
    )


def _g7e(size: str, gpus: int, vcpu: int, ram: int, price: float | None = None) -> InstanceType:
    return _gpu_type(f"ml.g7e.{size}", gpus, "RTX PRO 6000 Blackwell", 96, vcpu, ram, price)


def _g6e(size: str, gpus: int, vcpu: int, ram: int, price: float | None = None) -> InstanceType:
    return _gpu_type(f"ml.g6e.{size}", gpus, "L40S", 48, vcpu, ram, price)


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


def with_price(inst: InstanceType, usd: float | None, source: str) -> InstanceType:
    return replace(inst, usd_per_hour=usd, price_source=source if usd is not None else None)
