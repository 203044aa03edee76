"""execution-environment.yml renders with `ansible-builder create` into the build context an image build needs: the
release tarball and the third-party collections of collections/requirements.yml, ansible-core and ansible-runner at
the pins the tests run, the system packages; and the context's own galaxy step installs our tarball from where
the Containerfile runs it. Building that image needs a registry (docs/awx.md). tests/ee/Containerfile, the image on the
project's Debian base that the awx-runner lane builds and runs (tests/runner/ee.sh), installs the same pins."""

import importlib.util
import re
import shutil
import subprocess

import pytest
import yaml
from bindep.depends import Depends

from release_helpers import BIN, ROOT, VERSION, Outside

DEFINITION = ROOT / "execution-environment.yml"
TARBALL = f"gpulab-rocm-{VERSION}.tar.gz"


def pin(requirements, package):
    found = re.findall(rf"^{re.escape(package)}==(\S+)$", (ROOT / requirements).read_text(), re.MULTILINE)
    assert len(found) == 1, f"{package} is not pinned once in {requirements}"
    return f"{package}=={found[0]}"


@pytest.fixture(scope="module")
def context(release, tmp_path_factory):
    """The definition beside a fresh release tarball, as `make release` leaves it, rendered by ansible-builder."""
    tarball, _ = release
    project = tmp_path_factory.mktemp("ee-project")
    shutil.copy(DEFINITION, project / "execution-environment.yml")
    (project / "dist" / "release").mkdir(parents=True)
    shutil.copy(tarball, project / "dist" / "release" / TARBALL)
    result = subprocess.run([str(BIN / "ansible-builder"), "create", "-f", str(project / "execution-environment.yml"),
                             "-c", str(project / "context"), "--output-filename", "Containerfile"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "outdated base image" not in result.stdout + result.stderr
    return project / "context", tarball


def test_definition_matches_the_release_and_the_pins():
    ee = yaml.safe_load(DEFINITION.read_text())
    assert ee["version"] == 3
    assert pin("requirements-test.txt", "ansible-builder")  # the tool that renders it, at the tested version
    deps = ee["dependencies"]
    assert deps["ansible_core"] == {"package_pip": pin("requirements.txt", "ansible-core")}
    assert deps["ansible_runner"] == {"package_pip": pin("requirements-test.txt", "ansible-runner")}
    collections = deps["galaxy"]["collections"]
    assert collections[0] == {"name": f"collections/{TARBALL}", "type": "file"}
    assert collections[1:] == yaml.safe_load((ROOT / "collections" / "requirements.yml").read_text())["collections"]
    assert ee["additional_build_files"] == [{"src": f"dist/release/{TARBALL}", "dest": "collections"}]
    assert ee["options"]["tags"] == [f"gpulab/rocm-ee:{VERSION}"]
    # No registry host is named: the base image is a local tag (docs/awx.md says how to provide it).
    assert ee["images"]["base_image"]["name"].split("/")[0] == "localhost"
    assert "python" not in deps, "gpulab.rocm needs no Python package in the image (see the comment in the file)"


def test_containerfile_installs_what_the_definition_lists(context):
    folder, _ = context
    lines = (folder / "Containerfile").read_text().splitlines()
    core, runner = pin("requirements.txt", "ansible-core"), pin("requirements-test.txt", "ansible-runner")
    for expected in ('ARG EE_BASE_IMAGE="localhost/gpulab/ee-base:latest"',
                     'ARG PYCMD="/usr/bin/python3.11"',
                     'ARG PYPKG="python3.11"',
                     f'ARG ANSIBLE_INSTALL_REFS="{core} {runner}"',
                     "FROM $EE_BASE_IMAGE AS base",
                     "RUN $PYCMD -m pip install --no-cache-dir $ANSIBLE_INSTALL_REFS",
                     "COPY _build /build",
                     "WORKDIR /build",
                     "COPY _build/bindep.txt bindep.txt",
                     "COPY --from=galaxy /usr/share/ansible /usr/share/ansible",
                     "RUN /output/scripts/check_ansible $PYCMD"):
        assert expected in lines, f"{expected!r} not in the Containerfile"
    galaxy = [line for line in lines if "ansible-galaxy collection install" in line]
    assert len(galaxy) == 1 and "-r requirements.yml" in galaxy[0]
    assert '--collections-path "/usr/share/ansible/collections"' in galaxy[0]
    # The introspection step adds the collections' own Python and system requirements at build time.
    assert any("introspect.py introspect --user-bindep=bindep.txt" in line for line in lines)


def test_context_holds_the_requirement_files_and_the_tarball(context):
    folder, tarball = context
    build = folder / "_build"
    ee = yaml.safe_load(DEFINITION.read_text())
    assert yaml.safe_load((build / "requirements.yml").read_text()) == ee["dependencies"]["galaxy"]
    assert (build / "collections" / TARBALL).read_bytes() == tarball.read_bytes()
    bindep = (build / "bindep.txt").read_text()
    assert [rule[0] for rule in Depends(bindep).active_rules(["platform:rpm", "platform:redhat"])] == ["openssh-clients"]
    assert not (build / "requirements.txt").exists()
    assert sorted(p.name for p in build.iterdir()) == ["bindep.txt", "collections", "requirements.yml", "scripts"]


def test_galaxy_step_installs_our_tarball_from_the_build_folder(context, tmp_path):
    """The Containerfile's galaxy step, run as it runs there (in /build, i.e. _build), for our entry alone: the third-
    party collections would come from Galaxy, which is not reachable here."""
    folder, _ = context
    build = folder / "_build"
    ours = [entry for entry in yaml.safe_load((build / "requirements.yml").read_text())["collections"]
            if entry.get("type") == "file"]
    (build / "ours.yml").write_text(yaml.safe_dump({"collections": ours}))
    try:
        user = Outside(tmp_path / "ee")
        user.cwd = build
        user.run("ansible-galaxy", "collection", "install", "--offline", "-r", "ours.yml",
                 "-p", user.collections)
    finally:
        (build / "ours.yml").unlink()
    installed = user.collections / "ansible_collections" / "gpulab" / "rocm"
    assert (installed / "roles" / "rocm_repo" / "meta" / "argument_specs.yml").is_file()
    assert (installed / "playbooks" / "site.yml").is_file()
    assert f'"version": "{VERSION}"' in (installed / "MANIFEST.json").read_text()



def debian_build():
    """tests/ee/build.py, the build of the execution environment's image on the project's Debian base."""
    spec = importlib.util.spec_from_file_location("ee_build", ROOT / "tests" / "ee" / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_debian_containerfile_installs_the_definitions_pins(context):
    """tests/ee/Containerfile (the image built and run here, on the Debian base) and execution-environment.yml (the
    definition for an RPM base) install the same ansible-core and ansible-runner, the pins the tests run, and the
    dumb-init of ansible-builder's own final stage."""
    build = debian_build()
    refs = build.install_refs()
    deps = yaml.safe_load(DEFINITION.read_text())["dependencies"]
    assert refs[:2] == [deps["ansible_core"]["package_pip"], deps["ansible_runner"]["package_pip"]]
    assert refs[:2] == [pin("requirements.txt", "ansible-core"), pin("requirements-test.txt", "ansible-runner")]
    folder, _ = context
    rendered = (folder / "Containerfile").read_text()
    assert len(refs) == 3 and f"pip install --no-cache-dir '{refs[2]}'" in rendered, (refs, "dumb-init")
    assert build.version() == VERSION
    assert yaml.safe_load(DEFINITION.read_text())["options"]["tags"] == [f"gpulab/rocm-ee:{build.version()}"]


def test_debian_containerfile_layers_go_from_stable_to_changing():
    """Docker's layer cache keeps the Python layer when only the collection changed: the wheels first, then the
    entrypoint, the third-party collections, and our tarball last."""
    lines = (ROOT / "tests" / "ee" / "Containerfile").read_text().splitlines()
    copies = [line.split()[1] for line in lines if line.startswith("COPY ")]
    assert copies == ["wheels/", "entrypoint", "collections/", "gpulab-rocm.tar.gz"]
    assert lines.index("USER 1000") > max(i for i, line in enumerate(lines) if line.startswith("RUN "))
    assert 'ENTRYPOINT ["/opt/gpulab-ee/entrypoint", "dumb-init"]' in lines and "WORKDIR /runner" in lines


def test_debian_image_python_packages_are_this_venvs():
    """The image's wheels are the versions this venv runs: the refs and their dependencies, found here; only what
    the venv lacks (dumb-init) is downloaded with its own dependencies."""
    build = debian_build()
    pinned, absent = build.python_closure(build.install_refs())
    assert {"ansible-core", "ansible-runner", "jinja2", "pyyaml", "cryptography", "resolvelib", "pexpect",
            "python-daemon"} <= set(pinned)
    assert pinned["ansible-core"] == pin("requirements.txt", "ansible-core").split("==")[1]
    assert absent == [r for r in build.install_refs() if r.startswith("dumb-init==")]
    assert [name for name, _, _ in build.third_party_collections()] == [
        entry["name"] for entry in yaml.safe_load((ROOT / "collections" / "requirements.yml").read_text())["collections"]]
