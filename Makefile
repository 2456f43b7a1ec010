# The two commands a new user needs: `make bench` (the main job) and `make test`.
# Each sets up what it needs first (virtual environment, pinned CDK CLI, model package).
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION ?= 20
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION ?= 1

.PHONY: setup setup-vllm bench test lint synth
setup:
	@./scripts/setup.sh

# The vLLM test tier's own environment (.venv-vllm); Linux x86_64 only, a no-op elsewhere.
setup-vllm:
	@./scripts/setup_vllm.sh

bench: setup
	.venv/bin/python -m runner.bench $(ARGS)

test: setup setup-vllm
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/python -m pytest $(ARGS)

lint: setup
	.venv/bin/ruff check . && .venv/bin/ruff format --check .

synth: setup
	npx cdk synth --all --quiet
