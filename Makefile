# Set-up and everyday commands. Needs only Python 3.11+, pip and make.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# runtime dependencies only (make run); the development tools on top (make test, lint, bench)
RUNTIME := $(VENV)/.runtime
STAMP  := $(VENV)/.installed
# the pinned, hashed dependencies (docs/install/image.md, "Reproducible builds"): `make lock` rewrites them
LOCK     := requirements.lock
DEV_LOCK := requirements-dev.lock

VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
IMAGE  ?= scheduler-extender:$(VERSION)

.PHONY: run test test-slow test-cluster lint bench fuzz schemas reference docs image lock clean

# the locked dependencies, each file checked against its hash, then the package itself without
# resolving anything again (tests/unit/test_lock.py fails when pyproject.toml and the locks disagree)
# zttp (uvicorn's HTTP/2) as third_party/zttp/build.py patches it: connections that live as long as
# kube-scheduler keeps them (built once, about two minutes, then cached in ~/.cache/scheduler-extender)
$(RUNTIME): pyproject.toml $(LOCK) third_party/zttp/long-connections.patch third_party/zttp/build.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes -r $(LOCK)
	$(BIN)/python third_party/zttp/build.py --install
	$(BIN)/pip install --quiet --no-deps .
	touch $(RUNTIME)

$(STAMP): $(RUNTIME) $(DEV_LOCK)
	$(BIN)/pip install --quiet --require-hashes -r $(DEV_LOCK)
	touch $(STAMP)

## run: serve the embedded default profile on 127.0.0.1:8888 (no cluster needed)
run: $(RUNTIME)
	$(BIN)/python -m app serve

# pytest-xdist workers: most tests wait on real servers and processes, so more workers than cores
# (measured on 2 cores: 4 workers 195 s, 8 workers 164 s for the whole suite)
TEST_WORKERS ?= 8

## test: lint, type-check, build the documentation site strictly (a broken link or a page left out of
## the nav fails) and run every test (unit, api, e2e against the real server)
test: $(STAMP) lint
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet
	$(BIN)/python -m compileall -q app  # bytecode once, even with PYTHONDONTWRITEBYTECODE: ~150 test processes import app
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m "not slow"

## test-slow: the builds and soak runs make test leaves out (pytest -m slow: the image's wheel and an
## out-of-tree plugin installed, SIGKILL and leader takeover under load, a long HTTP/2 connection)
test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m slow

## test-cluster: the real-control-plane tier (tests/realcluster/, minutes): kube-scheduler v1.36.3 calling
## every verb over mutual TLS and HTTP/2, the standalone scheduler's Lease, RBAC and volumes, on the
## lab of ../shared/lab (LAB_DIR) or on KUBECONFIG with KUBE_SCHEDULER; skips without either
## (REQUIRE_CLUSTER=1: fails instead). See docs/development.md
test-cluster: $(STAMP)
	$(BIN)/python -m pytest -v -s tests/realcluster

lint: $(STAMP)
	$(BIN)/ruff check app tests bench third_party
	$(BIN)/ruff format --check app tests bench third_party
	$(BIN)/mypy --strict app
	$(BIN)/lint-imports

## bench: latency and throughput of filter/prioritize through the real server, peak memory of the
## largest bodies, the cluster-state figures, kube-scheduler's pace with the service binding (a Go
## driver on kube-scheduler's extender transport) and names-only verbs against a Go extender (prints figures)
bench: $(STAMP)
	$(BIN)/python bench/bench_http.py
	$(BIN)/python bench/bench_memory.py
	$(BIN)/python bench/bench_bind.py
	$(BIN)/python bench/bench_extender_cycle.py
	$(BIN)/python bench/bench_go_extender.py
	$(BIN)/python bench/bench_decisions.py
	$(BIN)/python bench/bench_cluster.py
	$(BIN)/python bench/bench_scheduler.py

## fuzz: the hypothesis fuzz tests of the verbs with many more examples (minutes; FUZZ_EXAMPLES=N):
## arbitrary JSON, one value replaced, corrupted bytes, non-objects at every depth of a node or pod,
## and quantities checked against resource.ParseQuantity's grammar
fuzz: $(STAMP)
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-20000} $(BIN)/python -m pytest -q tests/api/test_fuzz.py

## schemas: regenerate schemas/ from the wire models and the configuration model
schemas: $(STAMP)
	$(BIN)/python -m app schemas --out schemas

## reference: regenerate docs/reference/ (configuration, command line) and the args tables of the
## plugin pages from the code (tests/unit/test_docs.py fails when they drift)
reference: $(RUNTIME)
	$(BIN)/python -m app reference

## docs: serve the documentation site on http://127.0.0.1:8000, rebuilt on every change
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

## image: build the extender image (IMAGE=registry.example.com/team/scheduler-extender:TAG to name it
## for your registry; then docker push it and render with --image)
image:
	docker build -t $(IMAGE) .

## lock: re-resolve requirements.lock and requirements-dev.lock from pyproject.toml (newest versions on
## PyPI, every file's hash, Python 3.11+ on any platform), with uv in a throw-away virtualenv
lock:
	$(PYTHON) -m venv $(VENV)-lock
	$(VENV)-lock/bin/pip install --quiet uv
	$(VENV)-lock/bin/uv pip compile pyproject.toml --generate-hashes --universal --python-version 3.11 \
		--no-header --quiet -o $(LOCK)
	$(VENV)-lock/bin/uv pip compile pyproject.toml --extra dev --generate-hashes --universal \
		--python-version 3.11 --no-header --quiet -o $(DEV_LOCK)
	rm -rf $(VENV)-lock

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
