"""A capacity search as its evidence holds it (`bench --find-capacity` writes one per backend and
input length under `"capacity"`), typed so that cost, advice and the reports read attributes, not
keys: each level tried with what it met and sustained, and the answer with the level it names.

`CapacityFound.to_json` writes exactly the entry the evidence holds; `capacity_of` reads a file's
entries back, a malformed one refused in one line that names its backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runner.core.errors import RunnerError
from runner.core.typed_json import FlatJson, JsonObject, fields_json, named, read_fields, to_json, where_set


@dataclass(frozen=True)
class Tried(FlatJson):
    """One level the search measured: its load (concurrency or rate), whether at least the
    search's share of its requests met every objective, and what it sustained; a level the
    client could not keep up with says why (`client_limit`) and never counts as met."""

    value: float
    met: bool
    share_met: float | None
    output_tok_s: float | None
    request_throughput: float | None
    goodput_rps: float | None
    client_limit: str | None = where_set()


@dataclass(frozen=True)
class CapacityFound:
    """The most load one backend carried within the objectives at one input length (`capacity`:
    None when even the first level missed), its level's label, what was tried in order, and why
    the search stopped."""

    backend: str
    input_tokens: int | None
    label: str | None
    mode: str
    slo_share: float
    capacity: float | None
    stopped: str
    tried: tuple[Tried, ...]

    @property
    def at_capacity(self) -> Tried | None:
        """The level tried at the capacity, with its figures (None when none met)."""
        return next((t for t in self.tried if t.value == self.capacity), None)

    @property
    def unit(self) -> str:
        return "at a time" if self.mode == "concurrency" else "requests/s"

    def to_json(self) -> JsonObject:
        """The search first, its answer's level among its fields (the entry the bench has always
        written), then whose it was."""
        data = fields_json(self)
        head = {key: data[key] for key in ("mode", "slo_share", "capacity")}
        head["at_capacity"] = to_json(self.at_capacity)
        return head | {key: data[key] for key in ("tried", "stopped", "backend", "input_tokens", "label")}

    @classmethod
    def from_json(cls, data: object, what: str | None = None) -> CapacityFound:
        """The entry read back (named by its backend, whatever place `what` it has); `at_capacity`
        is not read: it is the tried level at the capacity."""
        what = named(data, "backend", "a capacity search")
        found = read_fields(cls, data, what, apart=("tried",))
        assert isinstance(data, dict)  # read_fields refused anything else
        tried = data.get("tried")
        if not isinstance(tried, list):
            raise RunnerError(f"{what}: 'tried' is {tried!r}, not a list of levels")
        return cls(**found, tried=tuple(Tried.from_json(t, f"{what}, its level {n}") for n, t in enumerate(tried, 1)))


def capacity_of(evidence: Mapping[str, Any], where: object = None) -> list[CapacityFound]:
    """A bench evidence file's capacity searches, typed, in the order they ran; a malformed one is
    one line (prefixed with `where`, the file, when given)."""
    try:
        return [CapacityFound.from_json(entry) for entry in evidence.get("capacity") or []]
    except RunnerError as error:
        raise RunnerError(f"{where}: {error}" if where is not None else str(error)) from None
