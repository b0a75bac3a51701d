"""The moto harness of a `--engine vllm` sandbox: endpoint and inference-component status
is held at `Creating` (`Updating`, `Deleting`) until the real-engine host settles it, and
create / update / delete of both reach the host (`engine_host.EngineHost`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from moto.sagemaker.models import SageMakerModelBackend, sagemaker_backends

from peagle_sandbox.testing.moto_components import advance_component, inference_components_of
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness
from peagle_sandbox.testing.moto_timelines import find_endpoint, make_plan

__all__ = ["HOLD_SECONDS", "EngineHarness"]

# Creating/Updating last this long unless the host settles them first (it always does:
# on /ping, on the engine's exit, or on its start-up timeout).
HOLD_SECONDS = 10 * 365 * 86400.0


@dataclass(eq=False)
class EngineHarness(SageMakerHarness):
    """The moto harness with the host's hooks: create/update/delete reach the host."""

    host: Any = None  # engine_host.EngineHost, set once the host exists

    def install(self) -> EngineHarness:
        """Patch moto as the plain harness does, then wrap its inference-component
        operations so each reaches the host after it ran."""
        fresh = not self.installed
        super().install()
        if fresh:
            for name, replacement in _component_hooks(self).items():
                self._originals.append(
                    (SageMakerModelBackend, name, SageMakerModelBackend.__dict__[name])
                )
                setattr(SageMakerModelBackend, name, replacement)
        return self

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

    def _rollout_held(self) -> bool:
        # A guardrail deployment's new fleet provisions until the host's new engine answers
        # /ping (`fleet_ready`), or fails (`settle` with a reason: a rollback).
        return self.host is not None

    def _update_endpoint(
        self,
        backend: Any,
        endpoint_name: str,
        endpoint_config_name: str,
        deployment: dict[str, Any] | None = None,
    ) -> str:
        arn = super()._update_endpoint(backend, endpoint_name, endpoint_config_name, deployment)
        if self.host is not None:
            self.host.submit(backend.region_name, endpoint_name, endpoint_config_name, "update")
        return arn

    def settle(self, region: str, name: str, status: str, reason: str | None = None) -> bool:
        """End the held Creating/Updating now: `status` (with `reason`, a failure). False if
        the endpoint no longer exists (never leaves a plan for a future one)."""
        key = (self.account_id, region, name)
        if key in self._rollouts:
            # A guardrail deployment: a failed new fleet rolls back with its reason (as
            # SageMaker does); an InService without one is the new fleet being ready.
            if reason is not None or status == "Failed":
                return self._fail_rollout(key, reason)
            return self.fleet_ready(region, name)
        with self._lock:
            endpoint = find_endpoint(key)
            if endpoint is None:
                return False
            if endpoint.endpoint_status != status:  # the change happens now, on the clock
                endpoint.last_modified_time = self.clock.naive_utcnow()
            self._start(key, endpoint, make_plan((status,), reason, None))
        return True

    def settle_component(
        self, region: str, name: str, status: str, reason: str | None = None
    ) -> bool:
        """End a component's held Creating/Updating/Deleting now: `InService` (its copies
        become current), `Failed` with `reason`, or `Deleting` (it is gone). A component
        being deleted only settles as gone. False if it no longer exists."""
        backend = sagemaker_backends[self.account_id][region]
        with self._lock:
            ic = inference_components_of(backend).get(name)
            if ic is None or (ic.status == "Deleting" and status != "Deleting"):
                return False
            ic.timeline = ((status,), reason, 1.0, self.clock.now())  # due now: one status
            advance_component(self, backend, ic, consume=False)
        return True


def _component_hooks(harness: EngineHarness) -> dict[str, Any]:
    """Wrappers of the harness's component operations (already patched on the backend
    class) that tell the host once the operation has run."""
    cls = SageMakerModelBackend
    create, delete = cls.create_inference_component, cls.delete_inference_component
    update, update_runtime = (
        cls.update_inference_component,
        cls.update_inference_component_runtime_config,
    )

    def create_hook(backend: Any, name: str, *args: Any, **kwargs: Any) -> str:
        arn = create(backend, name, *args, **kwargs)
        if harness.host is not None:
            harness.host.component_created(backend.region_name, name)
        return arn

    def delete_hook(backend: Any, name: str) -> None:
        delete(backend, name)
        if harness.host is not None:
            harness.host.component_deleted(backend.region_name, name)

    def update_hook(
        backend: Any, name: str, specification: Any, runtime_config: Any, *deployment: Any
    ) -> str:
        arn = update(backend, name, specification, runtime_config, *deployment)
        if harness.host is not None and specification:
            harness.host.component_replaced(backend.region_name, name)
        elif harness.host is not None:
            harness.host.component_copies(backend.region_name, name)
        return arn

    def update_runtime_hook(backend: Any, name: str, copies: int | None) -> str:
        arn = update_runtime(backend, name, copies)
        if harness.host is not None:
            harness.host.component_copies(backend.region_name, name)
        return arn

    return {
        "create_inference_component": create_hook,
        "delete_inference_component": delete_hook,
        "update_inference_component": update_hook,
        "update_inference_component_runtime_config": update_runtime_hook,
    }
