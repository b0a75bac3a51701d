"""Where `peagle doctor` asks what is newer: the package index, GitHub, ECR and STS.

Each source is a function that returns its answer or raises `NotChecked(reason)`, a few
words saying why it did not answer usefully (unreachable, an HTTP error, no
credentials); `answer()` turns a finished call into (answer, None) or (None, reason).
Every call has its own short timeout and one attempt: `doctor()` runs them at once, in
threads, so each makes its own boto3 session (sessions are not thread-safe).
"""

from __future__ import annotations

import json
import re
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import Future
from typing import Any
from urllib.parse import urlsplit

from ..errors import SpecError
from ..version import __version__
from ..vllm.versions import VllmVersion

__all__ = [
    "CLASSIC_TAG",
    "DLC_SOURCE",
    "SERVER_TAG",
    "NotChecked",
    "answer",
    "caller",
    "checked_url",
    "ecr_newest",
    "github_newest",
    "pypi_newest",
]

# GitHub's contents API over aws/deep-learning-containers: the classic images' data files
# (`docs/src/data/vllm/<version>-gpu-sagemaker.yml`, one per published version) and the
# server images' changelog (`## vX.Y.Z — date` per release), as
# `scripts/published_images.py` reads them.
DLC_SOURCE = "https://api.github.com/repos/aws/deep-learning-containers/contents"
DLC_DATA_DIR = "docs/src/data/vllm"
DLC_CHANGELOG = "docs/vllm/changelog/index.md"
DLC_REPOSITORY = "vllm"
_MAX_BYTES = 8 << 20  # vLLM's PyPI document is ~1 MB; more is not an index answer

_RELEASE = re.compile(r"\d+\.\d+(?:\.\d+)?")
_CLASSIC_FILE = re.compile(r"(\d+\.\d+\.\d+)-gpu-sagemaker\.yml")
CLASSIC_TAG = re.compile(r"(\d+\.\d+\.\d+)-gpu-py\d+-cu\d+-[a-z0-9.]+-sagemaker")
SERVER_TAG = re.compile(r"server-sagemaker-cuda-v(\d+\.\d+\.\d+)")
_SERVER_HEADING = re.compile(r"^## v(\d+\.\d+\.\d+)\b", re.M)

# -- the answers of the network sources ------------------------------------------------
# Each source is a function returning its answer or raising `NotChecked(reason)`;
# `answer` turns that into (answer, None) or (None, reason).


class NotChecked(Exception):
    """A source did not answer usefully; the message is the reason, in a few words."""


def answer(future: Future[Any]) -> tuple[Any, str | None]:
    try:
        return future.result(), None
    except NotChecked as exc:
        return None, str(exc)
    except Exception as exc:  # a source must never stop the report
        return None, f"{type(exc).__name__}: {exc}"


def checked_url(url: str, setting: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SpecError(
            f"{setting}: {url!r} is not an http(s) URL",
            remedy=f"set {setting} to an index such as https://pypi.org, or unset it",
        )
    return url


def _fetch(url: str, timeout: float, accept: str) -> bytes:
    """GET `url`; NotChecked naming the host and what went wrong."""
    host = urlsplit(url).netloc
    request = urllib.request.Request(
        url, headers={"Accept": accept, "User-Agent": f"peagle/{__version__} (doctor)"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
            return response.read(_MAX_BYTES)
    except urllib.error.HTTPError as exc:
        raise NotChecked(f"{host} answered HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError | socket.timeout):
            raise NotChecked(f"{host} did not answer within {timeout:g} s") from None
        text = getattr(reason, "strerror", None) or str(reason)
        raise NotChecked(f"{host} unreachable: {text}") from None
    except TimeoutError:
        raise NotChecked(f"{host} did not answer within {timeout:g} s") from None
    except OSError as exc:
        raise NotChecked(f"{host} unreachable: {exc.strerror or exc}") from None


def _json(raw: bytes, what: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        raise NotChecked(f"{what} is not JSON") from None


def pypi_newest(index: str, timeout: float) -> str:
    """The newest final vLLM release on the index: the highest `X.Y.Z` among its
    releases with a file that is not yanked (PyPI's `info.version` when it lists none)."""
    doc = _json(_fetch(f"{index}/pypi/vllm/json", timeout, "application/json"), "its answer")
    releases = doc.get("releases") if isinstance(doc, dict) else None
    found = [
        v
        for v, files in (releases or {}).items()
        if _RELEASE.fullmatch(v) and any(not f.get("yanked") for f in files or ())
    ]
    if not found:
        version = ((doc.get("info") or {}) if isinstance(doc, dict) else {}).get("version")
        if not (isinstance(version, str) and _RELEASE.fullmatch(version)):
            raise NotChecked("the index lists no vllm release")
        found = [version]
    return str(max(VllmVersion(v) for v in found))


def github_newest(base: str, timeout: float) -> dict[str, str]:
    """{"classic": newest X.Y.Z with a data file, "server": newest vX.Y.Z in the changelog}."""
    listing = _json(_fetch(f"{base}/{DLC_DATA_DIR}", timeout, "application/json"), "the listing")
    entries = listing if isinstance(listing, list) else []
    names = [str(e.get("name", "")) for e in entries if isinstance(e, dict)]
    classic = [m.group(1) for n in names if (m := _CLASSIC_FILE.fullmatch(n))]
    raw = _fetch(f"{base}/{DLC_CHANGELOG}", timeout, "application/vnd.github.raw")
    server = _SERVER_HEADING.findall(raw.decode("utf-8", "replace"))
    if not classic and not server:
        raise NotChecked("GitHub's answer names no SageMaker vLLM image")
    return _newest(classic, server)


def _newest(classic: list[str], server: list[str]) -> dict[str, str]:
    out = {}
    if classic:
        out["classic"] = str(max(VllmVersion(v) for v in classic))
    if server:
        out["server"] = "v" + str(max(VllmVersion(v) for v in server))
    return out


def _aws(region: str | None, timeout: float, base: Any = None) -> Any:
    from ..aws import AwsContext

    # One attempt per call: retrying a dead network is what makes a doctor slow. A client's
    # own context (`base`: its endpoint URL, credentials) is kept, with these settings.
    quick = {"max_attempts": 0, "connect_timeout": timeout, "read_timeout": timeout}
    if base is not None:
        return base.derive(**quick)
    return AwsContext(region, **quick)


def _aws_reason(exc: Exception) -> str:
    from ..aws import as_peagle_error

    return getattr(as_peagle_error(exc), "message", None) or str(exc)


def ecr_newest(region: str | None, timeout: float, base: Any = None) -> dict[str, str]:
    """The newest tags of AWS's `vllm` repository in this region's DLC registry, from
    ECR DescribeImages (every page, within a few timeouts)."""
    from .. import plugins
    from ..planning.steps.image_choice import DLC_ACCOUNT

    state = plugins.current_target()
    if state is not None:
        raise NotChecked(f"not asked: {state.label} is not AWS's registry")
    aws = _aws(region, timeout, base)
    if aws.session.get_credentials() is None:
        raise NotChecked("no credentials")
    try:
        ecr = aws.client("ecr")
        pages = ecr.get_paginator("describe_images").paginate(
            registryId=DLC_ACCOUNT,
            repositoryName=DLC_REPOSITORY,
            filter={"tagStatus": "TAGGED"},
            PaginationConfig={"PageSize": 1000},
        )
        deadline = time.monotonic() + 3 * timeout
        tags: list[str] = []
        for page in pages:
            tags += [t for d in page.get("imageDetails", []) for t in d.get("imageTags", [])]
            if time.monotonic() > deadline:
                raise NotChecked(f"the listing took longer than {3 * timeout:g} s")
    except NotChecked:
        raise
    except Exception as exc:
        raise NotChecked(_aws_reason(exc)) from None
    classic = [m.group(1) for t in tags if (m := CLASSIC_TAG.fullmatch(t))]
    server = [m.group(1) for t in tags if (m := SERVER_TAG.fullmatch(t))]
    if not classic and not server:
        raise NotChecked(f"no SageMaker vLLM tag in {DLC_ACCOUNT}/{DLC_REPOSITORY}")
    return {**_newest(classic, server), "registry": f"{DLC_ACCOUNT} ({aws.region})"}


def caller(region: str | None, timeout: float, base: Any = None) -> dict[str, Any]:
    """{"account", "arn", "region"} of the credentials; NotChecked("no credentials")."""
    aws = _aws(region, timeout, base)
    if aws.session.get_credentials() is None:
        raise NotChecked("no credentials")
    region = aws.session.region_name
    try:
        # STS answers in any region; without one configured, ask us-east-1 and say so.
        ident = aws.client("sts", region=None if region else "us-east-1").get_caller_identity()
    except Exception as exc:
        from ..aws import as_peagle_error
        from ..errors import AwsUnreachable

        err = as_peagle_error(exc)
        if err is None or isinstance(err, AwsUnreachable):
            raise NotChecked(f"STS: {_aws_reason(exc)}") from None
        return {"error": _aws_reason(exc), "fix": getattr(err, "remedy", None)}
    return {"account": ident.get("Account"), "arn": ident.get("Arn"), "region": region}
