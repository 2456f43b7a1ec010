"""What was read of a server while a load level ran, typed: its own `/metrics` summarised
(runner/measure/server_metrics.py `summarize`) and, on its own host, its accelerator's use
(runner/measure/host_rows.py `accelerator_within`). A bench evidence file keeps one entry per
backend and level under `levels`; the tables read them back here, attributes, not keys.

A summary's figures are there only where the server reported them (llama.cpp has no KV-cache
gauge; a counter needs two samples): a figure it lacks is None here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runner.core.records import Level
from runner.core.typed_json import FlatJson, JsonValue, read_entries, where_set
from runner.timing.client_load import ClientLoad


@dataclass(frozen=True)
class ServerMetrics(FlatJson):
    """The server's own figures over one level: samples taken, requests running and waiting and
    KV-cache use at most and on average, whether requests kept waiting (queueing at the server),
    the prefix cache's queries and hits over the level and their rate, and why it could not read."""

    samples: int
    url: str | None = None
    running_max: float | None = where_set()
    running_mean: float | None = where_set()
    waiting_max: float | None = where_set()
    waiting_mean: float | None = where_set()
    kv_cache_usage_max: float | None = where_set()
    kv_cache_usage_mean: float | None = where_set()
    queueing: bool = False
    prefix_cache_queries_delta: float | None = where_set()
    prefix_cache_hits_delta: float | None = where_set()
    prefix_cache_hit_rate: float | None = where_set()
    problem: str | None = where_set()
    # Every sample as it was read: (s from the level's start, the figures by name).
    series: list[JsonValue] | None = where_set()


@dataclass(frozen=True)
class AcceleratorReadings(FlatJson):
    """The accelerator's use on the server's own host while the level ran (nvidia-smi or
    neuron-monitor), or why there was none."""

    tool: str | None = None
    problem: str | None = None
    # (seconds on the tool's clock, busy %, memory used MiB) per reading.
    samples: list[Any] = field(default_factory=list)
    utilization_pct_mean: float | None = None
    utilization_pct_max: float | None = None
    memory_used_mib_max: float | None = None

    @property
    def unit(self) -> str:
        """What the tool calls busy: NeuronCores on Neuron, the GPU elsewhere."""
        return "NeuronCores" if self.tool == "neuron-monitor" else "GPU"


@dataclass(frozen=True)
class LevelReadings(FlatJson):
    """One backend's row at one level: what was read of its server meanwhile (where anything was:
    a row with no sampler has no `server_metrics`, one off its own host no `accelerator`), for a
    level stopped before its end, how many of its requests had finished, and how busy each client
    process was (runner/timing/client_load.py: its loop's lag and its CPU; none in evidence
    written before they were read)."""

    backend: str
    label: str
    level: Level | None = None
    server_metrics: ServerMetrics | None = where_set()
    accelerator: AcceleratorReadings | None = where_set()
    stopped_after: int | None = where_set()
    clients: list[ClientLoad] | None = where_set()

    @property
    def client_limit(self) -> str | None:
        """Why the level is not the server's figure: a client saturated (None: every one kept up,
        or nothing was read of them)."""
        return next((why for load in self.clients or [] if (why := load.saturated)), None)


def readings_of(evidence: Mapping[str, Any], where: object = None) -> dict[tuple[str, str], LevelReadings]:
    """A bench evidence file's readings per (backend, level label), typed; a malformed one is one line."""
    return {(r.backend, r.label): r for r in read_entries(evidence, "levels", LevelReadings.from_json, where)}
