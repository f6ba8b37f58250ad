# Single entry point for development, tests and the demo.
#   make test   everything CI runs (lint, docs, sanity, unit, core-versions, matrix, build, galaxy-importer, every Molecule scenario)
#   make demo   deploy the collection to a local container host
SHELL := /bin/bash
PYTHON ?= python3
VENV := $(CURDIR)/.venv
BIN := $(VENV)/bin
COLLECTIONS := $(CURDIR)/.build/collections
export PATH := $(BIN):$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)

# Scenarios, in the order they run; those also run on arm64 (qemu) below.
SCENARIOS ?= smoke base nvidia ascend default reliability monitoring gateway multinode artifact container
ARM64_SCENARIOS ?= smoke base
# Scenarios with several hosts (every platform runs; they share the engine
# image that molecule/images/engine.sh builds).
MULTI_HOST_SCENARIOS ?= monitoring gateway multinode
# Scenarios without a vLLM server: they run in the background beside base.
BESIDE_SCENARIOS ?= smoke nvidia ascend

.PHONY: help venv collection-link testbed images lint sanity unit unit-fast core-versions matrix molecule test demo build galaxy-importer surveys compat-table changelog release docs role-readmes clean

help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

$(BIN)/.installed: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $@

venv: $(BIN)/.installed ## Create .venv with the pinned dev dependencies

collection-link: ## Make this checkout resolvable as kunpeng.vllm
	@mkdir -p $(COLLECTIONS)/ansible_collections/kunpeng
	@ln -sfn ../../../.. $(COLLECTIONS)/ansible_collections/kunpeng/vllm

testbed: ## Docker engine and qemu-aarch64 binfmt (installs them as root when missing)
	bash scripts/testbed.sh

images: testbed ## Offline Debian 12 systemd images (amd64, arm64) and the shared CPU engine image
	bash molecule/images/build.sh
	bash molecule/images/engine.sh

lint: venv collection-link ## yamllint, ansible-lint (production), ruff
	$(BIN)/yamllint -s .
	$(BIN)/ansible-lint --profile production
	$(BIN)/ruff check .

sanity: venv ## ansible-test sanity on a copy under ansible_collections/kunpeng/vllm
	VENV=$(VENV) bash scripts/sanity.sh

unit: venv ## pytest unit tests
	$(BIN)/python -m pytest tests/unit -q -n 2

unit-fast: venv ## pytest unit tests without the ones that run ansible-playbook (the inner loop; CI runs all)
	$(BIN)/python -m pytest tests/unit -q -n 2 -m "not playbook"

core-versions: venv ## Unit and sanity on the other ansible-core minors meta/runtime.yml claims (a venv each, .build/core-X.Y)
	VENV=$(VENV) bash scripts/core-versions.sh

matrix: venv collection-link ## Resolve every version-matrix row's install sets against PyPI (uv, no install)
	$(BIN)/python scripts/matrix/resolve.py --uv $(BIN)/uv

molecule: venv collection-link images ## Every Molecule scenario
	VENV=$(VENV) SCENARIOS="$(SCENARIOS)" ARM64_SCENARIOS="$(ARM64_SCENARIOS)" MULTI_HOST_SCENARIOS="$(MULTI_HOST_SCENARIOS)" BESIDE_SCENARIOS="$(BESIDE_SCENARIOS)" \
	  bash scripts/run-tests.sh molecule

test: venv collection-link ## Everything CI runs, with a per-stage summary
	VENV=$(VENV) SCENARIOS="$(SCENARIOS)" ARM64_SCENARIOS="$(ARM64_SCENARIOS)" MULTI_HOST_SCENARIOS="$(MULTI_HOST_SCENARIOS)" BESIDE_SCENARIOS="$(BESIDE_SCENARIOS)" \
	  bash scripts/run-tests.sh all

# The demo runs one amd64 container from the Debian image: no arm64 image
# (a qemu debootstrap of minutes) and no shared engine image.  scripts/demo.sh
# builds that image while it prepares the model and the wheelhouse.
demo: venv collection-link testbed ## Deploy to a local container host
	bash scripts/demo.sh

build: venv ## Build the collection tarball
	$(BIN)/ansible-galaxy collection build --force

galaxy-importer: venv ## Build the tarball into .build/dist and import it with galaxy-importer (offline; warnings fail)
	$(BIN)/ansible-galaxy collection build --force --output-path .build/dist
	bash scripts/galaxy-importer.sh

compat-table: venv collection-link ## Regenerate docs/compat-matrix.md from the planner's version matrix
	$(BIN)/python scripts/compat_table.py

surveys: venv collection-link ## Regenerate the AWX survey specs (docs/awx-surveys/) from the roles' argument_specs
	$(BIN)/python scripts/awx_survey.py

docs: venv ## Build the docsite into .build/docs/html (antsibull-docs, Sphinx; any warning fails)
	$(BIN)/python scripts/docsite.py

role-readmes: venv ## Regenerate each role README's variable table from its meta/argument_specs.yml
	$(BIN)/python scripts/role_readme.py

changelog: venv ## Re-render CHANGELOG.rst from changelogs/changelog.yaml (a release is make release)
	$(BIN)/antsibull-changelog generate

release: venv ## Release galaxy.yml's version: checks, changelog from the fragments, commit, tag v<version> (pushes nothing)
	$(BIN)/python scripts/release.py --antsibull-changelog $(BIN)/antsibull-changelog

clean:
	rm -rf .build reports kunpeng-vllm-*.tar.gz
