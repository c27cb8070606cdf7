# Two commands do all the set-up on a fresh machine: `make render STACK=dev` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STACK  ?= dev
STAMP  := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

# GNU make exits 2 whenever a recipe fails, whatever the command's own exit code (3 a mandatory
# policy, 4 a CRD check, 1 a pr-report gate...). `run` keeps make's command echo off stdout (so
# `make pr-report > report.md` holds only the report) and names the command's code on stderr; a
# CI gate that needs the code itself runs the command (README, "Exit codes through make").
run = @$(1) || { code=$$?; echo "make $@: $(strip $(1)) exited $$code (make itself exits 2 on any failure)" >&2; exit $$code; }

.PHONY: install install-dev render test lint simulate tune bench docs preview up destroy clean pr-report reference \
        upgrade-plan preflight import mutation hostile-bench

# Re-install only when the pinned dependency lists change. The runtime (render, pulumi up) needs
# requirements.txt only; tests, linters and benchmarks add requirements-dev.txt.
$(STAMP): requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@$(PY) -m pip install --quiet -r requirements.txt >&2
	@touch $(STAMP)

$(DEV_STAMP): $(STAMP) requirements-dev.txt provisioner/pyproject.toml
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(DEV_STAMP)

install: $(STAMP)

install-dev: $(DEV_STAMP)

# Offline render: the real __main__.py under the SDK's mock monitor, then the policy pack over it.
render: $(STAMP)
	$(call run,$(PY) -m offline.render $(STACK))
	$(call run,$(PY) -m policies.check build/$(STACK))

# The layers (.importlinter), ruff (ruff.toml) and mypy (mypy.ini): CI fails when a layer is crossed.
lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

test: lint
	$(PY) -m pytest -q

simulate: render
	$(call run,$(PY) -m provisioner simulate -f build/$(STACK)/manifests -f examples/workloads)

# Cheaper NodePool requirements for WORKLOADS= (default examples/workloads), each change checked
# against the policy pack in every environment first (docs/cost.md).
tune: render
	$(call run,$(PY) -m offline.tune -f build/$(STACK)/manifests -f $(or $(WORKLOADS),examples/workloads))

bench: $(DEV_STAMP)
	$(PY) -m bench

# Pull-request report: the stack at BASE (a temporary git worktree) against the working tree, as
# Markdown: resource changes, drift (node counts with SNAPSHOT=), plan price of WORKLOADS=, policy
# findings. FAIL_ON=drift,policy makes it a CI gate (exit 1). See docs/pull-request-report.md.
pr-report: $(STAMP)
	$(if $(BASE),,$(error BASE is required, e.g. make pr-report STACK=dev BASE=origin/main))
	$(call run,$(PY) -m offline.pr_report $(STACK) --base $(BASE) $(if $(SNAPSHOT),--snapshot $(SNAPSHOT)) \
		$(if $(WORKLOADS),--workloads $(WORKLOADS)) $(if $(FAIL_ON),--fail-on $(FAIL_ON)) $(if $(TRACE),--trace $(TRACE)))
# Mutation testing (mutmut 3, configured in setup.cfg): one run per module, then the kill rates;
# then cosmic-ray over the config models, whose logic sits in pydantic validators (decorated methods,
# which mutmut 3 does not mutate). Long (tens of minutes on a busy machine); figures go to BENCHMARKS.md.
# CR_SAMPLE=N runs N randomly drawn mutants per module instead of all.
MUTATE ?= provisioner.scheduling.requirements provisioner.scheduling.topology components.config.nodepools \
          components.config.nodeclasses components.nodepools components.nodeclasses
CR_MODULES ?= components/config/nodepools.py components/config/nodeclasses.py
mutation: $(DEV_STAMP)
	for module in $(MUTATE); do $(VENV)/bin/mutmut run "$$module.*" || exit $$?; done
	$(PY) -m tools.mutation_report
	$(PY) -m tools.cosmic_ray_session run $(if $(CR_SAMPLE),--sample $(CR_SAMPLE)) $(CR_MODULES)

# Worst time and memory per hostile input (tests/hostile/corpus.py); figures in BENCHMARKS.md.
hostile-bench: $(DEV_STAMP)
	$(PY) -m tools.hostile_bench

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

# The per-release Karpenter data (IAM, interruption rules, chart defaults, CRD schemas, enums) the
# program carries, regenerated from the upstream files; commit the result.
REFERENCE_SRC ?= ../shared/reference/karpenter-versions
reference: $(STAMP)
	$(PY) -m components.reference.generate --from $(REFERENCE_SRC) --out components/reference/data --crds-out kubefacts/validation/crds

# What changes from the stack's pinned Karpenter release to TO, and the steps (docs/upgrades.md).
upgrade-plan: $(STAMP)
	@test -n "$(TO)" || { echo "usage: make upgrade-plan STACK=<stack> TO=<version>"; exit 2; }
	$(call run,$(PY) -m offline.upgrade $(STACK) --to $(TO))

# Read-only checks of the live cluster before moving it to TO (current kubeconfig context).
preflight: $(STAMP)
	@test -n "$(TO)" || { echo "usage: make preflight STACK=<stack> TO=<version>"; exit 2; }
	$(call run,$(PY) -m offline.preflight $(STACK) --to $(TO))
# Import existing NodePools/EC2NodeClasses: writes stacks/teams/$(TEAM).yaml and stacks/nodeclasses.yaml.
import: $(STAMP)
	@test -n "$(FROM)" -a -n "$(TEAM)" || { echo "usage: make import FROM=<file-or-folder> TEAM=<team>"; exit 2; }
	$(call run,$(PY) -m offline.importer --team $(TEAM) --out stacks $(FROM))
