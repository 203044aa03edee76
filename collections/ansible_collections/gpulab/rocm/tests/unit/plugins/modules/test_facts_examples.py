"""The example outputs docs/facts.md links (fixtures/examples/, README there) are what the modules return now: each
facts module runs over its capture, with the page's command, and its facts are compared."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

COLLECTION = Path(__file__).resolve().parents[4]
ROOT = COLLECTION.parents[3]
FIXTURES = COLLECTION / "tests" / "unit" / "plugins" / "module_utils" / "fixtures"
EXAMPLES = FIXTURES / "examples"
ANSIBLE = shutil.which("ansible") or shutil.which("ansible", path=os.path.dirname(sys.executable))
# (module, capture): the capture's name is the example's.
CASES = [
    ("rocminfo_facts", "rocminfo/gfx942-mi300x-vf-rocm6.4.0.txt"),
    ("rocm_smi_facts", "rocm-smi/json-telegraf-flags-mi50-32gb-driver5.9.17-card0-only.json"),
    ("rocm_smi_facts", "rocm-smi/default-rocm6.3-2gpu-7900xtx-7800xt-monitor-warnings.txt"),
    ("amd_smi_facts", "amd-smi/static-json-rx6600-navi23-proxmox-bare-array.json"),
    ("amd_smi_facts", "amd-smi/metric-text-8x-mi300x-first-2-gpus.txt"),
]


def example(module, capture):
    return EXAMPLES / module / (Path(capture).name.rsplit(".", 1)[0] + ".yml")


@pytest.mark.skipif(ANSIBLE is None, reason="needs ansible")
@pytest.mark.parametrize("module, capture", CASES, ids=[capture for _module, capture in CASES])
def test_the_example_is_the_module_s_output_now(module, capture):
    # The page's command, from the project root (the facts keep the src path as given, as their source).
    src = str((FIXTURES / capture).relative_to(ROOT))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(ROOT / "collections"), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="ansible.posix.json", ANSIBLE_LOCALHOST_WARNING="0")
    proc = subprocess.run([ANSIBLE, "localhost", "-c", "local", "-m", "gpulab.rocm." + module, "-a", "src=" + src],
                          capture_output=True, text=True, cwd=str(ROOT), env=env, timeout=120, check=False)
    got = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    documented = yaml.safe_load(example(module, capture).read_text())
    assert got["ansible_facts"] == documented["ansible_facts"], "stale: %s" % example(module, capture)


def test_every_example_file_has_its_case():
    files = sorted(str(path.relative_to(EXAMPLES)) for path in EXAMPLES.glob("*/*.yml"))
    assert files == sorted(str(example(module, capture).relative_to(EXAMPLES)) for module, capture in CASES)
