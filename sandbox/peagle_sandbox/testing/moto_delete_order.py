"""A stricter delete mode for the moto harness: deletes that take time, and an order
that is enforced.

moto deletes an endpoint, an endpoint config or a model the instant it is asked, in any
order, so a deployer that deletes a config before its endpoint, or that stops waiting
before the endpoint is really gone, passes every test. With `strict_deletes(harness)`:

- DeleteEndpoint puts the endpoint in ``Deleting``; it stays there, listed and
  described, for ``deleting_describes`` DescribeEndpoint calls, and is gone on the next
  one (as SageMaker reports ``Deleting`` until the instances are released). Its status
  schedule and any pending update stop there: a deleted endpoint never becomes InService.
- DeleteEndpointConfig is refused while an endpoint (in any status, ``Deleting``
  included) serves the config or has it as its pending update
  (``PendingDeploymentSummary``); DeleteModel is refused while such a config names the
  model (a variant's ``ModelName`` or an instance pool's ``ModelNameOverride``). SageMaker
  documents that an EndpointConfig in use "must not" be deleted (API_DeleteEndpointConfig:
  the endpoint loses visibility of its instance type and keeps costing money) but does not
  refuse; this mode refuses, with a ``ValidationException``, so the mistake fails a test
  instead of passing silently.
- ``log`` records every accepted delete request in order, as (kind, name); ``refused``
  the refused ones, as (kind, name, message).

Use it inside an installed harness (its patches wrap the harness's own)::

    with strict_deletes(sagemaker_harness, deleting_describes=2) as strict:
        ...
        assert strict.log == [("endpoint", e), ("endpoint_config", c), ("model", m)]
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from moto.sagemaker.exceptions import ValidationError
from moto.sagemaker.models import FakeEndpointConfig, SageMakerModelBackend
from moto.sagemaker.utils import arn_formatter

from peagle_sandbox.testing.moto_components import refuse_endpoint_delete
from peagle_sandbox.testing.moto_sagemaker import SageMakerHarness
from peagle_sandbox.testing.moto_timelines import Key, key_of

__all__ = ["StrictDeletes", "strict_deletes"]

_PATCHED = ("delete_endpoint", "describe_endpoint", "delete_endpoint_config", "delete_model")


@dataclass(eq=False)
class StrictDeletes:
    harness: SageMakerHarness
    deleting_describes: int = 2
    log: list[tuple[str, str]] = field(default_factory=list)
    refused: list[tuple[str, str, str]] = field(default_factory=list)
    _deleting: dict[Key, int] = field(default_factory=dict, repr=False)
    _originals: dict[str, Any] = field(default_factory=dict, repr=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    # ------------------------------------------------------------------ who uses what
    @staticmethod
    def config_users(backend: SageMakerModelBackend, config: str) -> list[str]:
        """Endpoints serving `config`, or updating to it."""
        return sorted(name for name, ep in backend.endpoints.items() if config in _configs_of(ep))

    @staticmethod
    def model_users(backend: SageMakerModelBackend, model: str) -> list[str]:
        """Endpoints whose current or pending config names `model`."""
        users = []
        for name, ep in backend.endpoints.items():
            variants = list(ep.production_variants or [])
            for cfg in _configs_of(ep):
                found = backend.endpoint_configs.get(cfg)
                variants += found.production_variants if found else []
            if model in {m for v in variants for m in _models_of_variant(v)}:
                users.append(name)
        return sorted(users)

    # ------------------------------------------------------------------ patched calls
    def _delete_endpoint(self, backend: SageMakerModelBackend, name: str) -> None:
        endpoint = backend.endpoints.get(name)
        if endpoint is None:
            self._originals["delete_endpoint"](backend, name)  # moto's "Could not find"
            return
        refuse_endpoint_delete(self.harness, backend, name)  # as the harness's own delete
        key = key_of(backend, name)
        with self._lock, self.harness._lock:
            self.log.append(("endpoint", name))
            if key in self._deleting:
                return  # already on its way out
            # Nothing scheduled may move it again (e.g. an update settling to InService).
            self.harness._timelines.pop(key, None)
            self.harness._pending_updates.pop(key, None)
            self.harness._rollouts.pop(key, None)  # nor a guardrail deployment settle it
            endpoint.endpoint_status = "Deleting"
            self._deleting[key] = self.deleting_describes
        if self.deleting_describes <= 0:
            self._finish(backend, name)

    def _describe_endpoint(self, backend: SageMakerModelBackend, name: str) -> dict[str, Any]:
        key = key_of(backend, name)
        with self._lock:
            left = self._deleting.get(key)
            if left is not None:
                if left <= 0:
                    self._finish(backend, name)
                else:
                    self._deleting[key] = left - 1
        return self._originals["describe_endpoint"](backend, name)  # type: ignore[no-any-return]

    def _finish(self, backend: SageMakerModelBackend, name: str) -> None:
        with self._lock:
            self._deleting.pop(key_of(backend, name), None)
            self._originals["delete_endpoint"](backend, name)

    def _delete_endpoint_config(self, backend: SageMakerModelBackend, name: str) -> None:
        users = self.config_users(backend, name)
        if users:
            arn = FakeEndpointConfig.arn_formatter(name, backend.account_id, backend.region_name)
            self._refuse("endpoint_config", name, f"endpoint configuration '{arn}'", users, backend)
        self._originals["delete_endpoint_config"](backend, name)
        self.log.append(("endpoint_config", name))

    def _delete_model(self, backend: SageMakerModelBackend, name: str) -> None:
        users = self.model_users(backend, name)
        if users:
            arn = arn_formatter("model", name, backend.account_id, backend.region_name)
            self._refuse("model", name, f"model '{arn}'", users, backend)
        self._originals["delete_model"](backend, name)
        self.log.append(("model", name))

    def _refuse(
        self,
        kind: str,
        name: str,
        what: str,
        users: list[str],
        backend: SageMakerModelBackend,
    ) -> None:
        states = ", ".join(f"{u} ({backend.endpoints[u].endpoint_status})" for u in users)
        message = f"Cannot delete {what}: it is used by endpoint {states}."
        self.refused.append((kind, name, message))
        raise ValidationError(message=message)

    # ------------------------------------------------------------------ install
    def install(self) -> StrictDeletes:
        if not self.harness.installed:
            raise RuntimeError("install the SageMakerHarness first: strict deletes wrap it")
        if self._originals:
            return self
        mine = {
            "delete_endpoint": self._delete_endpoint,
            "describe_endpoint": self._describe_endpoint,
            "delete_endpoint_config": self._delete_endpoint_config,
            "delete_model": self._delete_model,
        }
        for attr in _PATCHED:
            self._originals[attr] = SageMakerModelBackend.__dict__[attr]
            bound = mine[attr]
            setattr(SageMakerModelBackend, attr, _method(bound))
        return self

    def uninstall(self) -> None:
        for attr, original in self._originals.items():
            setattr(SageMakerModelBackend, attr, original)
        self._originals.clear()
        self._deleting.clear()


def _method(fn: Any) -> Any:
    def method(self: SageMakerModelBackend, *args: Any, **kwargs: Any) -> Any:
        return fn(self, *args, **kwargs)

    return method


def _configs_of(endpoint: Any) -> list[str]:
    pending = (getattr(endpoint, "pending_deployment_summary", None) or {}).get(
        "EndpointConfigName"
    )
    return [c for c in (endpoint.endpoint_config_name, pending) if c]


def _models_of_variant(variant: dict[str, Any]) -> list[str]:
    pools = variant.get("InstancePools") or []
    names = [variant.get("ModelName")] + [p.get("ModelNameOverride") for p in pools]
    return [n for n in names if n]


@contextmanager
def strict_deletes(
    harness: SageMakerHarness, deleting_describes: int = 2
) -> Iterator[StrictDeletes]:
    """The switch: strict deletes for the duration of the block (see the module doc)."""
    strict = StrictDeletes(harness, deleting_describes).install()
    try:
        yield strict
    finally:
        strict.uninstall()
