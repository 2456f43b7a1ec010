# The two commands a new user needs: `make bench` (the main job) and `make test`.
# Each sets up what it needs first (virtual environment, pinned CDK CLI, model package).
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION ?= 20
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION ?= 1

.PHONY: setup setup-vllm setup-browser bench test lint synth client-overhead
setup:
	@./scripts/setup.sh

# The vLLM test tier's own environment (.venv-vllm); Linux x86_64 only, a no-op elsewhere.
setup-vllm:
	@./scripts/setup_vllm.sh

# Headless Chromium for the HTML report's browser test (the system's package; skipped where it can't be installed).
setup-browser:
	@./scripts/setup_browser.sh

bench: setup
	.venv/bin/python -m runner.bench $(ARGS)

test: setup setup-vllm setup-browser
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/python -m pytest $(ARGS)

lint: setup
	.venv/bin/ruff check . && .venv/bin/ruff format --check .

synth: setup
	npx cdk synth --all --quiet

# The runner and GuideLLM side by side against a server that streams at a known rate (a benchmark, not a test).
client-overhead: setup
	@./scripts/setup_peer.sh
	.venv/bin/python benchmarks/client_overhead.py $(ARGS)
