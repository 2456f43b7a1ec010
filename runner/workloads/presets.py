"""The catalog's named workloads (catalog/workloads.py) as the benchmark takes them: an unknown
name is one line naming the known ones. `agent` is the shared Strands agent's traffic
(`runner.bench --workload agent`, runner/agent/traffic.py), not a length preset."""

from __future__ import annotations

from catalog.workloads import PRESETS as LENGTH_PRESETS
from catalog.workloads import WorkloadPreset
from runner.core.errors import RunnerError
from runner.workloads.slo import Slo

AGENT = "agent"
PRESETS = (*LENGTH_PRESETS, AGENT)


class Preset:
    """A catalog preset with its objectives as an Slo."""

    def __init__(self, preset: WorkloadPreset) -> None:
        self.preset = preset
        self.input_tokens = preset.input_tokens
        self.input_deviation = preset.input_deviation
        self.input_min = preset.input_min
        self.input_max = preset.input_max
        self.output_tokens = preset.output_tokens
        self.slo_limits = preset.slo_limits
        self.slo_share = preset.slo_share
        self.source = preset.source

    def slo(self) -> Slo:
        return Slo(self.slo_limits, f"--workload {self.preset.name}: {self.preset.slo_source}")


def get_preset(name: str) -> Preset | None:
    """The preset called `name` (None for `agent`, which is traffic, not lengths)."""
    if name == AGENT:
        return None
    if name not in LENGTH_PRESETS:
        raise RunnerError(f"--workload {name!r}: unknown; known: {', '.join(PRESETS)}")
    return Preset(LENGTH_PRESETS[name])
