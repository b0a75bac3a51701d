"""One message for an unknown model name, everywhere: offline, live, on a plugin's target.

`peagle plan gpt-oss-20bb`, `peagle --local deploy gpt-oss-20bb` (a plugin's target) and
`peagle recommend gpt-oss-20bb` all say `model: unknown model 'gpt-oss-20bb' (fix: did you mean
gpt-oss-20b? ...)`, whatever failed underneath (no catalog entry, no JumpStart spec).
"""

from __future__ import annotations

import difflib

from ..errors import Call, SpecError, Text, text

__all__ = ["model_remedy", "unknown_model"]

BASE_REMEDY = text(
    "see `{models}`; JumpStart ids resolve live with AWS credentials", models=Call("models")
)


def _known_names() -> list[str]:
    from .models import MODELS

    names: list[str] = []
    for m in MODELS:
        names += [n for n in (m.alias, m.jumpstart_id, m.hf_id) if n]
    return names


def model_remedy(name: str) -> Text:
    """The fix for an unknown model: the closest catalog name, then where to look (a
    Text: extend it with `text()`, not an f-string, to keep the call it names)."""
    close = difflib.get_close_matches(name, _known_names(), n=1, cutoff=0.75)
    if close:
        return text("did you mean {close}? {base}", close=close[0], base=BASE_REMEDY)
    return BASE_REMEDY


def unknown_model(name: str, detail: str | None = None) -> SpecError:
    """`model: unknown model 'x'` (+ what the live lookup said), with the remedy."""
    text = f"model: unknown model {name!r}" + (f" ({detail})" if detail else "")
    return SpecError(text, remedy=model_remedy(name), field="model", value=name)
