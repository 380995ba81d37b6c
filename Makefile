# Set-up and everyday commands. Needs only Python 3.11+, pip and make.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# runtime dependencies only (make run); the development tools on top (make test, lint, bench)
RUNTIME := $(VENV)/.runtime
STAMP  := $(VENV)/.installed

VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
IMAGE  ?= scheduler-extender:$(VERSION)

.PHONY: run test lint bench fuzz schemas image clean

$(RUNTIME): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet .
	touch $(RUNTIME)

$(STAMP): $(RUNTIME)
	$(BIN)/pip install --quiet '.[dev]'
	touch $(STAMP)

## run: serve the embedded default profile on 127.0.0.1:8888 (no cluster needed)
run: $(RUNTIME)
	$(BIN)/python -m app serve

## test: lint, type-check and run every test (unit, api, e2e against the real server)
test: $(STAMP) lint
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check app tests bench
	$(BIN)/ruff format --check app tests bench
	$(BIN)/mypy --strict app
	$(BIN)/lint-imports

## bench: latency and throughput of filter/prioritize through the real server, peak memory of the
## largest bodies, and the cluster-state figures (prints figures)
bench: $(STAMP)
	$(BIN)/python bench/bench_http.py
	$(BIN)/python bench/bench_memory.py
	$(BIN)/python bench/bench_bind.py
	$(BIN)/python bench/bench_decisions.py
	$(BIN)/python bench/bench_cluster.py
	$(BIN)/python bench/bench_scheduler.py

## fuzz: the hypothesis fuzz tests of the verbs with many more examples (minutes; FUZZ_EXAMPLES=N)
fuzz: $(STAMP)
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-20000} $(BIN)/python -m pytest -q tests/api/test_fuzz.py

## schemas: regenerate schemas/ from the wire models and the configuration model
schemas: $(STAMP)
	$(BIN)/python -m app schemas --out schemas

## image: build the extender image (IMAGE=registry.example.com/team/scheduler-extender:TAG to name it
## for your registry; then docker push it and render with --image)
image:
	docker build -t $(IMAGE) .

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
