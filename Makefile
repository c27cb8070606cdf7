# Two commands do all the set-up on a fresh machine: `make render STACK=dev` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STACK  ?= dev
STAMP  := $(VENV)/.installed

.PHONY: install render test simulate bench docs preview up destroy clean import

# Re-install only when the pinned dependency lists change.
$(STAMP): requirements.txt provisioner/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $(STAMP)

install: $(STAMP)

# Offline render: the real __main__.py under the SDK's mock monitor, then the policy pack over it.
render: $(STAMP)
	$(PY) -m offline.render $(STACK)
	$(PY) -m policies.check build/$(STACK)

test: $(STAMP)
	$(PY) -m pytest -q

simulate: render
	$(PY) -m provisioner simulate -f build/$(STACK)/manifests -f examples/workloads

bench: $(STAMP)
	$(PY) -m provisioner.bench

# The configuration reference is generated from the config models' docstrings.
docs: $(STAMP)
	$(PY) -m components.config.reference > docs/configuration.md

# The real thing: needs the Pulumi CLI, a state backend and AWS credentials.
preview: $(STAMP)
	pulumi preview --stack $(STACK) --policy-pack policies

up: $(STAMP)
	pulumi up --stack $(STACK) --policy-pack policies

destroy: $(STAMP)
	pulumi destroy --stack $(STACK)

clean:
	rm -rf build

# Import existing NodePools/EC2NodeClasses: writes stacks/teams/$(TEAM).yaml and stacks/nodeclasses.yaml.
import: $(STAMP)
	@test -n "$(FROM)" -a -n "$(TEAM)" || { echo "usage: make import FROM=<file-or-folder> TEAM=<team>"; exit 2; }
	$(PY) -m components.config.importer --team $(TEAM) --out stacks $(FROM)
