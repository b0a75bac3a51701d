"""The one place boto3 clients are made.

Every client gets an explicit botocore Config: standard retries (throttling is retried
with backoff), connect/read timeouts, and a connection pool sized to the caller's
concurrency (botocore's default of 10 drops connections under heavier streaming load,
which inflates time-to-first-token). Standard AWS settings keep working: profiles,
AWS_REGION / AWS_DEFAULT_REGION, AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>. The
sandbox and the tests only change those settings, never this code path.

boto3 is imported inside functions so that `peagle --help` and `peagle plan` never pay
for it.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from . import settings
from .errors import NoCredentials, SpecError

__all__ = ["AwsContext", "has_credentials_hint", "resolve_region"]

DEFAULT_POOL = 10
# Bounded, explicit retries: botocore's `max_attempts` counts retries after the first call,
# so 3 means at most 4 attempts in all. Throttles and 5xx get 3 backed-off retries; an
# unreachable endpoint (no network, a stopped sandbox, a bad AWS_ENDPOINT_URL) fails after
# 4 connection attempts, and the CLI prints one line (see cli/app.py).
MAX_RETRIES = 3
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 120.0


def resolve_region(explicit: str | None = None) -> str | None:
    return explicit or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")


def has_credentials_hint() -> bool:
    """Cheap guess (no boto3) whether any AWS credentials could be found."""
    env = os.environ
    if (
        env.get("AWS_ACCESS_KEY_ID")
        or env.get("AWS_PROFILE")
        or env.get("AWS_WEB_IDENTITY_TOKEN_FILE")
        or env.get("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI")
        or env.get("AWS_CONTAINER_CREDENTIALS_FULL_URI")
    ):
        return True
    creds = Path(env.get("AWS_SHARED_CREDENTIALS_FILE") or "~/.aws/credentials").expanduser()
    conf = Path(env.get("AWS_CONFIG_FILE") or "~/.aws/config").expanduser()
    return creds.exists() or conf.exists()


class AwsContext:
    """A boto3 session plus cached clients. One per deployment run or SDK handle."""

    def __init__(
        self,
        region: str | None = None,
        profile: str | None = None,
        *,
        max_pool_connections: int = DEFAULT_POOL,
        retry_mode: str = "standard",
        max_attempts: int = MAX_RETRIES,
        connect_timeout: float = CONNECT_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
    ) -> None:
        self._region = region
        self._profile = profile
        self.max_pool_connections = max_pool_connections
        self.retry_mode = retry_mode
        self.max_attempts = max_attempts
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._session: Any = None
        self._clients: dict[tuple[str, str | None], Any] = {}
        self._lock = threading.Lock()

    @property
    def session(self) -> Any:
        if self._session is None:
            import boto3

            self._session = boto3.session.Session(
                profile_name=self._profile, region_name=resolve_region(self._region)
            )
        return self._session

    @property
    def region(self) -> str:
        region = self.session.region_name
        if not region:
            raise NoCredentials(
                "no AWS region configured",
                remedy="pass --region, set AWS_REGION, or use --sandbox",
            )
        from .catalog.regions import region_problem

        problem = region_problem(region)
        if problem:  # e.g. AWS_REGION=mars-1: say so, instead of retrying a DNS name
            raise SpecError(f"region: {problem}", remedy="pass --region or fix AWS_REGION")
        return region

    def config(self, **overrides: Any) -> Any:
        from botocore.config import Config

        settings: dict[str, Any] = {
            # total_max_attempts = max_attempts + 1; stated explicitly, so no env var or
            # profile setting (AWS_MAX_ATTEMPTS) can make a command retry for minutes.
            "retries": {
                "mode": self.retry_mode,
                "total_max_attempts": self.max_attempts + 1,
            },
            "connect_timeout": self.connect_timeout,
            "read_timeout": self.read_timeout,
            "max_pool_connections": self.max_pool_connections,
            "user_agent_extra": "peagle",
        }
        settings.update(overrides)
        return Config(**settings)

    def client(self, service: str, region: str | None = None, **config: Any) -> Any:
        """A cached client. `region` overrides (the Price List API lives in us-east-1)."""
        key = (service, region)
        with self._lock:
            if key not in self._clients or config:
                client = self.session.client(
                    service, region_name=region or self.region, config=self.config(**config)
                )
                if config:
                    return client
                self._clients[key] = client
            return self._clients[key]

    def check_credentials(self) -> None:
        """Fail fast, in one line, when no credentials can be found at all."""
        if self.session.get_credentials() is None:
            raise NoCredentials(
                "no AWS credentials found",
                remedy="configure AWS (aws configure / AWS_PROFILE) or run with --sandbox",
            )

    def account_id(self) -> str:
        return self.client("sts").get_caller_identity()["Account"]


_UNREACHABLE = (
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ConnectionClosedError",
    "ReadTimeoutError",
    "ProxyConnectionError",
    "SSLError",
    "HTTPClientError",
)


def as_peagle_error(exc: BaseException) -> Exception | None:
    """A botocore exception as the typed peagle error the CLI prints in one line; None if
    `exc` is not botocore's. botocore is only consulted if it is already imported."""
    import sys

    if "botocore.exceptions" not in sys.modules:
        return None
    from botocore import exceptions as bx

    from .errors import AwsError, AwsUnreachable

    if isinstance(exc, bx.ClientError):
        err = exc.response.get("Error", {})
        code, message = err.get("Code", "Error"), err.get("Message", "")
        remedy = None
        if code in ("ExpiredToken", "ExpiredTokenException", "UnrecognizedClientException"):
            remedy = "refresh your AWS credentials (aws sso login / aws configure)"
        elif "AccessDenied" in code:
            remedy = "your AWS identity lacks this permission; see `peagle iam-policy`"
        return AwsError(f"{exc.operation_name} failed: {code}: {message}", remedy=remedy)
    if isinstance(exc, bx.NoCredentialsError | bx.PartialCredentialsError):
        return NoCredentials(
            f"AWS credentials: {exc}",
            remedy="configure AWS (aws configure / AWS_PROFILE) or run with --sandbox",
        )
    if isinstance(exc, bx.NoRegionError):
        return NoCredentials(
            "no AWS region configured", remedy="pass --region, set AWS_REGION, or use --sandbox"
        )
    if type(exc).__name__ in _UNREACHABLE or isinstance(exc, bx.HTTPClientError):
        where = getattr(exc, "kwargs", {}).get("endpoint_url") or "AWS"
        if settings.sandbox_url():
            remedy = "the sandbox did not answer: `peagle sandbox status`, or restart it"
        elif os.environ.get("AWS_ENDPOINT_URL"):
            remedy = "check AWS_ENDPOINT_URL and that its server is running"
        else:
            remedy = "check the network, a proxy, or the region; or run with --sandbox"
        return AwsUnreachable(
            f"cannot reach {where} ({type(exc).__name__}; gave up after retrying)",
            remedy=remedy,
        )
    if isinstance(exc, bx.BotoCoreError):
        return AwsError(f"AWS client error: {exc}")
    return None
