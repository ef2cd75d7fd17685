# Two entry points on a fresh machine (see README): `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test ui chromium

$(BIN)/sdc: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# Headless Chromium (Debian's package) for the UI and report tests.
chromium:
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium >/dev/null; }

demo: $(BIN)/sdc
	$(BIN)/sdc demo

ui: $(BIN)/sdc
	$(BIN)/sdc ui

test: $(BIN)/sdc chromium
	$(BIN)/python -m pytest -q
