# The two set-up commands of the README: `make lab` runs the main job on the built-in local lab (containers + fixture
# mirror); `make test` runs every test. Both install and start what they need on a fresh Debian machine.
.PHONY: lab lab-down test lint unit setup release ee

lab: ## provision the local lab: containers + fixture mirror, site.yml, per-host summary
	tests/harness/lab.sh up

lab-down: ## remove the local lab's containers and stop the mirror
	tests/harness/lab.sh down

test: ## everything CI runs
	tests/run.sh

setup: ## host packages, Docker engine, base images, .venv
	tests/harness/host-setup.sh

lint: setup
	.venv/bin/yamllint -s . && PATH=$(CURDIR)/.venv/bin:$$PATH ansible-lint

unit: setup
	.venv/bin/python -m pytest -q collections/ansible_collections/gpulab/rocm/tests/unit

release: ## the collection tarball with the roles and playbooks: dist/release/gpulab-rocm-<version>.tar.gz (needs .venv: make setup)
	.venv/bin/python tests/tools/build_release.py

ee: ## the execution environment's image gpulab/rocm-ee:<version> on the Debian base, with this tree's release tarball (tests/ee/build.py: built only when its recipe changed)
	.venv/bin/python tests/ee/build.py
