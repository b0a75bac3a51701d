"""The CPU trainer environment's definition (`peagle_sandbox.trainer_cpu.install`): what it
pins and where the backend is registered. The install itself runs in the conformance tier's
set-up (`peagle sandbox install-trainer`)."""

from __future__ import annotations

import re
from importlib.metadata import entry_points
from pathlib import Path

from peagle_sandbox.trainer_cpu.install import SPECULATORS_VERSION, requirements_file, trainer_env

SANDBOX = Path(__file__).resolve().parents[1]


def _pins() -> dict[str, str]:
    lines = requirements_file().read_text().splitlines()
    pins = [x.strip() for x in lines if x.strip() and not x.lstrip().startswith("#")]
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[A-Za-z0-9_.+\-]+", p) for p in pins), pins
    return {p.split("==")[0].lower().replace("_", "-"): p.split("==")[1] for p in pins}


def test_every_package_is_pinned_and_the_torch_family_is_not_there() -> None:
    pins = _pins()
    assert pins["speculators"] == SPECULATORS_VERSION == "0.9.0"
    # speculators 0.9.0 needs transformers 5.x (facts §14).
    assert pins["transformers"].startswith("5.")
    # torch comes first, as the +cpu build; torchvision/torchaudio (CUDA builds, pulled by
    # speculators' metadata) break `import transformers.modeling_utils` with CPU torch.
    assert not {"torch", "torchvision", "torchaudio"} & set(pins)
    # Nothing of peagle's: the backend is linked, not installed from the index.
    assert not [p for p in pins if "peagle" in p]


def test_the_backend_is_registered_only_in_the_trainer_venv() -> None:
    """Not by the sandbox's pyproject: the main venv (and the training image) must not find
    a CPU backend, or a SageMaker job would train with CPU patches."""
    pyproject = (SANDBOX / "pyproject.toml").read_text()
    assert 'entry-points."peagle_train.backends"' not in pyproject
    assert list(entry_points(group="peagle_train.backends")) == []


def test_the_trainer_venv_sits_in_the_engine_home(tmp_path: Path) -> None:
    env = trainer_env(tmp_path)
    assert env.python == tmp_path.resolve() / "trainer-venv-0.9.0" / "bin" / "python"
    assert env.train_command(Path("/src/peagle_train.py")) == [
        str(env.python),
        "/src/peagle_train.py",
    ]
