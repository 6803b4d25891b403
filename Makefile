# The two commands of the README. Each creates .venv and installs what it needs first.
#   make run   - the demo (a narrated run of the reference agent), then the server keeps
#                serving on the embedded SQLite default (./.outlast/demo/) until Ctrl-C;
#                installs the package only, not the dev extra
#   make test  - lint, types, the documentation site's build and the whole test suite
#                (Postgres tests need a local server; OUTLAST_REQUIRE_POSTGRES=1 makes them
#                fail instead of skip)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SUM    := $(shell cksum pyproject.toml | cut -d' ' -f1)
# What is installed, for this pyproject.toml: `run` is the package alone (the server and
# the demo), `dev` adds the dev extra (tests, linters, Studio's CLI, Playwright). A changed
# pyproject.toml has another checksum, so both stamps are missing and pip runs again.
RUN_STAMP := $(VENV)/.installed-run-$(SUM)
DEV_STAMP := $(VENV)/.installed-dev-$(SUM)

.PHONY: run test bench lint clean venv

venv:
	@$(PYTHON) -c 'import sys; sys.exit("outlast needs Python 3.11+, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)

$(RUN_STAMP): pyproject.toml
	@$(MAKE) --no-print-directory venv
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e .
	rm -f $(VENV)/.installed-run-*
	touch $(RUN_STAMP)

# The dev extra includes the package, so it counts as the run install too.
$(DEV_STAMP): pyproject.toml
	@$(MAKE) --no-print-directory venv
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	rm -f $(VENV)/.installed-*
	touch $(DEV_STAMP) $(RUN_STAMP)

run: $(RUN_STAMP)
	$(BIN)/outlast demo --serve

# Most tests wait on processes and sockets, so three at a time fit two cores; the tests
# that take the database away from everyone (marked serial) run alone, afterwards.
test: $(DEV_STAMP) lint
	$(BIN)/pytest -q -n 3 -m "not serial"
	$(BIN)/pytest -q -m serial

# The site's build is a check too: --strict fails on a broken link or anchor, a page missing
# from the nav, and (docs/hooks/reference.py) a setting or event type without a description.
lint: $(DEV_STAMP)
	$(BIN)/ruff check outlast tests bench examples docs/hooks
	$(BIN)/ruff format --check outlast tests bench examples docs/hooks
	$(BIN)/mypy
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# The benchmark suite (about 10 minutes; bench/README.md): results in bench/results/suite.*
bench: $(DEV_STAMP)
	$(BIN)/python bench/suite.py
	$(BIN)/python bench/supervisor_eval.py

clean:
	rm -rf $(VENV) .outlast .pytest_cache .mypy_cache .ruff_cache site
