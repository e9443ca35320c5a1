# Blackwell serving-failure knowledge base. `make help` lists the targets.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
LOCK := requirements.lock
TEST_LOCK := requirements-test.lock
WHEELHOUSE := $(VENV)/wheelhouse
REPRO_WHEELHOUSE := $(VENV)/repro-wheelhouse
# The one tool release whose reproduction the tests run end to end (tests/test_repro.py,
# tests/test_wheel_install.py): ptxas 12.8 from a cu12 wheel, 40 MB. Those tests check that the
# folder holds their entry's release (tools/wheel_install.py, missing_repro_wheel).
REPRO_WHEEL := nvidia-cuda-nvcc-cu12==12.8.93
PIP_INSTALL := $(BIN)/python -m pip install -q --disable-pip-version-check
CHROMIUM ?= /usr/bin/chromium
HOST ?= 127.0.0.1
PORT ?= 8000
SITE_DIR ?= site

.DEFAULT_GOAL := help
.PHONY: help setup lock check schema site serve test test-fast chromium clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

# Every file pip downloads must match a hash in the locks; --require-hashes also refuses any
# dependency they do not pin, and --only-binary :all: runs no package's build code (an sdist's
# build would fetch its build tools unhashed). kb itself cannot be hash-checked (a folder is no
# single file), so it installs in a call of its own that can fetch nothing: --no-index, --no-deps,
# and --no-build-isolation so that setuptools comes from requirements.lock, hashed, instead of an
# unpinned download into an isolated build environment. The lock holds the site extra too
# (`.[site]`: mkdocs, Material, Pagefind, nh3); an install outside a checkout needs only the
# runtime (README: "Only want the probe?"). The wheel's command is `bwkb`; a checkout calls it
# `kb`, linked here.
$(STAMP): pyproject.toml $(LOCK)
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --require-hashes --only-binary :all: -r $(LOCK)
	$(PIP_INSTALL) --no-index --no-deps --no-build-isolation -e '.[site]'
	ln -sf bwkb $(BIN)/kb
	touch $@

# The locked wheels (runtime and site extra), hash-checked as they download, in a folder of their
# own: tests/test_wheel_install.py installs the built wheel from it into a fresh venv with
# --no-index, and bench/install_size.py a slim and a full install, so neither needs the network.
# Emptied first, so that no wheel of an older lock is left to be picked.
$(WHEELHOUSE)/.filled: $(STAMP) $(LOCK)
	rm -rf $(WHEELHOUSE)
	$(BIN)/python -m pip download -q --disable-pip-version-check --require-hashes --only-binary :all: -d $(WHEELHOUSE) -r $(LOCK)
	touch $@

# The wheel of one pinned tool release (REPRO_WHEEL, this system's), hash-checked against its lines
# of kb/repro/tools.lock as it downloads, in a folder of its own: the end-to-end reproduction tests
# run `kb repro --wheelhouse` from it, which installs with --no-index, so no test downloads anything.
# The Makefile is a prerequisite of those lines because it names the release.
$(REPRO_WHEELHOUSE)/wheel.lock: $(STAMP) kb/repro/tools.lock Makefile
	mkdir -p $(REPRO_WHEELHOUSE)
	$(BIN)/python tools/repro_lock.py $(REPRO_WHEEL) > $@.new
	mv $@.new $@

# Emptied of wheels first, so that no wheel of an older pin is left to be picked.
$(REPRO_WHEELHOUSE)/.filled: $(REPRO_WHEELHOUSE)/wheel.lock
	rm -f $(REPRO_WHEELHOUSE)/*.whl $@
	$(BIN)/python -m pip download -q --disable-pip-version-check --require-hashes --no-deps --only-binary :all: -d $(REPRO_WHEELHOUSE) -r $(REPRO_WHEELHOUSE)/wheel.lock
	touch $@

# The test tools on top: both locks in one call, so pip checks the whole set together.
$(TEST_STAMP): $(STAMP) $(TEST_LOCK) $(WHEELHOUSE)/.filled $(REPRO_WHEELHOUSE)/.filled
	$(PIP_INSTALL) --require-hashes --only-binary :all: -r $(LOCK) -r $(TEST_LOCK)
	touch $@

setup: $(STAMP)  ## create .venv/ with the pinned runtime dependencies and the kb command

lock:  ## rewrite requirements*.lock with every file's hash after changing a pin in requirements*.in
	$(PYTHON) tools/lock.py

chromium:  ## install Debian's chromium for the browser tests (needs root or sudo)
	@test -x $(CHROMIUM) || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium; }

check: $(STAMP)  ## validate and lint every entry
	$(BIN)/kb check

schema: $(STAMP)  ## print the JSON Schema of an entry
	$(BIN)/kb schema

site: $(STAMP)  ## build the site for deployment into site/: make site SITE_URL=https://example.org/path/
	@test -n "$(SITE_URL)" || { echo "make site: set SITE_URL to the public address the site is served from," \
	  "e.g. make site SITE_URL=https://example.org/kb/ (make serve previews it locally)" >&2; exit 2; }
	$(BIN)/kb build -d $(SITE_DIR) --site-url "$(SITE_URL)" $(if $(REPO_URL),--repo-url "$(REPO_URL)")

serve: $(STAMP)  ## set everything up, build and serve the site with search on http://$(HOST):$(PORT)
	$(BIN)/kb serve -a $(HOST):$(PORT)

test: $(TEST_STAMP) chromium  ## set everything up and run the tests (browser tests included)
	$(BIN)/kb check
	$(BIN)/python -m pytest

# The quick run while working: no Chromium, no site build, nothing over about a second
# (the markers are in pyproject.toml), Hypothesis at its `fast` profile (tests/conftest.py).
test-fast: $(TEST_STAMP)  ## run the tests that take under a second each (about a minute); make test before a PR
	HYPOTHESIS_PROFILE=fast $(BIN)/python -m pytest -m "not browser and not build and not slow"

clean:  ## remove the built site and caches (keeps .venv/)
	rm -rf site .cache .pytest_cache
