"""The release tarball (tests/tools/build_release.py, `make release`): the roles and playbooks are in it as collection
content, copied from the top-level source unchanged (site.yml's imports aside), and the installed tarball works
alone, outside this checkout: the playbooks load by their collection names, the roles resolve from the collection,
and every gpulab.rocm.* name the roles and playbooks use is something the collection ships."""

import importlib.util
import json
import re
import tarfile

import pytest
import yaml

from release_helpers import COLLECTION, ROOT, VERSION

ROLES = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "meta" / "main.yml").is_file())
PLAYBOOKS = sorted([p.stem for p in (ROOT / "playbooks").glob("*.yml")] + ["site"])
REFERENCE = re.compile(r"\bgpulab\.rocm\.([a-z_][a-z0-9_]*)\b")


def load_builder():
    spec = importlib.util.spec_from_file_location("build_release", ROOT / "tests" / "tools" / "build_release.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tar_members(tarball):
    with tarfile.open(tarball) as tar:
        return {m.name: m for m in tar.getmembers()}, {m.name: tar.extractfile(m).read()
                                                        for m in tar.getmembers() if m.isfile()}


def test_tarball_carries_the_roles_and_playbooks(release):
    tarball, _ = release
    members, data = tar_members(tarball)
    for role in ROLES:
        for path in (ROOT / "roles" / role).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                name = f"roles/{role}/{path.relative_to(ROOT / 'roles' / role)}"
                assert data.get(name) == path.read_bytes(), f"{name} is missing or differs from the source"
    for playbook in PLAYBOOKS:
        assert f"playbooks/{playbook}.yml" in data
    assert sorted(n for n in data if n.startswith("playbooks/")) == [f"playbooks/{p}.yml" for p in PLAYBOOKS]
    for playbook in PLAYBOOKS:
        if playbook != "site":
            assert data[f"playbooks/{playbook}.yml"] == (ROOT / "playbooks" / f"{playbook}.yml").read_bytes()
    assert data["LICENSE"] == (ROOT / "LICENSE").read_bytes()
    assert b"GNU GENERAL PUBLIC LICENSE" in data["LICENSE"] and b"Version 3, 29 June 2007" in data["LICENSE"]
    assert data["README.md"] == (COLLECTION / "README.md").read_bytes()
    assert not [n for n, m in members.items() if m.issym() or m.islnk()], "links in the tarball"
    assert not [n for n in members if "__pycache__" in n or n.startswith("tests/output")]
    manifest = json.loads(data["MANIFEST.json"])["collection_info"]
    assert (manifest["namespace"], manifest["name"], manifest["version"]) == ("gpulab", "rocm", VERSION)
    assert manifest["license"] == ["GPL-3.0-or-later"] and manifest["dependencies"] == {}


def test_site_imports_its_siblings_by_collection_name(release):
    _, staged = release
    source = (ROOT / "site.yml").read_text()
    shipped = (staged / "playbooks" / "site.yml").read_text()
    imports = [play["ansible.builtin.import_playbook"] for play in yaml.safe_load(shipped)]
    assert imports == [f"gpulab.rocm.{play['ansible.builtin.import_playbook'][len('playbooks/'):-len('.yml')]}"
                       for play in yaml.safe_load(source)]
    # Nothing else changed but the note on top.
    unchanged = [line for line in shipped.splitlines() if not line.startswith("# Staged by")
                 and "ansible-playbook gpulab.rocm.site" not in line]
    assert [re.sub(r"gpulab\.rocm\.(\w+)$", r"playbooks/\1.yml", line) for line in unchanged] == source.splitlines()


def test_build_refuses_playbooks_that_do_not_resolve(tmp_path):
    builder = load_builder()
    playbooks = tmp_path / "playbooks"
    playbooks.mkdir()
    (playbooks / "ok.yml").write_text("- name: Fine\n  hosts: all\n  roles: [rocm_repo, gpulab.rocm.rocm_sdk]\n")
    (playbooks / "broken.yml").write_text(
        "- name: Import\n  ansible.builtin.import_playbook: gpulab.rocm.nowhere\n"
        "- name: Relative\n  ansible.builtin.import_playbook: ../site.yml\n"
        "- name: Roles\n  hosts: all\n  roles:\n    - role: rocm_missing\n    - rocm_repo\n")
    with pytest.raises(builder.BuildError) as failure:
        builder.check_playbooks(tmp_path, {"rocm_repo", "rocm_sdk"}, {"ok", "broken"})
    message = str(failure.value)
    assert "broken.yml: import_playbook gpulab.rocm.nowhere" in message
    assert "broken.yml: import_playbook ../site.yml" in message
    assert "broken.yml: role rocm_missing" in message
    assert "ok.yml" not in message
    (playbooks / "broken.yml").unlink()
    builder.check_playbooks(tmp_path, {"rocm_repo", "rocm_sdk"}, {"ok"})


def test_outside_the_checkout_only_the_installed_collection_is_seen(outside):
    version = outside.run("ansible", "--version").stdout
    assert re.search(r"^\s*config file = None$", version, re.MULTILINE), version
    listing = json.loads(outside.run("ansible-galaxy", "collection", "list", "gpulab.rocm", "--format", "json").stdout)
    assert listing == {str(outside.collections / "ansible_collections"): {"gpulab.rocm": {"version": VERSION}}}


def test_playbooks_load_by_collection_name_with_the_collections_roles(outside):
    # --tags all,never: also the tasks of the roles the plan pass imports for their variables only (tagged never).
    result = outside.run("ansible-playbook", "-i", "localhost,", "--list-tasks", "--tags", "all,never",
                         *[f"gpulab.rocm.{p}" for p in PLAYBOOKS])
    installed = outside.collections / "ansible_collections" / "gpulab" / "rocm" / "playbooks"
    listed = re.findall(r"^playbook: (.*)$", result.stdout, re.MULTILINE)
    assert listed == [str(installed / f"{p}.yml") for p in PLAYBOOKS]
    tasks = set(re.findall(r"^\s+(\S+) : ", result.stdout, re.MULTILINE))
    # Every role of the project is run by some playbook, and each is the collection's (the roles path is empty).
    assert tasks == {f"gpulab.rocm.{role}" for role in ROLES}
    site = result.stdout.split(f"playbook: {installed / 'site.yml'}")[1].split("playbook: ")[0]
    assert "Probe the node, plan every phase, and stop it when any phase refuses" in site
    assert "gpulab.rocm.rocm_preflight : Probe the node and check it" in site
    assert "gpulab.rocm.rocm_report : " in site


def test_roles_are_documented_by_their_full_names(outside):
    listing = json.loads(outside.run("ansible-doc", "-t", "role", "-l", "gpulab.rocm", "--json").stdout)
    assert sorted(listing) == [f"gpulab.rocm.{role}" for role in ROLES]
    spec = json.loads(outside.run("ansible-doc", "-t", "role", "gpulab.rocm.rocm_repo", "--json").stdout)
    options = spec["gpulab.rocm.rocm_repo"]["entry_points"]["main"]["options"]
    defaults = yaml.safe_load((ROOT / "roles" / "rocm_repo" / "defaults" / "main.yml").read_text())
    assert options["rocm_repo_base_url"]["default"] == defaults["rocm_repo_base_url"]


def shipped_plugins(collection):
    """Short names of what COLLECTION ships: modules, action and filter plugins, doc fragments, roles, playbooks."""
    names = set()
    for kind in ("modules", "action", "doc_fragments"):
        names |= {p.stem for p in (collection / "plugins" / kind).glob("*.py") if not p.stem.startswith("_")}
    for path in (collection / "plugins" / "filter").glob("*.py"):
        body = path.read_text().split("def filters(self):", 1)[1]
        names |= set(re.findall(r"'([a-z_][a-z0-9_]*)':", body))
    names |= {p.name for p in (collection / "roles").glob("*") if p.is_dir()}
    names |= {p.stem for p in (collection / "playbooks").glob("*.yml")}
    return names


def references(paths):
    found = {}
    for base in paths:
        files = [base] if base.is_file() else [p for p in base.rglob("*") if p.suffix in (".yml", ".yaml", ".j2")]
        for path in files:
            for name in REFERENCE.findall(path.read_text()):
                found.setdefault(name, set()).add(str(path))
    return found


@pytest.mark.parametrize("tree", ["checkout", "release"])
def test_every_gpulab_rocm_name_resolves(tree, release):
    if tree == "checkout":
        # The top-level roles and playbooks run against the in-tree collection, which has no roles or playbooks.
        collection = COLLECTION
        paths = [ROOT / "roles", ROOT / "playbooks" / "awx", ROOT / "molecule", ROOT / "inventories",
                 ROOT / "site.yml", *sorted((ROOT / "playbooks").glob("*.yml"))]
    else:
        collection = release[1]
        paths = [collection / "roles", collection / "playbooks"]
    used = references(paths)
    assert {"plan", "node_probe", "apt_source", "validation_failures"} <= set(used)
    unknown = {name: sorted(files) for name, files in used.items() if name not in shipped_plugins(collection)}
    assert not unknown, f"gpulab.rocm names that the {tree} collection does not ship: {unknown}"
