# One word per habit. The venv is .venv (Python from .python-version).
PY ?= .venv/bin/python

.PHONY: install lint test test-fast bench serve lock schema columns screenshots field-doc

install:
	python -m venv .venv && $(PY) -m pip install -q -c constraints.txt -e '.[all,test]'

lint:
	$(PY) -m ruff check bench adapters tests benchmarks && $(PY) -m ruff format --check bench adapters tests benchmarks
	$(PY) -m mypy

# Everything, as the README's test command and .ci/run: one worker per core, the serial and alone
# tests in phases of their own (tests/schedule.py).
test:
	$(PY) -m pytest -q -n auto

# Everything but the tests marked slow, network or browser (pyproject's markers; tests/README.md),
# one pytest-xdist worker per core: about 3 minutes on 2 shared cores (README).
test-fast:
	$(PY) -m pytest -q -n auto -m "not slow and not network and not browser"

bench:
	$(PY) benchmarks/overhead.py

serve:
	.venv/bin/bench serve

schema:
	.venv/bin/bench scenarios schema

# docs/columns.md from the declarations in bench/results/columns.py (a test fails when it is stale).
columns:
	$(PY) -m bench.results.columns > docs/columns.md

# Re-pin every package (then rerun the golden tests and look at what changed).
lock:
	$(PY) -m pip freeze --exclude-editable | grep -v '^misfit-bench' > constraints.txt

# The screenshots of `bench view` in docs/screenshots/ (needs chromium: apt-get install chromium).
screenshots:
	$(PY) docs/screenshots/take.py

# docs/field.md from the committed field run (results/field, from `bench run --suite field`).
field-doc:
	$(PY) -c 'from pathlib import Path; from bench.report.field import write_doc; write_doc(Path("results/field"), Path("docs/field.md"))'
