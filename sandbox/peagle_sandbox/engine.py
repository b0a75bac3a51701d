"""The sandbox's SIMULATED inference engine: text, speculative steps and their timing.

Nothing here runs a model. Text and timing are made up, deterministically, so that a client,
a benchmark or a test can be exercised end to end without a GPU; every number below is an
illustrative constant, not a measurement of vLLM, EAGLE-3 or P-EAGLE.

Text
    Lorem-ipsum-like words (a few with accents and symbols, so multi-byte UTF-8 crosses
    stream boundaries), one word, comma, full stop or paragraph break = one token. The words
    come from an RNG seeded with a hash of the prompt, so the same prompt always yields the
    same text, streamed or not. The "natural" length is drawn per prompt between
    ``min_natural_tokens`` and ``max_natural_tokens``, and the text stops at the first full
    stop after it (finish_reason "stop"); ``max_tokens`` cuts it short (finish_reason
    "length"); ``ignore_eos`` (a vLLM extension benchmarks use) generates exactly
    ``max_tokens``. Prompt tokens are counted the same way (words and punctuation), plus
    ``chat_tokens_per_message`` per chat message and ``chat_tokens_reply_primer``.

Steps (one engine step = one streamed chunk)
    The first step is the prefill: it takes ``prefill_base_ms + prefill_ms_per_prompt_token
    * prompt_tokens`` and yields 1 token, with no drafting (as in vLLM). Each later step:

    - baseline: 1 token, taking ``target_step_ms``.
    - speculative with K draft tokens: the drafter proposes K tokens and the target verifies
      them in one pass; draft position i (1..K) is accepted only if positions 1..i-1 were,
      with probability ``alpha`` each, so P(position i accepted) = alpha**i and the step
      yields 1 + accepted tokens (the target always adds one of its own). Mean acceptance
      length = 1 + sum(alpha**i for i in 1..K), see ``expected_acceptance_length``.
      alpha per mode: ``alpha_p_eagle`` (0.80) > ``alpha_eagle3`` (0.72); other methods use
      ``alpha_eagle3``.
    - step time = ``target_step_ms + verify_ms_per_draft_token * K`` plus the drafter:
      eagle3 drafts sequentially, ``eagle3_draft_ms_per_token * K`` (grows with K); p-eagle
      drafts all K positions in one forward pass, ``peagle_draft_ms`` (flat in K).
    - A step that crosses the stop point or ``max_tokens`` emits only the tokens up to it;
      its accepted/drafted counts still count what the rejection sampler decided, as
      vLLM's counters do.

    With the defaults and K=3: baseline 20 ms/token = 50 tok/s; eagle3 30.5 ms per step x
    2.61 tokens = ~86 tok/s; p-eagle 25.5 ms x 2.95 tokens = ~116 tok/s. At K=7 eagle3 falls
    to ~74 tok/s (drafting cost outgrows acceptance) while p-eagle rises to ~151 tok/s.

    Each request is simulated as if it ran alone: there is no batching and no contention
    between concurrent requests. ``step_time_factor`` multiplies every duration (larger is
    slower). These are real seconds: the sandbox clock (``sandbox_clock.py``) counts 1:1 while a
    request is in flight, whatever its rate. (Before issue 36 the factor was named
    ``time_scale``; the old key is accepted in ``PEAGLE_SIMULATED_ENGINE`` for one release.)

Overload (a knee, off by default)
    With ``overload_above_concurrency`` N > 0, a request that arrives while more than N
    requests (itself included) are in flight on its endpoint first waits
    ``overload_queue_ms`` (as in a full vLLM scheduler queue): its TTFT and e2e grow by that
    much, its steps do not change. Benchmarks' max-concurrency search and goodput tests
    configure it to put a knee at a known concurrency (``overload_delay``).

Configuring a sandbox
    ``PEAGLE_SIMULATED_ENGINE='{"prefill_ms_per_prompt_token": 1.0, ...}'`` in the environment
    of ``peagle sandbox start`` (or ``manager.start``) overrides any constant here
    (``constants_from_env``); ``GET /_peagle/engine`` shows the values in force.

The acceptance draws use an RNG seeded from the prompt, the mode and K, so a given request
on a given endpoint always produces the same steps.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass

__all__ = [
    "CONSTANTS",
    "EngineConstants",
    "Generation",
    "Speculation",
    "Step",
    "constants_from_env",
    "count_tokens",
    "expected_acceptance_length",
    "generate_tokens",
    "simulate",
]


@dataclass(frozen=True)
class EngineConstants:
    """Every tunable of the simulated engine, in one place (see the module docstring)."""

    # Timing (milliseconds of simulated GPU time).
    prefill_base_ms: float = 25.0
    prefill_ms_per_prompt_token: float = 0.02
    target_step_ms: float = 20.0
    verify_ms_per_draft_token: float = 0.5
    eagle3_draft_ms_per_token: float = 3.0
    peagle_draft_ms: float = 4.0
    step_time_factor: float = 1.0
    # Acceptance: per-position conditional acceptance probability.
    alpha_p_eagle: float = 0.80
    alpha_eagle3: float = 0.72
    # Text.
    min_natural_tokens: int = 24
    max_natural_tokens: int = 120
    chat_tokens_per_message: int = 4
    chat_tokens_reply_primer: int = 3
    default_max_model_len: int = 8192
    # Overload: see the module docstring (0 = off).
    overload_above_concurrency: int = 0
    overload_queue_ms: float = 0.0

    def alpha(self, mode: str) -> float:
        return self.alpha_p_eagle if mode == "p-eagle" else self.alpha_eagle3

    def step_ms(self, mode: str, k: int) -> float:
        """Duration of one decode step (not the prefill) for this mode and K."""
        if mode == "baseline" or k <= 0:
            return self.target_step_ms
        drafter = self.peagle_draft_ms if mode == "p-eagle" else self.eagle3_draft_ms_per_token * k
        return self.target_step_ms + self.verify_ms_per_draft_token * k + drafter

    def prefill_ms(self, prompt_tokens: int) -> float:
        return self.prefill_base_ms + self.prefill_ms_per_prompt_token * prompt_tokens

    def overload_delay(self, in_flight: int) -> float:
        """Seconds a request waits before its prefill when it arrives with `in_flight`
        requests (itself included) on its endpoint."""
        n = self.overload_above_concurrency
        if n <= 0 or in_flight <= n:
            return 0.0
        return self.overload_queue_ms * self.step_time_factor / 1000.0

    @property
    def time_scale(self) -> float:
        """The old name of `step_time_factor` (deprecated; removed in the next release)."""
        return self.step_time_factor

    def to_dict(self) -> dict[str, float | int]:
        return asdict(self)


CONSTANTS = EngineConstants()
ENGINE_ENV = "PEAGLE_SIMULATED_ENGINE"


def constants_from_env(env: Mapping[str, str] | None = None) -> EngineConstants:
    """CONSTANTS with the overrides in $PEAGLE_SIMULATED_ENGINE (a JSON object); an unknown
    name or a value of the wrong type is an error, never silently ignored."""
    import json
    from dataclasses import fields, replace

    from . import settings

    raw = settings.get(ENGINE_ENV) if env is None else env.get(ENGINE_ENV)
    if not raw:
        return CONSTANTS
    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise ValueError(f"{ENGINE_ENV}: not JSON ({e})") from None
    if isinstance(doc, dict) and "time_scale" in doc:  # the old key, for one release
        if "step_time_factor" in doc:
            raise ValueError(
                f"{ENGINE_ENV}: give step_time_factor only (time_scale is its old name)"
            )
        doc["step_time_factor"] = doc.pop("time_scale")
    types = {f.name: f.type for f in fields(EngineConstants)}
    if not isinstance(doc, dict) or set(doc) - set(types):
        unknown = sorted(set(doc) - set(types)) if isinstance(doc, dict) else doc
        raise ValueError(f"{ENGINE_ENV}: unknown engine constant(s) {unknown}")
    for name, value in doc.items():
        want = int if types[name] in (int, "int") else float
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{ENGINE_ENV}: {name} must be a number, got {value!r}")
        if want is int and not isinstance(value, int):
            raise ValueError(f"{ENGINE_ENV}: {name} must be an integer, got {value!r}")
    return replace(CONSTANTS, **doc)


def expected_acceptance_length(alpha: float, k: int) -> float:
    """Mean tokens per decode step under the model: 1 + sum(alpha**i, i = 1..K)."""
    return 1.0 + sum(alpha**i for i in range(1, k + 1))


@dataclass(frozen=True)
class Speculation:
    """How an endpoint decodes: ``mode`` is baseline, p-eagle, eagle3 (or another method)."""

    mode: str = "baseline"
    k: int = 0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Speculation:
        """Read SM_VLLM_SPECULATIVE_CONFIG the way `peagle status` does."""
        from sm_peagle.contract import speculative_of

        try:
            mode, k, _ = speculative_of(dict(env))
        except ValueError:  # unparseable JSON: vLLM would not start; serve as baseline
            return cls()
        if mode == "baseline" or not k:
            return cls()
        return cls(mode=str(mode), k=int(k))


@dataclass(frozen=True)
class Step:
    """One engine step: the tokens it emitted and what the drafter did to get them."""

    text: str
    tokens: int
    accepted: int  # draft tokens the target accepted (0 for prefill and baseline)
    drafted: int  # draft tokens proposed (K, or 0 for prefill and baseline)
    seconds: float  # simulated time from the previous step (or arrival) to this one


@dataclass(frozen=True)
class Generation:
    prompt_tokens: int
    steps: tuple[Step, ...]
    finish_reason: str
    speculation: Speculation

    @property
    def text(self) -> str:
        return "".join(s.text for s in self.steps)

    @property
    def completion_tokens(self) -> int:
        return sum(s.tokens for s in self.steps)


# ---------------------------------------------------------------------------------- text

_LOREM = (
    "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt "
    "ut labore et dolore magna aliqua enim ad minim veniam quis nostrud exercitation ullamco "
    "laboris nisi aliquip ex ea commodo consequat duis aute irure in reprehenderit voluptate "
    "velit esse cillum fugiat nulla pariatur excepteur sint occaecat cupidatat non proident "
    "sunt culpa qui officia deserunt mollit anim id est laborum speculative draft token "
    "verify parallel accept"
)
_WORDS = tuple(_LOREM.split())
# Multi-byte UTF-8 (2, 3 and 4 bytes), so stream splits can land inside a character.
_RARE_WORDS = ("café", "naïve", "über", "señor", "→", "—", "日本", "🙂")


def count_tokens(text: str) -> int:
    """The sandbox's tokenizer: words and punctuation marks each count as one token."""
    count, in_word = 0, False
    for ch in text:
        if ch.isalnum() or ch == "_":
            if not in_word:
                count += 1
            in_word = True
        else:
            in_word = False
            if not ch.isspace():
                count += 1
    return count


def seed_of(*parts: object) -> int:
    """A stable 64-bit seed (Python's hash() is salted per process)."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _token_stream(rng: random.Random) -> Iterator[str]:
    """Endless lorem-like tokens; a sentence always ends with a "." token."""
    first = True
    while True:
        paragraph = not first and rng.random() < 0.15
        if paragraph:
            yield "\n\n"
        for i in range(rng.randint(5, 14)):
            word = rng.choice(_RARE_WORDS) if rng.random() < 0.06 else rng.choice(_WORDS)
            if i == 0:
                word = word[:1].upper() + word[1:]
            yield word if first or (paragraph and i == 0) else " " + word
            first = False
            if 0 < i < 12 and rng.random() < 0.08:
                yield ","
        yield "."


def generate_tokens(
    seed: int, max_tokens: int, *, ignore_eos: bool = False, constants: EngineConstants = CONSTANTS
) -> tuple[list[str], str]:
    """(tokens, finish_reason) for a prompt seed; at most ``max_tokens`` tokens."""
    rng = random.Random(seed)
    natural = rng.randint(constants.min_natural_tokens, constants.max_natural_tokens)
    tokens: list[str] = []
    for token in _token_stream(rng):
        if len(tokens) >= max_tokens:
            return tokens, "length"
        tokens.append(token)
        if not ignore_eos and token == "." and len(tokens) >= natural:
            return tokens, "stop"
    raise AssertionError("unreachable: the token stream is endless")


# ---------------------------------------------------------------------------------- steps


def simulate(
    prompt_key: str,
    prompt_tokens: int,
    max_tokens: int,
    speculation: Speculation,
    *,
    ignore_eos: bool = False,
    constants: EngineConstants = CONSTANTS,
) -> Generation:
    """Generate the text for ``prompt_key`` and cut it into engine steps (pure: no sleeps)."""
    tokens, finish = generate_tokens(
        seed_of("text", prompt_key), max_tokens, ignore_eos=ignore_eos, constants=constants
    )
    scale = constants.step_time_factor / 1000.0
    mode, k = speculation.mode, speculation.k
    rng = random.Random(seed_of("accept", prompt_key, mode, k))
    alpha = constants.alpha(mode)
    step_s = constants.step_ms(mode, k) * scale
    steps: list[Step] = []
    i = 0
    while i < len(tokens):
        if not steps:  # prefill: the first token comes from the target alone
            take, accepted, drafted = 1, 0, 0
            seconds = constants.prefill_ms(prompt_tokens) * scale
        elif mode == "baseline" or k <= 0:
            take, accepted, drafted, seconds = 1, 0, 0, step_s
        else:
            accepted = 0
            while accepted < k and rng.random() < alpha:
                accepted += 1
            take, drafted, seconds = 1 + accepted, k, step_s
        chunk = tokens[i : i + take]
        i += len(chunk)
        steps.append(Step("".join(chunk), len(chunk), accepted, drafted, seconds))
    return Generation(prompt_tokens, tuple(steps), finish, speculation)
