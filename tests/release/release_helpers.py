"""Shared by the release tests (a name of its own: other conftest.py files exist in this tree)."""

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
COLLECTION = ROOT / "collections" / "ansible_collections" / "gpulab" / "rocm"
BIN = Path(sys.executable).parent
VERSION = yaml.safe_load((COLLECTION / "galaxy.yml").read_text())["version"]


def ansible_package_collections():
    """The folder that holds the `ansible` package's ansible_collections (community.docker, ansible.posix, ...)."""
    site = Path(sysconfig.get_paths()["purelib"])
    if not (site / "ansible_collections" / "community" / "docker" / "MANIFEST.json").is_file():
        raise RuntimeError(f"the `ansible` package's collections are not in {site} (pip install -r requirements-test.txt)")
    return site


class Outside:
    """Runs Ansible's commands as someone who installed the tarball, away from this checkout."""

    def __init__(self, home):
        self.home = home
        self.collections = home / "collections"
        self.cwd = home / "work"
        self.cwd.mkdir(parents=True)
        (home / "no-roles").mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_") and k != "PYTHONPATH"}
        env.update(ANSIBLE_COLLECTIONS_PATH=f"{self.collections}{os.pathsep}{ansible_package_collections()}",
                   ANSIBLE_ROLES_PATH=str(home / "no-roles"), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
                   ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0")
        self.env = env

    def run(self, tool, *args, check=True, timeout=600):
        result = subprocess.run([str(BIN / tool), *map(str, args)], cwd=self.cwd, env=self.env,
                                capture_output=True, text=True, timeout=timeout)
        if check and result.returncode != 0:
            raise AssertionError(f"{tool} {' '.join(map(str, args))} failed (rc {result.returncode}):\n"
                                 f"{result.stdout[-6000:]}\n{result.stderr[-3000:]}")
        return result
