"""The options of inference-component hosting that `plan` and `deploy` share.

Each maps to one `SpecOptions` field (`sm_peagle.planning.spec.options`), and from there
to `endpoint.hosting` or `inference_components.*`. Any of them implies
`--hosting inference-components`."""

from __future__ import annotations

from typing import Annotated

import typer

from .options import Hosting, ScaleInStrategy, components_option, copies_option

HostingOpt = Annotated[
    Hosting | None,
    typer.Option(
        "--hosting",
        parser=str,
        help="endpoint (one model, default) or inference-components (several components, "
        "managed instance scaling, scale to zero).",
    ),
]
ComponentOpt = components_option(
    "An inference component NAME[:key=value,...] (repeat): p-eagle:k=7, baseline, "
    "fast:mode=p-eagle,k=5,copies=2,accelerators=1.",
    metavar="NAME[:key=value,...]",
)
ScaleToZeroOpt = Annotated[
    bool,
    typer.Option(
        "--scale-to-zero",
        help="Min 0 instances; scale each component's copies to 0 when idle and back "
        "on the first failed invocation (step policy + NoCapacityInvocationFailures alarm).",
    ),
]
CopiesOpt = copies_option("Initial copies per component.")
AcceleratorsOpt = Annotated[
    int | None,
    typer.Option("--accelerators-per-copy", help="GPUs per copy (= tensor-parallel size)."),
]
MinInstancesOpt = Annotated[
    int | None, typer.Option("--min-instances", help="Managed instance scaling minimum (0 ok).")
]
MaxInstancesOpt = Annotated[
    int | None, typer.Option("--max-instances", help="Managed instance scaling maximum.")
]
ScaleInStrategyOpt = Annotated[
    ScaleInStrategy | None,
    typer.Option(
        "--scale-in-strategy",
        parser=str,
        help="ManagedInstanceScaling ScaleInPolicy: idle-release (release instances that "
        "host no copies) or consolidation (pack copies onto fewer instances). Unset: none "
        "is sent.",
    ),
]
ScaleInMaxStepOpt = Annotated[
    int | None,
    typer.Option(
        "--scale-in-max-step",
        help="Consolidation: instances terminated at a time (1-100; AWS default 1).",
    ),
]
ScaleInCooldownOpt = Annotated[
    int | None,
    typer.Option(
        "--scale-in-cooldown-minutes",
        help="Consolidation: minutes after the last endpoint operation before it is "
        "evaluated (5-1440; AWS default 20).",
    ),
]
