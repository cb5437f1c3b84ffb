# Two entry points from a fresh clone: `make demo` and `make test`.
# Both create .venv on first use; re-running them installs nothing new.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.tclass-installed

.PHONY: install demo test typecheck lint bench bench-io bench-gpu bench-compile bench-import clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# torch is pinned here (not in pyproject) so that dev and CI installs take the
# local CPU wheel instead of downloading a CUDA build. The editable install puts the
# repository on sys.path with a .pth file (setuptools' "compat" mode), which mypy and
# pyright follow from any project using this venv; the default mode's import hook is
# invisible to them.
EDITABLE := --config-settings editable_mode=compat
$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --disable-pip-version-check torch==2.13.0
	$(PY) -m pip install --quiet --disable-pip-version-check $(EDITABLE) -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(PY) examples/replay_buffer.py

# The suite runs on every core (pytest-xdist): about 5,000 tests, 10 minutes of CPU time.
# compileall: the many test subprocesses import tclass from .pyc files even where
# PYTHONDONTWRITEBYTECODE is set (as on the CI machines); instant when they are fresh.
test: install
	$(PY) -m compileall -q tclass examples > /dev/null
	$(PY) -m pytest -q -n auto
	$(MAKE) --no-print-directory typecheck
	$(MAKE) --no-print-directory lint

# The layers contract (pyproject.toml's [tool.importlinter]: each layer of tclass/ imports
# only the layers below it), then ruff: formatting and lint.
lint: install
	$(VENV)/bin/lint-imports
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/ruff check .

# mypy --strict on the package, the examples and the typing cases (tests/typing, with the
# tclass.mypy plugin from pyproject.toml), then stubtest: what checkers see of tclass
# against the runtime; then pyright (strict) on tests/pyright, the cases mypy cannot state
# (the types of a lambda's parameters). pyright runs offline on the machine's Node.js
# (without one, its wrapper would download one).
typecheck: install
	$(PY) -m mypy --strict tclass examples tests/typing
	$(PY) -m mypy.stubtest tclass --allowlist stubs/stubtest-allowlist.txt
	$(VENV)/bin/pyright --pythonpath $(PY) tests/pyright

# The benchmarks compare with the peer, which the test extra installs.
bench: install
	OMP_NUM_THREADS=1 $(PY) benchmarks/run.py

# Memory-mapped save/load against the peer and safetensors: writes ~15 GB under $TMPDIR
# (or /tmp) and takes several minutes; `$(PY) benchmarks/io.py --quick` is a smoke run.
bench-io: install
	$(PY) benchmarks/io.py

# Compiled tclass against the compiled peer (torch.compile with inductor, on CPU), and each
# against eager: about 5 minutes, most of it inductor compiling both libraries' graphs.
bench-compile: install
	OMP_NUM_THREADS=1 $(PY) benchmarks/compile_bench.py

# `import torch, tclass` against `import torch` alone (fresh interpreters, CPU time).
bench-import: install
	$(PY) benchmarks/import_time.py

# The devices issue's GPU cases against the peer; says so and exits without CUDA.
bench-gpu: install
	$(PY) benchmarks/gpu.py

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .pytest_cache .hypothesis
