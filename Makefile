# Blackwell serving-failure knowledge base. `make help` lists the targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CHROMIUM ?= /usr/bin/chromium
HOST ?= 127.0.0.1
PORT ?= 8000

.DEFAULT_GOAL := help
.PHONY: help setup check schema site serve test chromium clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -r requirements.lock
	$(BIN)/python -m pip install -q --disable-pip-version-check --no-deps -e .
	touch $@

setup: $(STAMP)  ## create .venv/ with the pinned dependencies and the kb command

chromium:  ## install Debian's chromium for the browser tests (needs root or sudo)
	@test -x $(CHROMIUM) || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

check: $(STAMP)  ## validate and lint every entry
	$(BIN)/kb check

schema: $(STAMP)  ## print the JSON Schema of an entry
	$(BIN)/kb schema

site: $(STAMP)  ## build the site with its search index into site/
	$(BIN)/kb build -d site

serve: $(STAMP)  ## set everything up, build and serve the site with search on http://$(HOST):$(PORT)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict -a $(HOST):$(PORT)

test: $(STAMP) chromium  ## set everything up and run the tests (browser tests included)
	$(BIN)/kb check
	$(BIN)/python -m pytest

clean:  ## remove the built site and caches (keeps .venv/)
	rm -rf site .cache .pytest_cache
