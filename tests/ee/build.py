#!/usr/bin/env python3
"""Build the execution environment image (tests/ee/Containerfile) from the project's Debian base image, only when
its recipe changed. Prints the image's tag.

    tests/ee/build.py [--tag gpulab/rocm-ee:<version>] [--base gpulab/debian:bookworm] [--force] [--no-cache]

Run it with the project's venv (.venv/bin/python: `make setup`): the image gets the versions that venv runs.

1. `make release`'s build of the collection tarball (the image installs it), in .cache/ee/release.
2. The recipe: the Containerfile and the entrypoint; the Python packages (the Containerfile's ANSIBLE_INSTALL_REFS
   and their dependencies, at the versions installed in this venv, which must be the pins); the third-party
   collections of collections/requirements.yml as installed in this venv by the `ansible` package of
   requirements-test.txt (each checked against its range), by their MANIFEST.json; our tarball's MANIFEST.json
   (it holds the checksum of every file's checksum: the tarball's own bytes change with every build, its
   content does not); the base image's id. Their sha256 is the image's label `gpulab.ee.recipe`: an image
   of the tag with the same label is kept, as tests/harness/base-images.sh keeps its images.
3. Otherwise the build context in .cache/ee/context: the wheels (`pip download` of exactly those versions,
   through this machine's own pip configuration, once per set of versions: .cache/ee/wheels), the collections,
   the tarball, the entrypoint; then
   `docker build --network none` (the build downloads nothing). Docker's layer cache keeps the Python layer when
   only a collection changed. Older images of the recipe left without a tag are removed.
"""

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from importlib import metadata
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "tests" / "ee"
CONTAINERFILE = HERE / "Containerfile"
ENTRYPOINT = HERE / "entrypoint"
CONTEXT = ROOT / ".cache" / "ee" / "context"
WHEELS = ROOT / ".cache" / "ee" / "wheels"
RELEASE = ROOT / ".cache" / "ee" / "release"
LOG = ROOT / ".cache" / "ee" / "build.log"
LABEL = "gpulab.ee.recipe"
DEFAULT_BASE = "gpulab/debian:bookworm"


class BuildError(Exception):
    pass


def log(message):
    print("[ee] %s" % message, file=sys.stderr, flush=True)


def version():
    return yaml.safe_load((ROOT / "collections" / "ansible_collections" / "gpulab" / "rocm" / "galaxy.yml")
                          .read_text())["version"]


def install_refs(containerfile=CONTAINERFILE):
    """The Containerfile's ANSIBLE_INSTALL_REFS: the Python packages the image installs, pinned."""
    found = re.findall(r'^ARG ANSIBLE_INSTALL_REFS="([^"]+)"$', containerfile.read_text(), re.MULTILINE)
    if len(found) != 1:
        raise BuildError("%s: no single ARG ANSIBLE_INSTALL_REFS line" % containerfile)
    return found[0].split()


def python_closure(refs):
    """{name: version} of the refs and everything they need, as installed in this interpreter (which must have the
    refs' exact versions), and the refs it does not have (downloaded with their dependencies)."""
    pinned, absent, todo = {}, [], [(Requirement(ref), True) for ref in refs]
    while todo:
        requirement, is_ref = todo.pop()
        name = canonicalize_name(requirement.name)
        if name in pinned:
            continue
        try:
            dist = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            if is_ref:
                absent.append(str(requirement))
                continue
            raise BuildError("%s (needed by the image) is not installed in %s" % (requirement, sys.prefix))
        if not requirement.specifier.contains(dist.version, prereleases=True):
            raise BuildError("%s has %s==%s, the image wants %s: run tests/harness/host-setup.sh base" % (
                sys.prefix, requirement.name, dist.version, requirement))
        pinned[name] = dist.version
        for line in dist.requires or []:
            dependency = Requirement(line)
            extras = requirement.extras or {""}
            if dependency.marker and not any(dependency.marker.evaluate({"extra": extra}) for extra in extras):
                continue
            dependency.marker = None
            todo.append((dependency, False))
    return pinned, sorted(absent)


def third_party_collections():
    """[(fqcn, path, manifest bytes)] of collections/requirements.yml's entries, from this venv's `ansible` package."""
    installed = Path(sysconfig.get_paths()["purelib"]) / "ansible_collections"
    found = []
    for entry in yaml.safe_load((ROOT / "collections" / "requirements.yml").read_text())["collections"]:
        namespace, name = entry["name"].split(".")
        path = installed / namespace / name
        manifest = path / "MANIFEST.json"
        if not manifest.is_file():
            raise BuildError("%s is not installed in %s (requirements-test.txt's ansible package has it)" % (
                entry["name"], installed))
        have = json.loads(manifest.read_text())["collection_info"]["version"]
        if not SpecifierSet(entry["version"]).contains(have):
            raise BuildError("%s %s is outside collections/requirements.yml's range %s" % (
                entry["name"], have, entry["version"]))
        found.append((entry["name"], path, manifest.read_bytes()))
    return found


def release_tarball():
    """`make release`'s build, into a staging folder and an output folder of its own: the test command's static lane
    may run `make release` at the same time."""
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "tools" / "build_release.py"),
                             "--staging", str(RELEASE / "staging"), "--output", str(RELEASE / "dist")], cwd=ROOT,
                            capture_output=True, text=True)
    if result.returncode != 0:
        raise BuildError("the release build failed:\n" + result.stdout + result.stderr)
    tarball = Path(result.stdout.strip().splitlines()[-1])
    manifest = subprocess.run(["tar", "-xzOf", str(tarball), "MANIFEST.json"], check=True, capture_output=True).stdout
    return tarball, manifest


def docker(*args, check=True):
    return subprocess.run(["docker", *args], check=check, capture_output=True, text=True)


def image_label(tag):
    result = docker("image", "inspect", "-f", '{{ index .Config.Labels "%s" }}' % LABEL, tag, check=False)
    return result.stdout.strip() if result.returncode == 0 else None


def recipe(base_id, pinned, absent, pip_version, collections, manifest):
    digest = hashlib.sha256()
    for part in (CONTAINERFILE.read_bytes(), ENTRYPOINT.read_bytes(), base_id.encode(),
                 json.dumps([sorted(pinned.items()), absent, pip_version]).encode(),
                 *(name.encode() + body for name, _, body in collections), manifest):
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def wheelhouse(pinned, absent, pip_version):
    """The wheels of exactly those versions (no sdist: nothing is compiled in the image), and pip's own wheel, the
    installer in the image: downloaded once per set of versions into .cache/ee/wheels-<hash>, so that a build for a
    new collection tarball needs no index."""
    versions = json.dumps([sorted(pinned.items()), absent, pip_version]).encode()
    folder = WHEELS / hashlib.sha256(versions).hexdigest()[:16]
    if (folder / ".complete").is_file():
        return folder
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--only-binary=:all:",
           "--dest", str(folder)]
    exact = ["%s==%s" % item for item in sorted(pinned.items())] + ["pip==%s" % pip_version]
    for command in (pip + ["--no-deps"] + exact, pip + absent if absent else None):
        if command:
            result = subprocess.run(command, capture_output=True, text=True)
            if result.returncode != 0:
                raise BuildError("pip download failed:\n" + result.stdout + result.stderr)
    (folder / ".complete").write_text(versions.decode())
    # The wheelhouses of other versions are of no further use.
    for other in WHEELS.iterdir():
        if other != folder:
            shutil.rmtree(other)
    return folder


def check_base_python(base):
    """The wheels are this interpreter's (cp311 on Debian 12): the image's python3 must be the same minor version."""
    result = docker("run", "--rm", "--network", "none", "--entrypoint", "python3", base, "-c",
                    "import sys; print('%d.%d' % sys.version_info[:2])")
    want = "%d.%d" % sys.version_info[:2]
    if result.stdout.strip() != want:
        raise BuildError("%s has Python %s, this venv %s: the wheels would not fit" % (base, result.stdout.strip(), want))


def build(tag, base, force=False, no_cache=False):
    started = time.monotonic()
    base_id = docker("image", "inspect", "-f", "{{ .Id }}", base, check=False).stdout.strip()
    if not base_id:
        raise BuildError("no base image %s: tests/harness/host-setup.sh images builds it" % base)
    tarball, manifest = release_tarball()
    refs = install_refs()
    pinned, absent = python_closure(refs)
    pip_version = metadata.version("pip")
    collections = third_party_collections()
    want = recipe(base_id, pinned, absent, pip_version, collections, manifest)
    if not force and image_label(tag) == want:
        log("%s cached (recipe %s)" % (tag, want[:12]))
        return tag, False

    log("building %s from %s (recipe %s)" % (tag, base, want[:12]))
    check_base_python(base)
    wheels = wheelhouse(pinned, absent, pip_version)
    if CONTEXT.exists():
        shutil.rmtree(CONTEXT)
    CONTEXT.mkdir(parents=True)
    shutil.copytree(wheels, CONTEXT / "wheels", ignore=shutil.ignore_patterns(".complete"))
    for name, path, _ in collections:
        namespace, collection = name.split(".")
        shutil.copytree(path, CONTEXT / "collections" / "ansible_collections" / namespace / collection,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy(tarball, CONTEXT / "gpulab-rocm.tar.gz")
    shutil.copy(CONTAINERFILE, CONTEXT / "Containerfile")
    shutil.copy(ENTRYPOINT, CONTEXT / "entrypoint")
    command = ["docker", "build", "--network", "none", "--force-rm", "-f", str(CONTEXT / "Containerfile"), "-t", tag,
               "--label", "%s=%s" % (LABEL, want), "--build-arg", "EE_BASE_IMAGE=%s" % base]
    if no_cache:
        command.append("--no-cache")
    with LOG.open("w") as out:
        result = subprocess.run(command + [str(CONTEXT)], stdout=out, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        raise BuildError("docker build failed (%s):\n%s" % (LOG, "".join(LOG.read_text().splitlines(True)[-30:])))
    if image_label(tag) != want:
        raise BuildError("%s was built without its label %s" % (tag, LABEL))
    # An older build of the recipe that lost its tag to this one.
    stale = docker("images", "-q", "--filter", "dangling=true", "--filter", "label=%s" % LABEL).stdout.split()
    if stale:
        docker("rmi", *sorted(set(stale)), check=False)
    cached_steps = LOG.read_text().count("Using cache")
    log("%s built in %.0f s (%d steps from docker's layer cache; log %s)" % (
        tag, time.monotonic() - started, cached_steps, LOG.relative_to(ROOT)))
    return tag, True


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tag", default="gpulab/rocm-ee:%s" % version())
    parser.add_argument("--base", default=DEFAULT_BASE)
    parser.add_argument("--force", action="store_true", help="build even when the image's recipe is the same")
    parser.add_argument("--no-cache", action="store_true", help="docker build --no-cache (a cold build)")
    args = parser.parse_args()
    try:
        tag, _ = build(args.tag, args.base, args.force, args.no_cache)
    except BuildError as error:
        log("error: %s" % error)
        return 1
    print(tag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
