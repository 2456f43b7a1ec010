"""Named workloads (`runner.bench --workload NAME`): prompt and output lengths, the objectives a
request is graded on, and where each figure comes from. Lengths are tokens as the server counts
them; a deviation draws lengths around the mean (a normal, clipped to min and max).

Sources:
- GuideLLM's scenarios (vllm-project/guidellm `src/guidellm/benchmark/scenarios/chat.json` and
  `rag.json`: prompt_tokens, _stdev, _min, _max and output_tokens);
- GuideLLM's objectives (`docs/guides/service_level_objectives.md`, each "for 99% of requests":
  chat TTFT ≤ 200 ms and ITL ≤ 50 ms; RAG request latency ≤ 3 s; code completion request latency
  ≤ 2 s; summarization "maximize throughput", no per-request objective);
- the LLM-Perf leaderboard's protocol (huggingface/optimum-benchmark `llm_perf/utils.py`:
  `INPUT_SHAPES = {"batch_size": 1, "sequence_length": 256}`, `GENERATE_KWARGS =
  {"max_new_tokens": 64, "min_new_tokens": 64}`);
- FMBench's largest prompt bucket, 3,000 to 3,840 tokens (aws-samples/foundation-model-
  benchmarking-tool), for long documents.
Where no public preset gives a figure the source says it is this project's own choice.
An inter-token objective (GuideLLM's ITL) is graded as time per output token after the first
(`vllm bench serve`'s TPOT), its per-request form.
"""

from __future__ import annotations

from dataclasses import dataclass

GUIDELLM_SCENARIOS = "GuideLLM src/guidellm/benchmark/scenarios/{name}.json"
GUIDELLM_SLOS = "GuideLLM docs/guides/service_level_objectives.md ({case}, for 99% of requests)"


@dataclass(frozen=True)
class WorkloadPreset:
    name: str
    summary: str
    input_tokens: tuple[int, ...]
    output_tokens: int
    input_deviation: int = 0
    input_min: int | None = None
    input_max: int | None = None
    # Per-request objectives in milliseconds (ttft, tpot, e2el), and the share that must meet them.
    slo_limits: tuple[tuple[str, float], ...] = ()
    slo_share: float = 0.9
    lengths_source: str = ""
    slo_source: str = ""

    @property
    def source(self) -> str:
        return "; ".join(
            filter(
                None, [f"lengths: {self.lengths_source}", f"objectives: {self.slo_source}" if self.slo_source else ""]
            )
        )


PRESETS: dict[str, WorkloadPreset] = {
    preset.name: preset
    for preset in (
        WorkloadPreset(
            "chat",
            "a chat turn: a few hundred tokens in and out",
            input_tokens=(512,),
            input_deviation=128,
            input_min=1,
            input_max=1024,
            output_tokens=256,
            slo_limits=(("ttft", 200.0), ("tpot", 50.0)),
            slo_share=0.99,
            lengths_source=GUIDELLM_SCENARIOS.format(name="chat") + " (output's own deviation of 64 not drawn)",
            slo_source=GUIDELLM_SLOS.format(case="Chat Applications: TTFT ≤ 200 ms, ITL ≤ 50 ms"),
        ),
        WorkloadPreset(
            "rag",
            "retrieval-augmented generation: a long context in, a paragraph out",
            input_tokens=(4096,),
            input_deviation=512,
            input_min=2048,
            input_max=6144,
            output_tokens=512,
            slo_limits=(("e2el", 3000.0),),
            slo_share=0.99,
            lengths_source=GUIDELLM_SCENARIOS.format(name="rag") + " (output's own deviation of 128 not drawn)",
            slo_source=GUIDELLM_SLOS.format(case="RAG: request latency ≤ 3 s"),
        ),
        WorkloadPreset(
            "summarize",
            "a long document in, a short summary out",
            input_tokens=(3420,),
            input_deviation=240,
            input_min=3000,
            input_max=3840,
            output_tokens=256,
            lengths_source="FMBench's largest prompt bucket, 3,000 to 3,840 tokens; 256 out is this project's own "
            "choice (no public preset gives one)",
            slo_source="",
        ),
        WorkloadPreset(
            "code",
            "code completion: a file's context in, a few lines out",
            input_tokens=(1024,),
            input_deviation=256,
            input_min=256,
            input_max=2048,
            output_tokens=64,
            slo_limits=(("e2el", 2000.0),),
            slo_share=0.99,
            lengths_source="this project's own choice (no public preset gives code-completion lengths)",
            slo_source=GUIDELLM_SLOS.format(case="Code Completion: request latency ≤ 2 s"),
        ),
        WorkloadPreset(
            "llmperf",
            "the LLM-Perf leaderboard's protocol: 256 in, 64 out, one at a time",
            input_tokens=(256,),
            output_tokens=64,
            lengths_source="LLM-Perf leaderboard (optimum-benchmark llm_perf/utils.py: sequence_length 256, "
            "max_new_tokens = min_new_tokens = 64, batch size 1)",
        ),
    )
}
