# Two commands do all set-up on a fresh machine (Python 3.11+, Java 17): `make demo` and `make test`.
# `make analyze-demo` installs the analysis (PySpark) and shows it on a library scenario.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-test

.PHONY: demo analyze-demo test bench chromium clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e .
	touch $@

$(STAMP): pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e '.[test,spark]'
	touch $@ $(VENV)/.installed $(VENV)/.installed-spark

$(VENV)/.installed-spark: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e '.[spark]'
	touch $@ $(VENV)/.installed

# The report tests render pages in headless Chromium (the Debian package); installed when missing (needs root).
chromium:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { echo "installing chromium (headless browser for the report tests)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

demo: $(VENV)/.installed
	$(PY) -m kgroup demo

test: $(STAMP) chromium
	$(PY) -m pytest -q

# The analysis on a library scenario: three groups (eager, cooperative, static) through a rolling restart, the same
# restart under eager, cooperative and KIP-848's consumer protocol, then a seed sweep with network jitter; open
# kgroup-analysis/report.html, kgroup-analysis-protocols/report.html and kgroup-sweep/report.html.
analyze-demo: $(VENV)/.installed-spark
	$(PY) -m kgroup run scenarios/library/rolling-deploy.toml --out kgroup-runs/rolling-deploy
	$(PY) -m kgroup analyze kgroup-runs/rolling-deploy --out kgroup-analysis
	$(PY) -m kgroup run scenarios/library/rolling-deploy-protocols.toml --out kgroup-runs/rolling-deploy-protocols
	$(PY) -m kgroup analyze kgroup-runs/rolling-deploy-protocols --out kgroup-analysis-protocols
	$(PY) -m kgroup sweep scenarios/library/rolling-deploy.toml --seeds 20 --set network.jitter_ms=0,50 \
	  --out kgroup-sweep

bench: $(STAMP)
	$(PY) bench/protocol.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis kgroup-runs kgroup-analysis kgroup-analysis-protocols \
	  kgroup-sweep
