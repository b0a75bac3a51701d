"""Inference components on the real-engine host (`engine_host.EngineHost`): one real vLLM
engine per component that has copies, built from the component's model exactly as an
endpoint's engine is built from its config's model (image environment, including
`SM_VLLM_SPECULATIVE_CONFIG`, and its `AdditionalModelDataSources` channels).

The moto harness (`engine_harness.EngineHarness`) calls these hooks after its own
CreateInferenceComponent / UpdateInferenceComponent[RuntimeConfig] /
DeleteInferenceComponent have run, on moto's request thread, so none of them blocks:

- created: the component stays `Creating` (0 copies) until its engine answers `/ping`,
  then `InService` with its copies; `Failed` with vLLM's last error line if the engine
  exits first;
- copy count 0: the engine is taken out of routing at once (invocations get the
  no-capacity refusal), stopped, then the component is `InService` with 0 copies;
  back to >= 1: a new engine starts and the component is `Updating` until `/ping`;
- a new Specification: a new engine; it replaces the old one once it answers `/ping`;
- deleted: `Deleting` until the engine's process group is gone, then the component is gone.

ASSUMPTION (labelled): a copy count above 1 still runs ONE engine (the sandbox has 2
CPUs); the component reports the copies asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from moto.sagemaker.models import sagemaker_backends

from peagle_sandbox.engine_runs import COMPONENT, DEFAULT_STARTUP_TIMEOUT, Engine
from peagle_sandbox.testing.moto_components import inference_components_of

__all__ = ["ComponentEngines"]

_ONE_ENGINE = (
    "peagle-sandbox: {copies} copies asked; the sandbox runs one engine per component "
    "(2 CPUs), which serves every copy"
)


class ComponentEngines:
    """The inference-component half of `EngineHost` (a mixin: it uses the host's
    `harness`, `account`, books and `_queue` / `_take` / `_stop_then` / `_log`)."""

    harness: Any
    account: str
    _numbers: Any
    _lock: Any
    _serving: dict[Any, Engine]
    _starting: dict[Any, Engine]
    _queue: Callable[[Engine], None]
    _take: Callable[..., list[Engine]]
    _stop_then: Callable[[list[Engine], str, Callable[[], Any]], None]
    _log: Callable[[Engine, list[str]], None]

    def component_created(self, region: str, name: str) -> None:
        """CreateInferenceComponent: queue the component's engine (copies are >= 1)."""
        self._start_component(region, name, "create")

    def component_copies(self, region: str, name: str) -> None:
        """UpdateInferenceComponentRuntimeConfig: 0 copies stops the engine, >= 1 starts
        one if none runs."""
        ic = self._ic(region, name)
        if ic is None:
            return
        key = (region, COMPONENT, name)
        if ic.desired == 0:
            engines = self._take(key)
            self._stop_then(
                engines, "scaled to 0 copies", lambda: self._settle_ic(region, name, "InService")
            )
            return
        with self._lock:
            serving, starting = self._serving.get(key), self._starting.get(key)
        if serving is not None:
            if ic.desired > 1:
                self._log(serving, [_ONE_ENGINE.format(copies=ic.desired)])
            self._settle_ic(region, name, "InService")
        elif starting is None:
            self._start_component(region, name, "update")

    def component_replaced(self, region: str, name: str) -> None:
        """UpdateInferenceComponent with a new Specification: a new engine, which replaces
        the serving one once it answers /ping (0 copies: nothing to start)."""
        ic = self._ic(region, name)
        if ic is not None and ic.desired == 0:
            self._settle_ic(region, name, "InService")
        elif ic is not None:
            self._start_component(region, name, "update")

    def component_deleted(self, region: str, name: str) -> None:
        """DeleteInferenceComponent: `Deleting` until its engine is gone, then gone."""
        engines = self._take((region, COMPONENT, name))
        self._stop_then(
            engines, "component deleted", lambda: self._settle_ic(region, name, "Deleting")
        )

    # ---------------------------------------------------------------- helpers

    def _ic(self, region: str, name: str) -> Any:
        return inference_components_of(sagemaker_backends[self.account][region]).get(name)

    def _settle_ic(self, region: str, name: str, status: str) -> None:
        self.harness.settle_component(region, name, status)

    def _start_component(self, region: str, name: str, kind: str) -> None:
        ic = self._ic(region, name)
        if ic is None:
            return
        source = (ic.specification or {}).get("ModelName") or "inline-container"
        engine = Engine(
            region,
            name,
            source,
            kind,
            next(self._numbers),
            scope=COMPONENT,
            endpoint=ic.endpoint_name,
        )
        if ic.desired > 1:
            self._log(engine, [_ONE_ENGINE.format(copies=ic.desired)])
        self._queue(engine)

    def _component_container(self, engine: Engine) -> tuple[dict[str, Any], float]:
        """(the container the component runs: its model's PrimaryContainer, or its inline
        Container; the start-up timeout of its StartupParameters)."""
        backend = sagemaker_backends[self.account][engine.region]
        spec = inference_components_of(backend)[engine.name].specification or {}
        container = spec.get("Container") or {}
        if spec.get("ModelName"):
            container = backend._models[spec["ModelName"]].primary_container or {}
        startup = spec.get("StartupParameters") or {}
        timeout = startup.get("ContainerStartupHealthCheckTimeoutInSeconds")
        return dict(container), float(timeout or DEFAULT_STARTUP_TIMEOUT)
