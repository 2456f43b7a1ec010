"""The runner: `python -m runner.<command>` (or `python -m runner <command>`), each command listed
once, in `runner/commands.py` (`python -m runner` prints them). Each command module here is a thin
front door: its arguments, then one call into the machinery below, then its table.

The packages, each importing only the ones listed after it (import-linter checks it, see
pyproject.toml):

- `cli`: what the front doors share: their common flags, backend discovery, one way to run a
  measuring command and to end it (exit statuses, Ctrl-C).
- `render`: tables (one module per command, found by the evidence's `command`), the HTML and
  Markdown report, the plots.
- `agent`: the Strands models, the agent's run under limits, grading, and the three agent
  tasks (the check's two questions, demo 1's counting, demo 2's orchestration).
- `measure` and `servers` (independent of each other): timed requests and load levels (clients
  per provider, one load engine, health waits); the local servers (llama.cpp, the vLLM tier's
  CPU vLLM and its checkpoint).
- `cloud`: talking to AWS: clients, the CDK CLI, stack outputs, readiness, port forwards,
  image builds, bringing stacks up and watching servers, leftovers.
- `costing`: cost in one place: prices, what bills now, the cost of what was measured by its
  billing model ($ per million tokens, break-even), and the advice's monthly arithmetic.
- `figures`: figures from records: per-request latency, per-level summaries and goodput.
- `workloads`: what a request holds: synthetic text of a chosen length, datasets, presets, objectives.
- `core`: what everything shares: faults, evidence, statistics, backends, files, ports, the console.
- `timing`: the measuring core, in the standard library alone (the in-region kit ships it to a
  server's host): faults and their words, requests, the stream reading, the load engine, warm-up,
  a server's `/metrics`; it imports nothing else of the runner.
"""
