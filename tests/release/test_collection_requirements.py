"""collections/requirements.yml lists exactly the collections this project uses, at ranges that start at the
versions the tests run (those inside the pinned `ansible` package) and end before their next major version.

"Used" means a name ns.coll.plugin, anywhere in the project's YAML, Jinja, Python, shell and config files (roles,
playbooks, site.yml, molecule, inventories, tests, the collection's plugins), that names a real plugin, role or
playbook of an installed collection (so `awx.lab.example` or `rocm.gpg.key` are not mistaken for one), plus what
Molecule's docker driver requires for the scenarios that use it."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.galaxy.dependency_resolution.versioning import meets_requirements

from release_helpers import ROOT, ansible_package_collections

REQUIREMENTS = ROOT / "collections" / "requirements.yml"
SUFFIXES = {".yml", ".yaml", ".j2", ".py", ".sh", ".cfg", ".ini"}
# Not the project's code: environments, caches, build output, prose, and the links to roles/ and collections/.
SKIP = {".git", ".venv", ".cache", "dist", "docs", ".whl", "__pycache__", "validation-reports", "fleet-report"}
NAME = re.compile(r"\b([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\b")
INSTALLED = ansible_package_collections() / "ansible_collections"


def installed_collections():
    found = {f"{ns.name}.{coll.name}": coll for ns in INSTALLED.iterdir() if ns.is_dir()
             for coll in ns.iterdir() if (coll / "MANIFEST.json").is_file()}
    found["gpulab.rocm"] = ROOT / "collections" / "ansible_collections" / "gpulab" / "rocm"
    return found


def provides(collection, name):
    """Whether COLLECTION (a folder) has a plugin, role or playbook called NAME, or routes that name."""
    plugins = collection / "plugins"
    if plugins.is_dir() and any((kind / f"{name}{ext}").is_file() for kind in plugins.iterdir()
                                for ext in (".py", ".yml", ".yaml", ".ps1")):
        return True
    if (collection / "roles" / name).is_dir() or (collection / "playbooks" / f"{name}.yml").is_file():
        return True
    runtime = collection / "meta" / "runtime.yml"
    routing = (yaml.safe_load(runtime.read_text()) or {}).get("plugin_routing", {}) if runtime.is_file() else {}
    return any(name in (entries or {}) for entries in routing.values())


def uses_in(text, collections):
    """The collections whose plugins TEXT names (ansible.builtin aside)."""
    return {f"{ns}.{coll}" for ns, coll, name in NAME.findall(text)
            if f"{ns}.{coll}" in collections and f"{ns}.{coll}" != "ansible.builtin"
            and provides(collections[f"{ns}.{coll}"], name)}


def project_files():
    vendored = ROOT / "collections" / "ansible_collections"
    for folder, dirs, files in os.walk(ROOT):
        here = Path(folder)
        dirs[:] = [d for d in dirs if d not in SKIP and not (here == vendored and d != "gpulab")]
        for name in files:
            # This file's own samples (test_finds_uses_and_ignores_lookalikes) are no use.
            if Path(name).suffix in SUFFIXES and here / name != Path(__file__).resolve():
                yield here / name


def molecule_driver_needs():
    """What Molecule's docker driver asks for (its required_collections), for the scenarios that use it. Asked in a
    subprocess: importing Molecule sets ANSIBLE_FORCE_COLOR in the importing process's environment."""
    asked = subprocess.run([sys.executable, "-c", "import json; from molecule_plugins.docker.driver import Docker; "
                            "print(json.dumps(Docker.required_collections.fget(None)))"],
                           capture_output=True, text=True, check=True, timeout=60)
    required = json.loads(asked.stdout)
    needs = {}
    for scenario in sorted(ROOT.glob("molecule/*/molecule.yml")):
        if (yaml.safe_load(scenario.read_text()).get("driver") or {}).get("name") == "docker":
            for name, minimum in required.items():
                needs.setdefault(name, (minimum, []))[1].append(scenario.parent.name)
    return needs


@pytest.fixture(scope="module")
def listed():
    entries = yaml.safe_load(REQUIREMENTS.read_text())["collections"]
    names = [entry["name"] for entry in entries]
    assert len(names) == len(set(names)), "a collection is listed twice"
    assert all(set(entry) == {"name", "version"} for entry in entries), "each entry: name and version, nothing else"
    return {entry["name"]: entry["version"] for entry in entries}


def test_lists_exactly_the_collections_used(listed):
    collections = installed_collections()
    used = {}
    for path in project_files():
        for name in uses_in(path.read_text(errors="replace"), collections):
            used.setdefault(name, []).append(str(path.relative_to(ROOT)))
    for name, (_minimum, scenarios) in molecule_driver_needs().items():
        used.setdefault(name, []).append(f"Molecule's docker driver ({', '.join(scenarios)})")
    used.pop("gpulab.rocm", None)  # in-tree
    missing = {name: sorted(where)[:5] for name, where in used.items() if name not in listed}
    unused = sorted(set(listed) - set(used))
    assert not missing, f"used but not in collections/requirements.yml: {missing}"
    assert not unused, f"in collections/requirements.yml but used nowhere: {unused}"


def test_ranges_start_at_the_tested_versions(listed):
    collections = installed_collections()
    for name, spec in listed.items():
        assert name in collections, f"{name} is not in the pinned `ansible` package: the tests never run it"
        version = yaml.safe_load((collections[name] / "MANIFEST.json").read_text())["collection_info"]["version"]
        major = int(version.split(".")[0])
        assert spec == f">={version},<{major + 1}.0.0", f"{name}: {spec!r}, the tests run {version}"
        assert meets_requirements(version, spec)
    for name, (minimum, _scenarios) in molecule_driver_needs().items():
        assert meets_requirements(listed[name].split(",")[0][2:], f">={minimum}"), f"Molecule wants {name}>={minimum}"


def test_finds_uses_and_ignores_lookalikes():
    collections = installed_collections()
    text = """
- name: A filter, a lookup, a module, a connection, a callback
  ansible.builtin.debug:
    msg: "{{ data | community.general.json_query('a') }} {{ lookup('community.general.random_string') }}"
  ansible.posix.mount: {path: /mnt}
  vars: {ansible_connection: community.docker.docker}
  environment: {ANSIBLE_STDOUT_CALLBACK: awx.awx.nothing_like_this}
# not plugins: awx.lab.example, rocm.gpg.key, ansible.module_utils.basic, gpulab.rocm.plugins, community.general.nope
"""
    assert uses_in(text, collections) == {"community.general", "ansible.posix", "community.docker"}
    assert uses_in("{{ x | gpulab.rocm.apt_failure }}", collections) == {"gpulab.rocm"}
