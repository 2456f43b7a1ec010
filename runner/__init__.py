"""The runner: reads what was deployed and drives one agent and one benchmark across all of it.

Commands: `python -m runner.up`, `runner.bench`, `runner.check`, `runner.counting`,
`runner.orchestrator`, `runner.report`; `runner.vllm_local` serves the embedded model on vLLM.
With nothing deployed the runner starts an embedded local model server.
"""
