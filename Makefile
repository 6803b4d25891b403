# The two commands of the README. Each creates .venv and installs what it needs first.
#   make run   - the demo (a narrated run of the reference agent), then the server keeps
#                serving on the embedded SQLite default (./.outlast/demo/) until Ctrl-C
#   make test  - lint, types and the whole test suite (Postgres tests need a local server;
#                OUTLAST_REQUIRE_POSTGRES=1 makes them fail instead of skip)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: run test bench lint clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("outlast needs Python 3.11+, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[dev]"
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/outlast demo --serve

# Most tests wait on processes and sockets, so three at a time fit two cores; the tests
# that take the database away from everyone (marked serial) run alone, afterwards.
test: $(STAMP) lint
	$(BIN)/pytest -q -n 3 -m "not serial"
	$(BIN)/pytest -q -m serial

lint: $(STAMP)
	$(BIN)/ruff check outlast tests bench examples
	$(BIN)/ruff format --check outlast tests bench examples
	$(BIN)/mypy

# The benchmark suite (about 10 minutes; bench/README.md): results in bench/results/suite.*
bench: $(STAMP)
	$(BIN)/python bench/suite.py
	$(BIN)/python bench/supervisor_eval.py

clean:
	rm -rf $(VENV) .outlast .pytest_cache .mypy_cache .ruff_cache
