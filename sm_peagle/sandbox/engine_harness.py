"""The moto harness of a `--engine vllm` sandbox: endpoint status is held at `Creating`
(`Updating`) until the real-engine host settles it, and create / update / delete reach the
host (`engine_host.EngineHost`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..testing.moto_sagemaker import SageMakerHarness
from ..testing.moto_timelines import find_endpoint, make_plan

__all__ = ["HOLD_SECONDS", "EngineHarness"]

# Creating/Updating last this long unless the host settles them first (it always does:
# on /ping, on the engine's exit, or on its start-up timeout).
HOLD_SECONDS = 10 * 365 * 86400.0


@dataclass(eq=False)
class EngineHarness(SageMakerHarness):
    """The moto harness with the host's hooks: create/update/delete reach the host."""

    host: Any = None  # engine_host.EngineHost, set once the host exists

    def _on_create(self, backend: Any, endpoint: Any) -> None:
        super()._on_create(backend, endpoint)
        if self.host is not None:
            self.host.submit(
                backend.region_name, endpoint.endpoint_name, endpoint.endpoint_config_name, "create"
            )

    def _on_delete(self, backend: Any, endpoint_name: str) -> None:
        super()._on_delete(backend, endpoint_name)
        if self.host is not None:
            self.host.deleted(backend.region_name, endpoint_name)

    def _update_endpoint(self, backend: Any, endpoint_name: str, endpoint_config_name: str) -> str:
        arn = super()._update_endpoint(backend, endpoint_name, endpoint_config_name)
        if self.host is not None:
            self.host.submit(backend.region_name, endpoint_name, endpoint_config_name, "update")
        return arn

    def settle(self, region: str, name: str, status: str, reason: str | None = None) -> bool:
        """End the held Creating/Updating now: `status` (with `reason`, a failure). False if
        the endpoint no longer exists (never leaves a plan for a future one)."""
        key = (self.account_id, region, name)
        with self._lock:
            endpoint = find_endpoint(key)
            if endpoint is None:
                return False
            self._start(key, endpoint, make_plan((status,), reason, None))
        return True
