# The two set-up commands of the README: `make demo` and `make test`.
# Both create .venv with python3 if it is missing and (re)install when pyproject.toml changes.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
DEMO   := demo

.PHONY: demo test bench docs browser install clean textgames textgames-checkpoints

# pip's own chatter (editable-install warnings, index notes) goes to $(PIPLOG); it is shown only when pip fails.
PIPLOG := $(VENV)/pip.log
PIP    = $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile
# The bytecode of eebench and of every installed package, written at install by compileall on every core. pip
# compiles one file at a time: 50 s of a fresh test install's 88 s on 2 cores, against 26 s so. eebench's own: an
# editable install leaves it to the first import, which does not write it where PYTHONDONTWRITEBYTECODE is set, and
# every command would then compile eebench again (0.1-0.2 s of each start). A package's file that does not compile
# is left as pip leaves it (its import says so); eebench's own would fail the import that follows (WARM). The
# packages' own test suites (a quarter of their files) are never imported: not compiled.
COMPILE = $(BIN)/python -m compileall -q -j 0 -x '/tests/' eebench $(VENV)/lib >>$(PIPLOG) 2>&1 || true
# grading's numba kernels compiled into their disk cache once, here, not by the first large grade (10-15 s); for
# `make test` too: left to the tests, both test workers compiled them (cold cache 191 s of pytest, against 16 s of
# warming and 154 s of pytest)
WARM = $(BIN)/python -m eebench.evaluator.warm

$(BIN)/python:
	@echo "creating $(VENV) with $(PYTHON)"
	@$(PYTHON) -m venv $(VENV)
	@$(PIP) --upgrade pip >$(PIPLOG) 2>&1 || { cat $(PIPLOG); exit 1; }

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	@echo "installing eebench into $(VENV) (pip's log: $(PIPLOG))"
	@$(PIP) -e . >$(PIPLOG) 2>&1 || { cat $(PIPLOG); exit 1; }
	@$(COMPILE)
	@$(WARM)
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	@echo "installing eebench and its test tools into $(VENV) (pip's log: $(PIPLOG))"
	@$(PIP) -e '.[test]' >$(PIPLOG) 2>&1 || { cat $(PIPLOG); exit 1; }
	@$(COMPILE)
	@$(WARM)
	@touch $@ $(VENV)/.installed

install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(BIN)/eebench publish park2026-main --version 1.0.0 --out $(DEMO)/park2026-main-1.0.0
	$(BIN)/eebench play $(DEMO)/park2026-main-1.0.0 --agent random   --seed 0 --out $(DEMO)/runs/random.jsonl
	$(BIN)/eebench play $(DEMO)/park2026-main-1.0.0 --agent frontier --seed 0 --out $(DEMO)/runs/frontier.jsonl
	$(BIN)/eebench play $(DEMO)/park2026-main-1.0.0 --agent oracle   --seed 0 --out $(DEMO)/runs/oracle.jsonl
	$(BIN)/eebench publish grams2025-rooms --version 1.0.0 --out $(DEMO)/grams2025-rooms-1.0.0
	$(BIN)/eebench play $(DEMO)/grams2025-rooms-1.0.0 --agent random   --seed 0 --out $(DEMO)/rooms-runs/random.jsonl
	$(BIN)/eebench play $(DEMO)/grams2025-rooms-1.0.0 --agent explorer --seed 0 --out $(DEMO)/rooms-runs/explorer.jsonl
	$(BIN)/eebench play $(DEMO)/grams2025-rooms-1.0.0 --agent oracle   --seed 0 --out $(DEMO)/rooms-runs/oracle.jsonl
	rm -f $(DEMO)/results.duckdb
	$(BIN)/eebench grade $(DEMO)/runs/*.jsonl --bench $(DEMO)/park2026-main-1.0.0 --db $(DEMO)/results.duckdb
	$(BIN)/eebench grade $(DEMO)/rooms-runs/*.jsonl --bench $(DEMO)/grams2025-rooms-1.0.0 --db $(DEMO)/results.duckdb
	$(BIN)/eebench query --db $(DEMO)/results.duckdb "SELECT agent_name, episodes, success_rate, \
	    mean_explore_error, mean_exploit_error, mean_steps_success FROM agent_summary"
	$(BIN)/eebench query --db $(DEMO)/results.duckdb "SELECT agent_name, trajectories, episodes, \
	    explore_gap_last, exploit_gap_last, coverage, redundancy, sample_efficiency FROM gaps_summary"
	$(BIN)/eebench report --db $(DEMO)/results.duckdb --bench $(DEMO)/park2026-main-1.0.0 \
	    --bench $(DEMO)/grams2025-rooms-1.0.0 --out $(DEMO)/report.html
	@echo "report: $(abspath $(DEMO)/report.html)"

# Debian's Chromium and its driver for the browser tests (tests/report/), installed when missing and root;
# otherwise those tests skip with the reason.
browser:
	@if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing chromium and chromium-driver for the browser tests"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver) >/dev/null \
	      || echo "could not install chromium: the browser tests will skip"; \
	  else echo "no chromium and not root: the browser tests will skip"; fi; \
	fi

# one pytest worker per core (pytest-xdist); a test file's tests stay together on one worker (the browser tests
# share a page from test to test, and module fixtures are built once)
test: $(VENV)/.installed-test browser
	$(BIN)/python -m pytest -q -n auto --dist loadfile

bench: $(VENV)/.installed-test browser
	$(BIN)/python -m benchmarks

# the README's screenshots: a replay and Figure 1 of a run of several models, taken in headless Chromium
docs: $(VENV)/.installed-test browser
	$(BIN)/python -m docs.screenshots

clean:
	rm -rf $(VENV) $(DEMO) *.egg-info .pytest_cache .hypothesis

# The real text-game logs of ../shared/data/text-games, converted and graded for coverage (README: "Coverage on real
# text-game logs"); textgames-checkpoints regenerates the checkpoint files from the same data.
TEXTGAMES_DATA ?= ../shared/data/text-games
TEXTGAMES      := textgames
TG_CHECKPOINTS := eebench/specs/checkpoints/text-games

textgames: $(VENV)/.installed
	rm -rf $(TEXTGAMES) && mkdir -p $(TEXTGAMES)
	$(BIN)/eebench convert $(TEXTGAMES_DATA)/balrog-textworld-llama-3.1-8b --out $(TEXTGAMES)/balrog-textworld.jsonl
	$(BIN)/eebench convert $(TEXTGAMES_DATA)/balrog-expt-coincollector/AgentCC/results --out $(TEXTGAMES)/agentcc.jsonl
	$(BIN)/eebench convert $(TEXTGAMES_DATA)/alfworld-textcraft-adapt/results --out $(TEXTGAMES)/adapt.jsonl
	$(BIN)/eebench convert $(TEXTGAMES_DATA)/scienceworld-oracle --agent-name oracle --out $(TEXTGAMES)/scienceworld.jsonl
	$(BIN)/eebench grade $(TEXTGAMES)/*.jsonl --checkpoints $(TG_CHECKPOINTS)/textworld.yaml \
	    --checkpoints $(TG_CHECKPOINTS)/alfworld.yaml --checkpoints $(TG_CHECKPOINTS)/scienceworld.yaml \
	    --db $(TEXTGAMES)/results.duckdb
	$(BIN)/eebench query --db $(TEXTGAMES)/results.duckdb "$$(cat scripts/textgames.sql)"

textgames-checkpoints: $(VENV)/.installed
	$(BIN)/python scripts/textgames_checkpoints.py $(TEXTGAMES_DATA) $(TG_CHECKPOINTS)
