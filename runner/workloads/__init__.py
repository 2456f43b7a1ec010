"""The workloads `runner.bench` measures: what each request holds, how long it is and how long
its answer must be, built for one backend on its own tokenizer.

One interface (`Workload.requests`), one module per source of prompts: synthetic text of chosen
lengths (`text.py`), a user's dataset file (`dataset.py`), the catalog's named presets
(`catalog/workloads.py`), and the service-level objectives a request is graded on (`slo.py`).
This package imports only the catalog and the runner's core: the token count it builds against
is handed in by the caller (runner/measure/tokens.py).
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field

from runner.core.errors import RunnerError
from runner.core.typed_json import JsonObject
from runner.workloads.text import Fitter, TokenCounter

# The survey's own prompt and output limit: kept as the default, so its figures stay comparable.
SURVEY_PROMPT = "Write a short paragraph about the ocean."
SURVEY_MAX_TOKENS = 100


@dataclass(frozen=True)
class Turn:
    """One request of a workload: the conversation before it, its user message, its output length."""

    prompt: str
    max_tokens: int
    history: tuple[tuple[str, str], ...] = ()
    target_input_tokens: int | None = None
    # Index of the conversation it belongs to, and its place in it (multi-turn workloads).
    session: int | None = None
    turn: int | None = None
    # A ShareGPT entry's first reply, whose length on the backend's own tokenizer is the output
    # asked for (`max_tokens` holds the estimate used where the backend has no tokenizer).
    reply: str | None = None


@dataclass(frozen=True)
class Workload:
    """What to send. `input_tokens` lengths are the prompt as the server counts it (the chat template
    included); `output_tokens` is asked for exactly where the path can force it."""

    name: str = "survey"
    input_tokens: tuple[int, ...] = ()
    input_deviation: int = 0
    input_min: int | None = None
    input_max: int | None = None
    output_tokens: int | None = None
    prefix_tokens: int = 0
    prefixes: int = 1
    turns: int = 1
    # Fixed prompts (the survey's, `--prompts`, a dataset): used in turn instead of synthetic text.
    fixed: tuple[Turn, ...] = ()
    source: str = ""
    seed: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def synthetic(self) -> bool:
        return not self.fixed

    @property
    def sweeps_input(self) -> bool:
        return len(self.input_tokens) > 1

    def check(self) -> None:
        """Bad combinations are one line each, before anything is sent."""
        if self.synthetic and not self.input_tokens:
            raise RunnerError("a synthetic workload needs --input-tokens")
        for length in self.input_tokens:
            if length < 1:
                raise RunnerError(f"--input-tokens {length}: every length must be at least 1")
        if self.output_tokens is not None and self.output_tokens < 1:
            raise RunnerError(f"--output-tokens {self.output_tokens}: at least 1")
        if self.input_deviation < 0:
            raise RunnerError("--input-deviation cannot be negative")
        low, high = self.input_min, self.input_max
        if low is not None and high is not None and low > high:
            raise RunnerError(f"--input-min {low} is above --input-max {high}")
        if self.prefix_tokens < 0:
            raise RunnerError(f"--prefix-tokens {self.prefix_tokens}: cannot be negative")
        if self.prefix_tokens and self.fixed:
            raise RunnerError("--prefix-tokens shares a prefix among synthetic prompts: not with --dataset's own")
        if self.prefix_tokens:
            if self.prefixes < 1:
                raise RunnerError("--prefixes: at least 1")
            shortest = min(self.input_tokens) if self.input_tokens else 0
            if self.prefix_tokens >= shortest:
                raise RunnerError(
                    f"--prefix-tokens {self.prefix_tokens} leaves nothing of its own to a request of {shortest} tokens"
                )
        if self.turns < 1:
            raise RunnerError("--turns: at least 1")
        if self.turns > 1 and (self.prefix_tokens or self.input_deviation or self.fixed):
            raise RunnerError(
                "--turns builds conversations of fixed-length turns: give it no --prefix-tokens, --input-deviation "
                "or --dataset (a dataset's conversations are its own)"
            )

    def longest(self, mean: int, output_tokens: int) -> int:
        """The most tokens a request at this length may send: three deviations above the mean (or
        the maximum); a conversation's last turn carries every earlier turn and its answer."""
        top = mean + 3 * self.input_deviation if self.input_deviation else mean
        if self.input_max is not None:
            top = min(top, self.input_max)
        return top * self.turns + output_tokens * (self.turns - 1)

    def beyond_context(self, mean: int, context: int | None, output_tokens: int) -> str | None:
        """Why requests at this length cannot be sent to a model of `context` tokens (None: they can)."""
        if not context:
            return None
        longest = self.longest(mean, output_tokens)
        if longest + output_tokens <= context:
            return None
        return (
            f"{mean} input tokens: up to {longest} in + {output_tokens} out is more than its context of "
            f"{context} tokens; not sent (shorter lengths, or a backend whose context holds them)"
        )

    def lengths(self, mean: int, count: int, seed: int) -> list[int]:
        """`count` prompt lengths around `mean`: normal with the deviation, within min and max."""
        rng = random.Random(seed)
        # Never shorter than the shared prefix plus a token of its own.
        low = max(self.input_min or 1, self.prefix_tokens + 1)
        high = self.input_max or 10**9
        out = []
        for _ in range(count):
            value = round(rng.gauss(mean, self.input_deviation)) if self.input_deviation else mean
            out.append(min(max(value, low), high))
        return out

    def to_json(self) -> JsonObject:
        data = asdict(self)
        data["fixed"] = len(self.fixed)
        return data


def synthetic_turns(
    workload: Workload,
    input_tokens: int,
    count: int,
    output_tokens: int,
    counter: TokenCounter | Fitter,
    first: int = 0,
) -> list[Turn]:
    """`count` requests of `input_tokens` (or around it) on the backend's count: unique text after an
    optional shared prefix (`prefix_tokens`, one of `prefixes`, the same for the whole run: the
    server computes each once). `first` is the number of requests already built for this backend:
    every request of a run has text of its own, so no level is served from an earlier level's
    prompts in the server's prefix cache."""
    fitter = counter if isinstance(counter, Fitter) else Fitter(counter)
    seed = workload.seed * 1_000_003 + first
    prefixes = [
        fitter.fit(workload.prefix_tokens, 10_000 + k, keep=True)[0] + "\n\n" for k in range(workload.prefixes)
    ] if workload.prefix_tokens else [""]  # fmt: skip
    # The lengths from the workload's seed alone: a level of the same size draws the same lengths
    # wherever it is measured from (the tunnel and the server's host), only the text is new.
    lengths = workload.lengths(input_tokens, count, workload.seed)
    jobs = [(length, seed + index + 1, prefixes[index % len(prefixes)]) for index, length in enumerate(lengths)]
    return [
        Turn(text, output_tokens, target_input_tokens=length)
        for (length, _, _), (text, _) in zip(jobs, fitter.fit_all(jobs), strict=True)
    ]
