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

from .errors import NoCredentials

__all__ = ["AwsContext", "has_credentials_hint", "resolve_region"]

DEFAULT_POOL = 10


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
        max_attempts: int = 8,
        connect_timeout: float = 10,
        read_timeout: float = 120,
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
        return region

    def config(self, **overrides: Any) -> Any:
        from botocore.config import Config

        settings: dict[str, Any] = {
            "retries": {"mode": self.retry_mode, "max_attempts": self.max_attempts},
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
