# The two commands a new user needs: `make bench` (the main job) and `make test`.
# Each sets up what it needs first (virtual environment, pinned CDK CLI, model package).
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION ?= 20
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION ?= 1

# Test workers side by side (pytest-xdist, `--dist loadgroup` from pyproject.toml: tests/conftest.py groups what must
# share a process). On two cores three measured fastest for both: their tests wait (emulated time,
# servers, subprocesses) as well as compute. PYTEST_WORKERS=N sets both, 0 runs everything in one
# process.
PYTEST = .venv/bin/python -m pytest
# Bytecode caches written (Python's default, even where the environment turns it off): the suite
# starts a few hundred Python processes (CDK synths, the emulated hosts' tools), and each would
# otherwise compile the project's modules again, and pytest rewrite every test module per worker.
test test-fast: export PYTHONDONTWRITEBYTECODE =

.PHONY: setup setup-vllm setup-torch-check setup-browser bench test test-fast lint lint-only synth client-overhead
setup:
	@./scripts/setup.sh

# The vLLM test tier's own environment (.venv-vllm); Linux x86_64 only, a no-op elsewhere.
setup-vllm:
	@./scripts/setup_vllm.sh

# The torch-check tier's environment (.venv-torch-check): torch 2.12.1's CUDA build, for the g5g
# image's check of its compiled architectures on a machine with no GPU; Linux only.
setup-torch-check:
	@./scripts/setup_torch_check.sh

# Headless Chromium for the HTML report's browser test (the system's package; skipped where it can't be installed).
setup-browser:
	@./scripts/setup_browser.sh

bench: setup
	.venv/bin/python -m runner.bench $(ARGS)

test: setup setup-vllm setup-torch-check setup-browser lint-only
	$(PYTEST) -n $(or $(PYTEST_WORKERS),3) $(ARGS)

# The inner loop: lint and everything but the tiers that run whole tools end to end (the emulator,
# the stand-in hosts, the real CDK CLI, vLLM, the embedded llama.cpp model, torch's CUDA build); `make test`
# runs them all.
test-fast: setup setup-browser lint-only
	$(PYTEST) -n $(or $(PYTEST_WORKERS),3) -m "not emulator and not vllm and not host and not cli and not llama and not torch" $(ARGS)

lint: setup lint-only

lint-only:
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/lint-imports --no-cache

synth: setup
	npx cdk synth --all --quiet

# The runner and GuideLLM side by side against a server that streams at a known rate (a benchmark, not a test).
client-overhead: setup
	@./scripts/setup_peer.sh
	.venv/bin/python benchmarks/client_overhead.py $(ARGS)
