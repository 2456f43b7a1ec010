"""A bench evidence file, typed: the request records (or agent traffic's tasks), the warm-ups kept
apart, and what only some runs have: the accuracy beside the figures (`--quality`), how each
row's workload was prepared, what was read of each server per level, the capacity searches, the
in-region runs, a fleet's capacity at each copy count (`--copies`), how many requests ran past
`--timeout`, and an inference component's scaling (`--from-zero`, `--step-load`). The measuring
writes its sections through the methods here; the tables and `runner.report` read the same class back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Self

from runner.cloud.reach.in_region import KitRunEntry
from runner.core.accuracy import Accuracy
from runner.core.evidence import EvidenceFile
from runner.core.readings import LevelReadings, ServerMetrics
from runner.core.records import AgentTask, RequestRecord
from runner.core.typed_json import UNSET, FlatJson, JsonObject, Unset, read_entries, read_sections, where_set
from runner.figures.capacity import CapacityFound
from runner.figures.fleet import FleetCopies
from runner.figures.scale_out import FromZeroRun, StepLoad
from runner.measure.vendor_benchmark import VendorBenchmark


@dataclass
class WorkloadBackend(FlatJson):
    """How one row's workload was prepared: the path it measured (its in-region row), whether the
    output length was forced, where its prompt and output lengths came from, where its server's
    metrics were read (None: nowhere; set once looked for), and the lengths its context could not
    hold. Each only where it was set."""

    path: str | None = where_set()
    forced_output_length: bool | None = where_set()
    token_count: str | None = where_set()
    output_lengths: str | None = where_set()
    metrics: str | Unset | None = where_set(UNSET)
    not_sent: list[str] | None = where_set()


@dataclass(kw_only=True)
class BenchFile(EvidenceFile):
    COMMAND = "bench"

    records: list[RequestRecord] = field(default_factory=list)
    accuracy: dict[str, Accuracy] | None = where_set()
    tasks: list[AgentTask] | None = where_set()
    # The warm-ups, never among the timed records (agent traffic: each session's first task).
    warm_up: list[RequestRecord | AgentTask] = field(default_factory=list)
    workload_backends: dict[str, WorkloadBackend] | None = where_set()
    levels: list[LevelReadings] | None = where_set()
    capacity: list[CapacityFound] | None = where_set()
    in_region: list[KitRunEntry] | None = where_set()
    fleet: list[FleetCopies] | None = where_set()
    timed_out: int | None = where_set()
    # An inference component's scaling (`--from-zero`, `--step-load`): runner/figures/scale_out.py.
    from_zero: list[FromZeroRun] | None = where_set()
    step_load: list[StepLoad] | None = where_set()
    # AWS's own benchmark of a SageMaker endpoint beside ours (`--vendor-benchmark`).
    vendor_benchmark: list[VendorBenchmark] | None = where_set()

    @property
    def agent(self) -> bool:
        """Agent traffic (`--workload agent`): tasks, not requests."""
        return bool(self.config.get("agent"))

    def workload_backend(self, row: str) -> WorkloadBackend:
        """The row's entry under `workload_backends`, made when first asked for."""
        if self.workload_backends is None:
            self.workload_backends = {}
        return self.workload_backends.setdefault(row, WorkloadBackend())

    def keep_level(self, readings: LevelReadings) -> None:
        self.levels = [*(self.levels or []), readings]

    def keep_capacity(self, found: CapacityFound) -> None:
        self.capacity = [*(self.capacity or []), found]

    def keep_in_region(self, run: KitRunEntry) -> None:
        self.in_region = [*(self.in_region or []), run]

    def keep_fleet(self, fleet: FleetCopies) -> None:
        self.fleet = [*(self.fleet or []), fleet]

    def keep_from_zero(self, run: FromZeroRun) -> None:
        self.from_zero = [*(self.from_zero or []), run]

    def keep_step_load(self, step: StepLoad) -> None:
        self.step_load = [*(self.step_load or []), step]

    def count_timeout(self) -> None:
        self.timed_out = (self.timed_out or 0) + 1

    @classmethod
    def from_json(cls, data: Mapping[str, object], where: object = None) -> Self:
        where = getattr(data, "source", None) if where is None else where
        found = read_sections(cls, data, where, apart=("warm_up",))
        agent = isinstance(data.get("config"), dict) and bool(data["config"].get("agent"))  # type: ignore[union-attr]
        read = AgentTask.from_json if agent else RequestRecord.from_json
        return cls(**found, warm_up=read_entries(data, "warm_up", read, where))  # type: ignore[arg-type]


def kept_metrics(summary: JsonObject, samples: list[tuple[float, dict[str, float]]]) -> ServerMetrics:
    """A level's `/metrics` summary (runner/measure/server_metrics.py `summarize`, which hands its
    figures over by name) and the samples it was made from, as the evidence keeps them: typed at
    this boundary."""
    series = [[at, figures] for at, figures in samples]
    return ServerMetrics.from_json(summary | {"series": series}, f"the metrics of {summary.get('url')}")
