"""What a survey run was asked for. Kept in its folder (`survey.json` `options`), so `--resume`
continues with the same backends, context and settings; only `--keep`/`--down` may change."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from catalog import BACKENDS
from catalog.serving import serving
from runner.agent.tasks import SURVEY_ITEMS
from runner.core.typed_json import JsonObject

# The catalog's backends the survey measures through their API with nothing deployed (Bedrock):
# no stack of their own, reached through the AWS API.
MANAGED = tuple(spec.name for spec in BACKENDS if spec.stack is None and serving(spec.kind).aws_api)
# The survey's own settings where it had them (results/2026-10-05*, repository
# xbill9/aws-inference-strands): demo 1 with 20 runs, demo 2 five times, the benchmark's second
# run with 10 repeats; the sweep's levels are this runner's.
DEMO1_RUNS = 20
DEMO2_RUNS = 5
BENCH_REPEATS = 10
SWEEP_LEVELS = "1,4,16"
# The prompt-length sweep beside the survey's prompt: one request at a time, 64 tokens out (the
# LLM-Perf leaderboard's output length, catalog/workloads.py), from a short prompt to a long one
# every default backend's context holds (4,096 tokens; a shorter one says which it left out).
SWEEP_LENGTHS = "128,512,2048"
SWEEP_OUTPUT_TOKENS = 64
# The preset measured at its objectives, with the most load each backend carries within them.
SURVEY_WORKLOAD = "chat"
CAPACITY_LEVELS = 6
CAPACITY_SECONDS = 900.0


@dataclass
class SurveyOptions:
    backends: list[str]
    with_bedrock: bool
    context: dict[str, str] = field(default_factory=dict)
    keep: bool = False
    down: bool = False
    aws: bool | None = None
    plugin: str = "session-manager-plugin"
    question: str = ""
    repeats: int = BENCH_REPEATS
    concurrency: str = SWEEP_LEVELS
    lengths: str = SWEEP_LENGTHS
    workload: str = SURVEY_WORKLOAD
    capacity_levels: int = CAPACITY_LEVELS
    capacity_seconds: float = CAPACITY_SECONDS
    demo1_runs: int = DEMO1_RUNS
    demo2_runs: int = DEMO2_RUNS
    quality_items: int = SURVEY_ITEMS
    check_wait_s: float = 1500.0
    poll_s: float = 15.0
    launch_timeout_s: float = 600.0
    ready_timeout_s: float | None = None
    build_grace_s: float = 120.0
    method: str = "change-set"
    offline_prices: bool = False
    delete_wait_s: float = 900.0

    def to_json(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: JsonObject) -> SurveyOptions:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    @property
    def measured_names(self) -> list[str]:
        return [*self.backends, *(MANAGED if self.with_bedrock else ())]
