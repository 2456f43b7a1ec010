"""Figures from records: per-request latency (`latency`: inter-token gaps per token, time per
output token, distributions) and per-level summaries (`levels`: counts, throughputs, latency
distributions, goodput, prefill fits, the decode roofline, agent levels). A pure pass over typed
records (`runner.core.records`), each figure a dataclass whose `to_json` is the entry reports and
evidence hold: nothing here sends a request or prices anything.

It sits below `runner.measure` (which records them) and `runner.costing` (which prices what they
say a level sustained), and above `runner.workloads` (whose objectives grade a level's goodput),
so that cost and advice can read a level's figures without depending on the measuring machinery.
"""
