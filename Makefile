# Two commands do all the set-up on a fresh machine: `make render STACK=dev` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STACK  ?= dev
STAMP  := $(VENV)/.installed

.PHONY: install render test simulate bench docs preview up destroy clean mutation hostile-bench

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

# Mutation testing (mutmut 3, configured in setup.cfg): one run per module, then the kill rates.
# Long (tens of minutes on a busy machine); figures go to BENCHMARKS.md.
MUTATE ?= provisioner.scheduling.requirements provisioner.scheduling.topology components.config.nodepools \
          components.config.nodeclasses components.nodepools components.nodeclasses
mutation: $(STAMP)
	for module in $(MUTATE); do $(VENV)/bin/mutmut run "$$module.*" || exit $$?; done
	$(PY) -m tests.mutation_report

# Worst time and memory per hostile input (tests/hostile/corpus.py); figures in BENCHMARKS.md.
hostile-bench: $(STAMP)
	$(PY) -m tests.hostile.bench

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
