"""`sm_peagle.doctor()` (`DoctorOps.doctor`, a method of `sm_peagle.Client`): what this
peagle knows, next to what is newer.

Four checks, each one row of the result, and the rows installed plugins add
(`Plugin.doctor_checks()`, shown after `dlc_image`):

- `vllm`: the newest vLLM version in peagle's facts (`vllm/data/vllm_source_facts.json`)
  next to the newest `vllm` release on the package index (PEAGLE_PYPI_URL's JSON API);
- `dlc_image`: the newest SageMaker vLLM images peagle's list knows (classic and server
  families, `catalog/data/published_images.json`) next to the newest published, read from
  ECR `DescribeImages` with the user's credentials or, failing that, from the DLC
  repository's data files on GitHub; the row says which source answered;
- `botocore`: its version, and whether its SageMaker model has every request field and
  enum value peagle sends (`SAGEMAKER_FIELDS`, `sagemaker_values()`);
- `credentials`: the account (STS GetCallerIdentity) and region, labelled with what this
  process talks to (AWS or a plugin's target).

A source that cannot be reached makes its row "not checked", with the reason: doctor is
for a laptop on a train too. The network checks run at once, each with a short timeout.
The report's exit code: 1 when a check failed, else 3 when something newer exists, else 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import plugins, settings
from ..catalog import images
from ..errors import Param, SpecError, text
from ..vllm.versions import NEWEST_CHECKED, VllmVersion
from .renamed import renamed_keywords
from .session import Session

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = [
    "CHECKS",
    "DEFAULT_TIMEOUT",
    "EXIT_CURRENT",
    "EXIT_FAILED",
    "EXIT_NEWER",
    "FAILED",
    "NEWER",
    "NOT_CHECKED",
    "OK",
    "SAGEMAKER_FIELDS",
    "DoctorCheck",
    "DoctorOps",
    "DoctorReport",
    "known_images",
    "sagemaker_values",
]

OK, NEWER, NOT_CHECKED, FAILED = "ok", "newer", "not checked", "failed"
EXIT_CURRENT, EXIT_FAILED, EXIT_NEWER = 0, 1, 3
# peagle's rows, in the order they are shown (plugins' rows come after dlc_image).
CHECKS = ("vllm", "dlc_image", "botocore", "credentials")
TITLES = {
    "vllm": "vLLM",
    "dlc_image": "DLC image",
    "botocore": "botocore",
    "credentials": "credentials",
}
# Seconds each network call may take: a doctor that hangs on a dead network helps nobody.
DEFAULT_TIMEOUT = 3.0
# Every SageMaker request field peagle sends, per operation (leaves; their parents are
# implied), read from the requests it builds: planning/steps/requests.py (CreateModel,
# CreateEndpointConfig incl. InstancePools, CreateEndpoint), planning/components/hosting.py
# (the components' config, ManagedInstanceScaling with ScaleInPolicy, RoutingConfig, and
# CreateInferenceComponent), lifecycle/update.py (UpdateEndpoint), lifecycle/components.py
# (UpdateInferenceComponentRuntimeConfig) and lifecycle/component_update.py
# (UpdateInferenceComponent). tests/unit/test_doctor.py holds this list to the plans'
# requests. `[]` is a list's member.
SAGEMAKER_FIELDS: dict[str, tuple[str, ...]] = {
    "CreateModel": (
        "ModelName",
        "ExecutionRoleArn",
        "EnableNetworkIsolation",
        "Tags[].Key",
        "Tags[].Value",
        "PrimaryContainer.Image",
        "PrimaryContainer.Environment",
        "PrimaryContainer.ModelDataSource.S3DataSource.S3Uri",
        "PrimaryContainer.ModelDataSource.S3DataSource.S3DataType",
        "PrimaryContainer.ModelDataSource.S3DataSource.CompressionType",
        "PrimaryContainer.AdditionalModelDataSources[].ChannelName",
        "PrimaryContainer.AdditionalModelDataSources[].S3DataSource.S3Uri",
        "PrimaryContainer.AdditionalModelDataSources[].S3DataSource.S3DataType",
        "PrimaryContainer.AdditionalModelDataSources[].S3DataSource.CompressionType",
    ),
    "CreateEndpointConfig": (
        "EndpointConfigName",
        "ExecutionRoleArn",
        "Tags[].Key",
        "Tags[].Value",
        "ProductionVariants[].VariantName",
        "ProductionVariants[].ModelName",
        "ProductionVariants[].InstanceType",
        "ProductionVariants[].InitialInstanceCount",
        "ProductionVariants[].InferenceAmiVersion",
        "ProductionVariants[].ContainerStartupHealthCheckTimeoutInSeconds",
        "ProductionVariants[].ModelDataDownloadTimeoutInSeconds",
        "ProductionVariants[].RoutingConfig.RoutingStrategy",
        "ProductionVariants[].InstancePools[].InstanceType",
        "ProductionVariants[].InstancePools[].ModelNameOverride",
        "ProductionVariants[].InstancePools[].Priority",
        "ProductionVariants[].ManagedInstanceScaling.Status",
        "ProductionVariants[].ManagedInstanceScaling.MinInstanceCount",
        "ProductionVariants[].ManagedInstanceScaling.MaxInstanceCount",
        "ProductionVariants[].ManagedInstanceScaling.ScaleInPolicy.Strategy",
        "ProductionVariants[].ManagedInstanceScaling.ScaleInPolicy.MaximumStepSize",
        "ProductionVariants[].ManagedInstanceScaling.ScaleInPolicy.CooldownInMinutes",
    ),
    "CreateEndpoint": ("EndpointName", "EndpointConfigName", "Tags[].Key", "Tags[].Value"),
    "CreateInferenceComponent": (
        "InferenceComponentName",
        "EndpointName",
        "VariantName",
        "Tags[].Key",
        "Tags[].Value",
        "Specification.ModelName",
        "Specification.StartupParameters.ModelDataDownloadTimeoutInSeconds",
        "Specification.StartupParameters.ContainerStartupHealthCheckTimeoutInSeconds",
        "Specification.ComputeResourceRequirements.NumberOfAcceleratorDevicesRequired",
        "Specification.ComputeResourceRequirements.MinMemoryRequiredInMb",
        "RuntimeConfig.CopyCount",
    ),
    "UpdateEndpoint": ("EndpointName", "EndpointConfigName"),
    "UpdateInferenceComponent": ("InferenceComponentName", "Specification.ModelName"),
    "UpdateInferenceComponentRuntimeConfig": (
        "InferenceComponentName",
        "DesiredRuntimeConfig.CopyCount",
    ),
}


def sagemaker_values() -> dict[str, frozenset[str]]:
    """ "Operation.path" -> the enum values peagle sends there: the catalog's instance
    types, the CUDA 13 host AMI, the scale-in strategies and routing strategies."""
    from ..catalog.instances import INSTANCES
    from ..planning.components.specs import SCALE_IN_STRATEGIES
    from ..planning.spec.model import EndpointSpec
    from ..vllm.versions import CUDA13_AMI

    variant = "CreateEndpointConfig.ProductionVariants[]"
    routing = EndpointSpec.model_fields["routing_strategy"].annotation
    return {
        f"{variant}.InstanceType": frozenset(INSTANCES),
        f"{variant}.InferenceAmiVersion": frozenset({CUDA13_AMI}),
        f"{variant}.ManagedInstanceScaling.ScaleInPolicy.Strategy": frozenset(
            SCALE_IN_STRATEGIES.values()
        ),
        f"{variant}.RoutingConfig.RoutingStrategy": frozenset(_literal_values(routing)),
    }


def _literal_values(annotation: Any) -> set[str]:
    """The strings of a `Literal[...] | None` annotation."""
    from typing import get_args

    return {a for arg in get_args(annotation) for a in get_args(arg) if isinstance(a, str)}


@dataclass(frozen=True)
class DoctorCheck:
    """One row of `doctor`; `to_dict()` is its document in `peagle doctor --json`.

    Attributes:
        name: The check's name (`vllm`, `image`, `botocore`, ...).
        status: ok, newer, not checked or failed.
        known: What this peagle has, or None.
        found: What the source answered, or None.
        source: Who answered, or None.
        detail: One line saying what it means, or why it was not checked.
        extra: The row's structured data (merged into its document).
    """

    name: str
    status: str
    known: str | None
    found: str | None
    source: str | None
    detail: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def title(self) -> str:
        """The check's name as the report shows it."""
        return TITLES.get(self.name, self.name.replace("_", " "))

    def to_dict(self) -> dict[str, Any]:
        """The check's document in `peagle doctor --json`."""
        return {
            "status": self.status,
            "known": self.known,
            "found": self.found,
            "source": self.source,
            "detail": self.detail,
            **self.extra,
        }


@dataclass(frozen=True)
class DoctorReport:
    """What `doctor` found; `to_dict()` is the `peagle doctor --json` document.

    Attributes:
        checks: Every check, in CHECKS order with the plugins' rows after `dlc_image`
            (`check(name)` finds one).
        label: What this process talks to (AWS, or a plugin target's label).
    """

    checks: tuple[DoctorCheck, ...]
    label: str

    def check(self, name: str) -> DoctorCheck:
        """The check called `name` (`vllm`, `image`, ...; KeyError if there is none)."""
        for check in self.checks:
            if check.name == name:
                return check
        raise KeyError(name)

    def __getitem__(self, name: str) -> DoctorCheck:
        """Deprecated (a FutureWarning): `report.check(name)`."""
        import warnings

        warnings.warn(
            f"DoctorReport[{name!r}] is deprecated: use .check({name!r})",
            FutureWarning,
            stacklevel=2,
        )
        return self.check(name)

    @property
    def newer(self) -> list[DoctorCheck]:
        """The checks that found something newer than this peagle knows."""
        return [c for c in self.checks if c.status == NEWER]

    @property
    def failed(self) -> list[DoctorCheck]:
        """The checks that could not complete."""
        return [c for c in self.checks if c.status == FAILED]

    @property
    def exit_code(self) -> int:
        """1 when a check failed, else 3 when something newer exists, else 0."""
        if self.failed:
            return EXIT_FAILED
        return EXIT_NEWER if self.newer else EXIT_CURRENT

    @property
    def summary(self) -> str:
        """One line: what failed, else what is newer, else that nothing newer was found (and what
        was not checked)."""
        if self.failed:
            return "failed: " + "; ".join(f"{c.title}: {c.detail}" for c in self.failed)
        if self.newer:
            return "newer: " + "; ".join(f"{c.title} {c.found}" for c in self.newer)
        unasked = [c.title for c in self.checks if c.status == NOT_CHECKED]
        return "current: nothing newer found" + (
            f"; not checked: {', '.join(unasked)}" if unasked else ""
        )

    def to_dict(self) -> dict[str, Any]:
        """The document `peagle doctor --json` prints."""
        return {
            "label": self.label,
            "exit_code": self.exit_code,
            "summary": self.summary,
            "checks": {c.name: c.to_dict() for c in self.checks},
        }


class DoctorOps(Session):
    """`doctor`: what this peagle knows, next to what is newer."""

    @renamed_keywords(timeout="source_timeout")
    def doctor(
        self, *, offline: bool = False, source_timeout: float | str = DEFAULT_TIMEOUT
    ) -> DoctorReport:
        """What this peagle knows next to what is newer: the checks of `CHECKS` and the
        rows installed plugins add.
        Network sources (the package index, ECR, GitHub, STS) are asked at once, ECR and
        STS in the client's region (and on its endpoint URL or context); one that does not
        answer leaves its row "not checked" with the reason. Never raises for what a source
        answers: that is in the rows.

        Args:
            offline: ask no network source.
            source_timeout: how long each request to a source may take (connect, then
                read; ECR's paged listing gets three): seconds, or a duration such as
                "5s". `timeout=` is its old name (a FutureWarning; removed in the next
                release): every other `timeout` bounds a whole wait.

        Returns:
            Each check's row, the verdict and its exit code.

        Raises:
            SpecError: a source_timeout that is not positive, or a PEAGLE_PYPI_URL that is not an
                http(s) URL (nothing asked).
        """
        timeout = source_timeout
        if isinstance(timeout, str):
            from ..lifecycle.waiter import parse_duration

            timeout = parse_duration(timeout, "source_timeout")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
            raise SpecError(
                text(
                    "{source_timeout}: must be a positive number of seconds (got {t!r})", t=timeout
                ),
                remedy=text("{t}", t=Param("source_timeout", _SHOWN_TIMEOUT)),
                field="source_timeout",
                value=timeout,
                rule="> 0 seconds",
            )
        region = self.region
        base = self._aws
        if base is None and (self.endpoint_url or self.profile):
            from ..aws import AwsContext

            base = AwsContext(region, self.profile, endpoint_url=self.endpoint_url)
        # Network clients (urllib, ssl) and threads load only when doctor runs: the Client
        # every command makes imports this module.
        from concurrent.futures import ThreadPoolExecutor

        from . import doctor_sources as sources

        index = sources.checked_url(settings.pypi_url(), "PEAGLE_PYPI_URL")
        label = plugins.source_label()
        pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="peagle-doctor")
        asked: dict[str, Future[Any]] = {}
        if not offline:
            # One boto3 session per thread: sessions are not thread-safe.
            asked = {
                "pypi": pool.submit(sources.pypi_newest, index, timeout),
                "github": pool.submit(sources.github_newest, sources.DLC_SOURCE, timeout),
                "ecr": pool.submit(sources.ecr_newest, region, timeout, base),
                "sts": pool.submit(sources.caller, region, timeout, base),
            }
        pool.shutdown(wait=False)
        local = (*_plugin_checks(), _botocore_check())  # while the network answers
        answers = {k: sources.answer(asked[k]) if k in asked else (None, "offline: not asked")
                   for k in ("pypi", "github", "ecr", "sts")}  # fmt: skip
        checks = (
            _vllm_check(answers["pypi"], index),
            _dlc_check(answers["ecr"], answers["github"]),
            *local,
            _credentials_check(answers["sts"], label),
        )
        return DoctorReport(checks, label)


# The default timeout as a suggested value: 3, not 3.0.
_SHOWN_TIMEOUT = int(DEFAULT_TIMEOUT) if float(DEFAULT_TIMEOUT).is_integer() else DEFAULT_TIMEOUT


# -- the rows ------------------------------------------------------------------------------


def _vllm_check(answer: tuple[str | None, str | None], index: str) -> DoctorCheck:
    newest, why = answer
    known = str(NEWEST_CHECKED)
    source = f"{index}/pypi/vllm/json"
    if newest is None:
        return DoctorCheck("vllm", NOT_CHECKED, known, None, source, str(why))
    if VllmVersion(newest) > NEWEST_CHECKED:
        detail = (
            f"vLLM {newest} is published; peagle's facts stop at {known}, so a plan for "
            f"{newest} is checked as {known} (not checked)"
        )
        return DoctorCheck("vllm", NEWER, known, newest, source, detail)
    return DoctorCheck("vllm", OK, known, newest, source, "the facts cover the newest release")


def known_images() -> dict[str, str]:
    """{"classic": newest pinned classic version, "server": newest pinned server vX.Y.Z}
    in peagle's list of published images."""
    from . import doctor_sources as sources

    classic = images.classic_versions()
    server = [
        VllmVersion(m.group(1))
        for r in images.rows()
        if r.family == "server" and (m := sources.SERVER_TAG.fullmatch(r.tag))
    ]
    out = {}
    if classic:
        out["classic"] = str(classic[-1])
    if server:
        out["server"] = f"v{max(server)}"
    return out


def _describe(versions: dict[str, str]) -> str:
    return ", ".join(f"{k} {versions[k]}" for k in ("classic", "server") if k in versions)


def _dlc_check(
    ecr: tuple[dict[str, str] | None, str | None], github: tuple[dict[str, str] | None, str | None]
) -> DoctorCheck:
    from . import doctor_sources as sources

    known = known_images()
    # `tried`: why each source did not answer (None: it answered).
    extra: dict[str, Any] = {"known_tags": known, "tried": {"ecr": ecr[1], "github": github[1]}}
    # ECR is what the registry holds for this region; GitHub's files are what AWS documents.
    if ecr[0] is not None:
        found, source = ecr[0], f"ECR DescribeImages {ecr[0].get('registry', '')}".strip()
    elif github[0] is not None:
        found, source = github[0], f"GitHub {sources.DLC_SOURCE}"
    else:
        detail = f"ECR: {ecr[1]}; GitHub: {github[1]}"
        return DoctorCheck("dlc_image", NOT_CHECKED, _describe(known), None, None, detail, extra)
    extra["found_tags"] = {k: v for k, v in found.items() if k in ("classic", "server")}
    newer = {
        k: v
        for k, v in found.items()
        if k in known and k in ("classic", "server") and VllmVersion(v) > VllmVersion(known[k])
    }
    shown = _describe(found)
    if newer:
        detail = text(
            "published since peagle's image list: {d} (plan takes them only as {image}, "
            "with a warning: their entrypoint rules are not known)",
            d=_describe(newer),
        )
        return DoctorCheck("dlc_image", NEWER, _describe(known), shown, source, detail, extra)
    return DoctorCheck(
        "dlc_image", OK, _describe(known), shown, source, "peagle's list has the newest", extra
    )


def _plugin_checks() -> tuple[DoctorCheck, ...]:
    """The rows installed plugins add (`Plugin.doctor_checks()`), as peagle's own rows: a
    plugin's `extra` may say what it has (`known`) and what it found (`found`). A plugin
    whose check raises gets a "not checked" row saying so: a broken plugin must not break
    doctor."""
    from .. import plugins

    rows: list[DoctorCheck] = []
    for plugin in plugins.installed():
        try:
            found = tuple(plugin.doctor_checks())
        except Exception as exc:  # the plugin's fault, shown as its row
            detail = f"the plugin's check failed: {type(exc).__name__}: {exc}"
            rows.append(DoctorCheck(plugin.name, NOT_CHECKED, None, None, None, detail))
            continue
        for check in found:
            extra = dict(check.extra)
            known, seen = extra.get("known"), extra.get("found")
            rows.append(
                DoctorCheck(
                    check.name,
                    check.status,
                    None if known is None else str(known),
                    None if seen is None else str(seen),
                    None,
                    check.detail,
                    extra,
                )
            )
    return tuple(rows)


def _botocore_check() -> DoctorCheck:
    from importlib import metadata

    try:
        version = metadata.version("botocore")
    except metadata.PackageNotFoundError:
        return DoctorCheck(
            "botocore", FAILED, None, None, None, "botocore is not installed (pip install boto3)"
        )
    try:
        missing, fields, values = _missing_in_model()
    except Exception as exc:  # an old model without an operation peagle sends
        missing, fields, values = [f"its SageMaker model: {type(exc).__name__}: {exc}"], 0, 0
    extra = {"fields_checked": fields, "values_checked": values, "missing": missing}
    if missing:
        shown = "; ".join(missing[:4]) + (
            f" and {len(missing) - 4} more" if len(missing) > 4 else ""
        )
        detail = f"botocore {version} lacks {shown} (fix: pip install -U boto3 botocore)"
        return DoctorCheck("botocore", FAILED, version, None, None, detail, extra)
    detail = f"its SageMaker model has the {fields} fields and {values} values peagle sends"
    return DoctorCheck("botocore", OK, version, None, None, detail, extra)


def _missing_in_model() -> tuple[list[str], int, int]:
    """(what botocore's SageMaker model lacks, fields checked, enum values checked)."""
    from ..planning.steps.aws_shapes import service_model

    model = service_model("sagemaker")
    shapes, inputs = model["shapes"], model["operations"]
    missing: list[str] = []
    fields = 0
    for operation, paths in SAGEMAKER_FIELDS.items():
        if operation not in inputs:
            missing.append(f"operation {operation}")
            continue
        for path in paths:
            fields += 1
            if _resolve(shapes, inputs[operation], path) is None:
                missing.append(f"{operation}.{path}")
    values = 0
    for where, wanted in sagemaker_values().items():
        operation, _, path = where.partition(".")
        shape = _resolve(shapes, inputs.get(operation, ""), path)
        values += len(wanted)
        if shape is None:
            continue  # already named as a missing field
        allowed = set(shape.get("enum", ()))
        missing += [f"{where} value {v}" for v in sorted(wanted - allowed)] if allowed else []
    return missing, fields, values


def _resolve(shapes: dict[str, Any], shape_name: str, path: str) -> dict[str, Any] | None:
    """The shape at `path` ("A[].B.C") under `shape_name`, or None where a member is missing."""
    shape = shapes.get(shape_name)
    for part in path.split("."):
        if shape is None:
            return None
        member, is_list = part.removesuffix("[]"), part.endswith("[]")
        target = shape.get("members", {}).get(member)
        if target is None:
            return None
        shape = shapes.get(target["shape"])
        if is_list and shape is not None:
            shape = shapes.get(shape.get("member", {}).get("shape", ""))
    return shape


def _credentials_check(answer: tuple[dict[str, Any] | None, str | None], label: str) -> DoctorCheck:
    ident, why = answer
    if ident is None:
        return DoctorCheck("credentials", NOT_CHECKED, None, None, label, why or "not checked")
    if "error" in ident:
        fix = f" (fix: {ident['fix']})" if ident.get("fix") else ""
        return DoctorCheck("credentials", FAILED, None, None, label, ident["error"] + fix)
    region = ident.get("region")
    where = f"account {ident['account']}, region {region or 'none configured'}"
    detail = f"STS GetCallerIdentity answered by {label}"
    if not region:
        detail = text("{d}; set AWS_REGION or pass {region} to deploy", d=detail)
    extra = {"account": ident["account"], "arn": ident.get("arn"), "region": region}
    return DoctorCheck("credentials", OK, None, where, label, detail, extra)
