#!/usr/bin/env python3
"""The release build (`make release`): the collection tarball with the project's roles and playbooks in it.

The top-level layout stays the source. At build time a staging copy of collections/ansible_collections/gpulab/rocm
gets roles/* as collection roles (gpulab.rocm.rocm_repo, ...) and playbooks/*.yml plus site.yml as collection
playbooks (gpulab.rocm.provision, gpulab.rocm.site, ...); `ansible-galaxy collection build` packs that copy.

What changes on the way, and only this: site.yml imports playbooks/<name>.yml, which in the collection are its
siblings, so its imports become gpulab.rocm.<name>. The roles call the collection's plugins by FQCN already, and a
collection playbook finds its own collection's roles by their short names (ansible-playbook makes the playbook's
collection the default one). The build checks every import and role reference of the staged playbooks before
packing. playbooks/awx/ (AWX's own configuration, run from a checkout) and the playbooks/roles and
playbooks/collections links stay out.

  tests/tools/build_release.py [--staging DIR] [--output DIR]
Defaults: staging .cache/release, tarball in dist/release/. Prints the tarball's path.
"""

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
COLLECTION = ROOT / "collections" / "ansible_collections" / "gpulab" / "rocm"
NAMESPACE, NAME = "gpulab", "rocm"
FQCN = f"{NAMESPACE}.{NAME}"
SITE_NOTE = ("# Staged by tests/tools/build_release.py from the project's site.yml: the playbooks it imports are its\n"
             "# siblings in the collection, imported by their collection names. Run: ansible-playbook gpulab.rocm.site\n")
SITE_IMPORT = re.compile(r"^(\s*(?:-\s+)?ansible\.builtin\.import_playbook:\s*)playbooks/([a-z_][a-z0-9_]*)\.yml\s*$",
                         re.MULTILINE)
# Not part of a release, wherever they are in the tree (galaxy.yml's build_ignore also drops them from the tarball).
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".hypothesis", "*.tar.gz", "output",
                                ".plugin-cache.yaml")


class BuildError(Exception):
    pass


def stage(staging):
    """Fill STAGING with the collection, the roles and the playbooks; return the role and playbook names."""
    if staging.exists():
        shutil.rmtree(staging)
    target = staging / "ansible_collections" / NAMESPACE / NAME
    shutil.copytree(COLLECTION, target, ignore=IGNORE)
    for folder in ("roles", "playbooks"):
        if (target / folder).exists():
            raise BuildError(f"{COLLECTION / folder} exists: the release build puts the top-level {folder}/ there")

    roles = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "meta" / "main.yml").is_file())
    for role in roles:
        shutil.copytree(ROOT / "roles" / role, target / "roles" / role, ignore=IGNORE)

    (target / "playbooks").mkdir()
    playbooks = []
    for source in sorted((ROOT / "playbooks").glob("*.yml")):
        shutil.copy2(source, target / "playbooks" / source.name)
        playbooks.append(source.stem)
    site = (ROOT / "site.yml").read_text()
    site, count = SITE_IMPORT.subn(lambda m: f"{m.group(1)}{FQCN}.{m.group(2)}", site)
    if count == 0:
        raise BuildError("site.yml imports no playbooks/<name>.yml: the release build does not know this site.yml")
    site = site.replace("---\n", "---\n" + SITE_NOTE, 1)
    (target / "playbooks" / "site.yml").write_text(site)
    playbooks.append("site")
    check_playbooks(target, set(roles), set(playbooks))
    return target, roles, sorted(playbooks)


def _tasks(tasks):
    for task in tasks or []:
        yield task
        yield from _tasks(task.get("block"))


def check_playbooks(target, roles, playbooks):
    """Every playbook import and role of the staged playbooks must resolve inside the collection."""
    problems = []
    for path in sorted((target / "playbooks").glob("*.yml")):
        for play in yaml.safe_load(path.read_text()) or []:
            imported = play.get("ansible.builtin.import_playbook") or play.get("import_playbook")
            if imported:
                if imported.startswith(FQCN + "."):
                    ok = imported[len(FQCN) + 1:] in playbooks
                else:
                    ok = "/" not in imported and (path.parent / imported).is_file()
                if not ok:
                    problems.append(f"{path.name}: import_playbook {imported} is not a playbook of the collection")
            # The roles of the play and those its plan pass imports (pre_tasks, blocks opened).
            imports = [task["ansible.builtin.import_role"] for task in _tasks(play.get("pre_tasks"))
                       if isinstance(task.get("ansible.builtin.import_role"), dict)]
            for entry in (play.get("roles") or []) + imports:
                role = entry if isinstance(entry, str) else entry.get("role") or entry.get("name")
                short = role[len(FQCN) + 1:] if role.startswith(FQCN + ".") else role
                if short not in roles:
                    problems.append(f"{path.name}: role {role} is not a role of the collection")
    if problems:
        raise BuildError("staged playbooks do not resolve:\n  " + "\n  ".join(problems))


def ansible_galaxy():
    beside = Path(sys.executable).with_name("ansible-galaxy")
    return str(beside) if beside.exists() else shutil.which("ansible-galaxy") or "ansible-galaxy"


def build(staging, output):
    target, roles, playbooks = stage(staging)
    output.mkdir(parents=True, exist_ok=True)
    version = yaml.safe_load((target / "galaxy.yml").read_text())["version"]
    tarball = output / f"{NAMESPACE}-{NAME}-{version}.tar.gz"
    result = subprocess.run([ansible_galaxy(), "collection", "build", "--force", "--output-path", str(output),
                             str(target)], capture_output=True, text=True)
    if result.returncode != 0 or not tarball.is_file():
        raise BuildError(f"ansible-galaxy collection build failed:\n{result.stdout}{result.stderr}")
    return tarball, roles, playbooks


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--staging", type=Path, default=ROOT / ".cache" / "release")
    parser.add_argument("--output", type=Path, default=ROOT / "dist" / "release")
    args = parser.parse_args()
    try:
        tarball, roles, playbooks = build(args.staging.resolve(), args.output.resolve())
    except BuildError as exc:
        print(f"build_release: {exc}", file=sys.stderr)
        return 1
    print(f"build_release: roles {', '.join(roles)}", file=sys.stderr)
    print(f"build_release: playbooks {', '.join(playbooks)}", file=sys.stderr)
    print(tarball)
    return 0


if __name__ == "__main__":
    sys.exit(main())
