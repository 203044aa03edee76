#!/usr/bin/env python3
"""Build the fixture ROCm apt mirror: repo.radeon.com's and stable.repo.amd.com's layouts, signed with keys generated
for the run.

    python3 tests/harness/mirror/build_mirror.py --out DIR [--force]

Produces DIR/rocm/apt/<ver>/{dists,pool}, DIR/amdgpu/<ver, 30.x or 31.x>/ubuntu/{dists,pool}, from 7.0
DIR/graphics/<ver>/ubuntu/{dists,pool}, DIR/device-metrics-exporter/apt/1.5.2/{dists,pool}, DIR/rocm/rocm.gpg.key (the
signing key), DIR/rocm/wrong.gpg.key (an unrelated key), DIR/fingerprint (40 hex); the Core SDK stream
DIR/rocm/core/packages/<distro>/{dists/stable,pool}, signed with its own key DIR/rocm/gpg/packages.gpg
(DIR/core-fingerprint); and DIR/.stamp. Every package is a gpulab.rocm TEST FIXTURE (see recipes.py). A complete
mirror made by the same builder files is reused.
Needs: python3 (stdlib; it writes the .debs itself), apt-ftparchive (apt-utils), gpg + gpg-agent (gnupg), gcc (the
stand-in libraries).
"""

import argparse
import concurrent.futures
import fcntl
import functools
import gzip
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import recipes

HERE = Path(__file__).resolve().parent
# The project's one store of real captured outputs (provenance in its SOURCES.md); recipes.PROFILES names files in it.
CAPTURES = HERE.parents[2] / "collections/ansible_collections/gpulab/rocm/tests/unit/plugins/module_utils/fixtures"
ORIGIN = "repo.radeon.com"  # what AMD's pin matches: Pin: release o=repo.radeon.com
CORE_ROOT = "rocm/core/packages"  # the Core stream's folder of <distro>/ folders (stable.repo.amd.com's layout)
MAINTAINER = "gpulab.rocm test fixture <fixture@gpulab.invalid>"
FIXTURE_NOTE = "gpulab.rocm TEST FIXTURE, not AMD's package"
KEY_UID = "gpulab.rocm fixture mirror signing key (TEST ONLY) <fixture@gpulab.invalid>"
WRONG_KEY_UID = "gpulab.rocm unrelated key (TEST ONLY) <wrong@gpulab.invalid>"
CORE_KEY_UID = "gpulab.rocm fixture Core SDK signing key (TEST ONLY) <fixture-core@gpulab.invalid>"


class BuildError(Exception):
    """A failure with a message for the user (no traceback)."""


def profile_captures():
    """Every capture file the profiles print, by its name in the store."""
    captures = {capture for tools in recipes.PROFILES.values() for keys in tools.values()
                for capture, _rc, _fd in keys.values()}
    for modes in recipes.PARTITIONS.values():
        for key in ("static", "set_compute", "set_memory"):
            captures.update(modes[key].values())
    return sorted(captures)


def builder_hash():
    """Hash of the builder's files and of the captures it packs: a change in any of them invalidates a cached
    mirror (other fixtures of the store do not)."""
    own = [HERE / "build_mirror.py", HERE / "recipes.py"] + sorted(p for p in (HERE / "tools").rglob("*") if p.is_file())
    files = [(str(path.relative_to(HERE)), path) for path in own]
    files += [("captures/" + name, CAPTURES / name) for name in profile_captures()]
    digest = hashlib.sha256()
    for label, path in files:
        digest.update(label.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def run(cmd, **kwargs):
    """Run a command; a failure becomes a BuildError naming the command and its stderr."""
    try:
        return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs)
    except FileNotFoundError:
        raise BuildError(f"{cmd[0]} not found: install the Debian packages apt-utils, gnupg and gcc") from None
    except subprocess.CalledProcessError as err:
        raise BuildError(f"{' '.join(map(str, cmd))} failed (rc {err.returncode}): {err.stderr.strip()}") from None


# ---------------------------------------------------------------------------------------------------------------
# Package model

class Package:
    """One .deb to build: control fields, files (path -> bytes, or ("link", target)), maintainer scripts."""

    def __init__(self, name, version, summary, depends=(), arch="amd64", section="devel"):
        self.name, self.version, self.summary, self.arch, self.section = name, version, summary, arch, section
        self.depends = list(depends)
        self.files, self.scripts = {}, {}

    def filename(self):
        version = self.version.split(":", 1)[-1]  # the epoch is not part of the file name
        return f"{self.name}_{version}_{self.arch}.deb"

    def control(self):
        size_kib = sum(len(c) for c in self.files.values() if isinstance(c, bytes)) // 1024 + 1
        fields = [("Package", self.name), ("Version", self.version), ("Architecture", self.arch),
                  ("Maintainer", MAINTAINER), ("Installed-Size", str(size_kib)), ("Section", self.section),
                  ("Priority", "optional")]
        if self.depends:
            fields.append(("Depends", ", ".join(self.depends)))
        fields.append(("Description", f"{self.summary} ({FIXTURE_NOTE})\n"
                       f" {FIXTURE_NOTE}: it imitates the name, version and dependencies of AMD's\n"
                       " package for tests of the gpulab.rocm Ansible project. Its programs print\n"
                       " recorded outputs of real machines; its libraries are empty stand-ins."))
        return "".join(f"{k}: {v}\n" for k, v in fields)


def tar_gz(entries, mtime):
    """A gzip'd GNU tar (what dpkg-deb writes) of (path, content, mode): bytes, ("link", target) or None (a folder);
    every member owned by root:root."""
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=1, mtime=mtime) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for path, content, mode in entries:
            info = tarfile.TarInfo(path)
            info.mode, info.mtime, info.uname, info.gname = mode, mtime, "root", "root"
            if content is None:
                info.type = tarfile.DIRTYPE
            elif isinstance(content, tuple):
                info.type, info.linkname = tarfile.SYMTYPE, content[1]
            else:
                info.size = len(content)
            tar.addfile(info, io.BytesIO(content) if isinstance(content, bytes) else None)
    return buf.getvalue()


def ar_member(name, data):
    """One member of an ar archive: name, mtime, uid, gid, mode, size in fixed-width fields, data padded to even."""
    header = f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(data):<10}`\n".encode()
    return header + data + (b"\n" if len(data) % 2 else b"")


def write_deb(pkg, dest, mtime):
    """Write dest, the .deb of pkg, in the format dpkg-deb --build makes (ar of debian-binary, control.tar.gz and
    data.tar.gz), in this process: forking dpkg-deb, tar and find for each of ~1000 packages took most of the build."""
    control = [("./", None, 0o755), ("./control", pkg.control().encode(), 0o644)]
    control += [(f"./{script}", text.encode(), 0o755) for script, text in sorted(pkg.scripts.items())]
    data, folders = [("./", None, 0o755)], set()
    for rel in sorted(pkg.files):
        parts = rel.strip("/").split("/")
        for depth in range(1, len(parts)):
            folder = "./" + "/".join(parts[:depth]) + "/"
            if folder not in folders:
                folders.add(folder)
                data.append((folder, None, 0o755))
        content = pkg.files[rel]
        executable = rel.startswith(("/opt/rocm", "/usr/")) and "/bin/" in rel
        data.append(("./" + "/".join(parts), content, 0o777 if isinstance(content, tuple) else
                     0o755 if executable else 0o644))
    dest.parent.mkdir(parents=True, exist_ok=True)
    members = [("debian-binary", b"2.0\n"), ("control.tar.gz", tar_gz(control, mtime)),
               ("data.tar.gz", tar_gz(data, mtime))]
    dest.write_bytes(b"!<arch>\n" + b"".join(ar_member(name, blob) for name, blob in members))


# ---------------------------------------------------------------------------------------------------------------
# ROCm packages of one release and codename

def version_code(version):
    """ROCm X.Y.Z -> MMmmpp as in AMD's package versions: 6.2.4 -> 60204."""
    major, minor, patch = (int(x) for x in version.split("."))
    return f"{major}{minor:02d}{patch:02d}"


def alternatives_priority(version):
    """AMD's rocm-core.postinst score: ((major-3)*14+minor)*14+patch, times 1e6. AMD adds the minutes since
    2020-09-13 at install time so the newest install of a same version wins; the fixture leaves that out so
    the priority is reproducible."""
    major, minor, patch = (int(x) for x in version.split("."))
    return (((major - 3) * 14 + minor) * 14 + patch) * 1000000


def postinst(prefix, priority):
    return f"""#!/bin/sh
# {FIXTURE_NOTE}. Modelled on AMD's rocm-core.postinst (ROCm/rocm-core): register {prefix} as an
# alternative for the /opt/rocm link. Unlike AMD's: fixed priority (no install-time minutes), no
# os-release check, no environment-modules alternative.
set -e
case "$1" in
    configure)
        if command -v update-alternatives >/dev/null 2>&1; then
            update-alternatives --install /opt/rocm rocm {prefix} {priority}
        fi
        ;;
esac
exit 0
"""


def prerm(prefix):
    return f"""#!/bin/sh
# {FIXTURE_NOTE}. Modelled on AMD's rocm-core.prerm (ROCm/rocm-core), which drops the /opt/rocm
# alternative on remove and upgrade; deconfigure added here.
set -e
case "$1" in
    remove|upgrade|deconfigure)
        if command -v update-alternatives >/dev/null 2>&1; then
            update-alternatives --remove rocm {prefix} || true
        fi
        ;;
esac
exit 0
"""


def tool_script(name, release, prefix):
    text = (HERE / "tools" / name).read_text()
    common = (HERE / "tools" / "common.sh").read_text()
    common = "\n".join(line for line in common.splitlines() if not line.startswith("# Common part"))
    text = text.replace("@COMMON@", common.strip("\n"))
    hip = release["hip"] if "hip" in release else release["components"]["hip-runtime-amd"]  # Core or legacy
    return (text.replace("@PREFIX@", prefix).replace("@VERSION@", release["version"])
            .replace("@HIPVERSION@", f"{hip}-gpulab-fixture")).encode()


def agent_list(rocminfo_text):
    """rocm_agent_enumerator's answer from a rocminfo capture: gfx000 per CPU agent, the Name of each GPU agent,
    in agent order (= KFD node order, which the real tool reads)."""
    agents, name = [], None
    for line in rocminfo_text.splitlines():
        key, _, value = line.strip().partition(":")
        if key == "Name" and name is None:
            name = value.strip()
        elif key == "Device Type":
            kind = value.strip()
            if kind == "CPU":
                agents.append("gfx000")
            elif kind == "GPU":
                agents.append(name)
            name = None
        elif line.startswith("Agent "):
            name = None
    return agents


def fixture_files(prefix, tool):
    """Captures of every profile for one tool, under prefix/share/gpulab-fixture/<profile>/<tool>/."""
    files = {}
    for profile, tools in recipes.PROFILES.items():
        base = f"{prefix}/share/gpulab-fixture/{profile}/{tool}"
        files[f"{base}/.profile"] = f"{profile}\n".encode()  # keeps the folder, so the profile is known
        if tool == "rocm_agent_enumerator":
            entries = {}
            if "default" in tools.get("rocminfo", {}):
                capture = (CAPTURES / tools["rocminfo"]["default"][0]).read_text()
                entries["default"] = ("\n".join(agent_list(capture)) + "\n").encode()
            elif "any" in tools.get("rocminfo", {}):
                entries["any"] = b""  # rocminfo finds no agent: nothing to list (derived, not captured)
            for key, content in entries.items():
                files[f"{base}/{key}"] = content
            continue
        for key, (capture, rc, fd) in tools.get(tool, {}).items():
            files[f"{base}/{key}"] = (CAPTURES / capture).read_bytes()
            files[f"{base}/{key}.rc"] = f"{rc}\n".encode()
            files[f"{base}/{key}.fd"] = f"{fd}\n".encode()
        if tool == "amd-smi" and profile in recipes.PARTITIONS:
            files.update(partition_files(base, recipes.PARTITIONS[profile]))
    return files


def partition_files(base, modes):
    """A profile's partition modes for the fixture amd-smi, under <base>/partition/: initial ("SPX NPS1"), moves
    (lines "SPX NPS4 CPX": setting NPS4 under SPX moves the compute partition to CPX), static-<C>-<M>, set-compute-<C>
    and set-memory-<M> (the captures)."""
    files = {f"{base}/partition/initial": (" ".join(modes["initial"]) + "\n").encode(),
             f"{base}/partition/moves": "".join(f"{c} {m} {to}\n" for (c, m), to in modes["moves"].items()).encode()}
    for (compute, memory), capture in modes["static"].items():
        files[f"{base}/partition/static-{compute}-{memory}"] = (CAPTURES / capture).read_bytes()
    for kind in ("compute", "memory"):
        for mode, capture in modes["set_" + kind].items():
            files[f"{base}/partition/set-{kind}-{mode}"] = (CAPTURES / capture).read_bytes()
    return files


@functools.lru_cache(maxsize=None)
def stub_library(soname):
    """A real, empty ELF shared object with this SONAME, so that ldconfig and the dynamic linker treat the
    fixture's libraries as libraries (a text placeholder is ignored by ldconfig)."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "stub.c"
        source.write_text('const char gpulab_rocm_fixture[] = "gpulab.rocm TEST FIXTURE stand-in for %s";\n' % soname)
        run(["gcc", "-shared", "-fPIC", "-nostdlib", f"-Wl,-soname,{soname}", "-o", f"{tmp}/lib.so", str(source)])
        return (Path(tmp) / "lib.so").read_bytes()


def rocm_packages(release, codename):
    ver, build = release["version"], release["build"]
    code, ubuntu = version_code(ver), recipes.UBUNTU[codename]
    prefix = f"/opt/rocm-{ver}"
    comps, sonames = release["components"], release["sonames"]

    def full(component_version):
        return f"{component_version}.{code}-{build}~{ubuntu}"

    core_version = full(ver)
    base = []  # (name, version, summary, deps (names), files, scripts)

    def add(name, version, summary, deps=(), files=None, scripts=None):
        base.append((name, version, summary, list(deps), files or {}, scripts or {}))

    add("rocm-core", core_version, "ROCm core: version file and the /opt/rocm alternative",
        files={f"{prefix}/.info/version": f"{ver}-{build}\n".encode(),
               f"{prefix}/include/rocm-core/rocm_version.h": "".join(
                   f"#define ROCM_VERSION_{k} {v}\n" for k, v in zip(("MAJOR", "MINOR", "PATCH"), ver.split("."))
               ).encode()},
        scripts={"postinst": postinst(prefix, alternatives_priority(ver)), "prerm": prerm(prefix)})

    def lib(path):
        return {path: stub_library(path.rsplit("/", 1)[-1])}

    files = {
        "hsa-rocr": lib(f"{prefix}/lib/libhsa-runtime64.so.1"),
        "hip-runtime-amd": lib(f"{prefix}/lib/libamdhip64.so.{sonames['libamdhip64']}"),
        "hipcc": {f"{prefix}/bin/hipcc": tool_script("hipcc", release, prefix)},
        "rocminfo": {f"{prefix}/bin/rocminfo": tool_script("rocminfo", release, prefix),
                     f"{prefix}/bin/rocm_agent_enumerator": tool_script("rocm_agent_enumerator", release, prefix),
                     **fixture_files(prefix, "rocminfo"), **fixture_files(prefix, "rocm_agent_enumerator")},
        "rocm-smi-lib": {f"{prefix}/bin/rocm-smi": tool_script("rocm-smi", release, prefix),
                         **lib(f"{prefix}/lib/librocm_smi64.so.{sonames['librocm_smi64']}"),
                         **fixture_files(prefix, "rocm-smi")},
        "amd-smi-lib": {f"{prefix}/bin/amd-smi": tool_script("amd-smi", release, prefix),
                        **fixture_files(prefix, "amd-smi")},
        "rocblas": lib(f"{prefix}/lib/librocblas.so.{sonames['librocblas']}"),
        "rocblas-dev": {f"{prefix}/include/rocblas/rocblas.h": b"/* gpulab.rocm TEST FIXTURE */\n",
                        f"{prefix}/lib/librocblas.so": ("link", f"librocblas.so.{sonames['librocblas']}")},
        "miopen-hip": lib(f"{prefix}/lib/libMIOpen.so.1"),
        "miopen-hip-dev": {f"{prefix}/include/miopen/miopen.h": b"/* gpulab.rocm TEST FIXTURE */\n"},
    }
    for name, (comp_key, deps) in recipes.COMPONENTS.items():
        if comp_key not in comps:
            continue  # e.g. amd-smi-lib before 6.0
        add(name, full(comps[comp_key]), f"ROCm component {name}", deps + ["rocm-core"], files[name])

    scheme = release["kdb_scheme"]
    for gfx, cus in recipes.KDB_TARGETS[scheme]:
        since = recipes.KDB_SINCE.get(gfx)
        if since and tuple(map(int, ver.split("."))) < tuple(map(int, since.split("."))):
            continue
        if scheme == "miopenkernels":
            name, db = f"miopenkernels-{gfx}-{cus}kdb", f"{gfx}_{cus}.kdb"
        elif scheme == "miopen-hip-cu":
            name, db = f"miopen-hip-{gfx}-{cus}kdb", f"{gfx}_{cus}.kdb"
        else:
            name, db = f"miopen-hip-{gfx}kdb", f"{gfx}.kdb"
        add(name, full(comps["miopen-hip"]), f"MIOpen pre-compiled kernel database for {gfx}", ["rocm-core"],
            {f"{prefix}/share/miopen/db/{db}": b"gpulab.rocm TEST FIXTURE kernel db placeholder\n"})

    names = {b[0]: b[1] for b in base}
    for meta, deps in recipes.METAS.items():
        add(meta, core_version, f"ROCm meta-package {meta}", [d for d in deps if d in names])
        names[meta] = core_version

    packages = []
    for name, version, summary, deps, pkg_files, scripts in base:
        dep_strings = [f"{d} (= {names[d]})" for d in deps]
        plain = Package(name, version, summary, dep_strings)
        plain.files, plain.scripts = pkg_files, scripts
        # Versioned twin (multi-version install): same files, deps on the versioned names. No Conflicts field:
        # mixing plain and versioned packages of one release fails in dpkg on the shared files ("trying to
        # overwrite"), which is what AMD's docs warn about; a Conflicts would make apt remove the stack instead.
        twin = Package(name + ver, version, summary + f" (versioned for ROCm {ver})",
                       [f"{d}{ver} (= {names[d]})" for d in deps])
        twin.files, twin.scripts = pkg_files, scripts
        packages += [plain, twin]
    return packages


def amdgpu_packages(drv, codename, rocm_version=None):
    """amdgpu-dkms and its firmware for one driver (a release's "amdgpu" or a recipes.CORE_DRIVERS entry)."""
    ubuntu = recipes.UBUNTU[codename]
    module = f"{drv['kernel']}-{drv['build']}.{ubuntu}"
    # Up to 6.4 the driver carries the ROCm code; from 7.0 its own 8-digit number (recipes.py).
    code = drv.get("code") or version_code(rocm_version)
    version = f"1:{drv['kernel']}.{code}-{drv['build']}.{ubuntu}"
    firmware = Package("amdgpu-dkms-firmware", version, "amdgpu firmware", arch="all", section="kernel")
    firmware.files = {"/lib/firmware/updates/amdgpu/GPULAB-FIXTURE.txt":
                      f"{FIXTURE_NOTE}: no firmware here ({module}).\n".encode()}
    dkms = Package("amdgpu-dkms", version, "amdgpu kernel driver through DKMS (builds nothing)",
                   [f"amdgpu-dkms-firmware (= {version})"], arch="all", section="kernel")
    # A marker where AMD's package puts the DKMS sources; no DKMS run, no module built.
    dkms.files = {f"/usr/src/amdgpu-{module}/dkms.conf":
                  (f"# {FIXTURE_NOTE}: no sources, DKMS is never run.\n"
                   f'PACKAGE_NAME="amdgpu"\nPACKAGE_VERSION="{module}"\n').encode()}
    return [dkms, firmware]


# ---------------------------------------------------------------------------------------------------------------
# The ROCm Core SDK stream (recipes.CORE): one set of packages per release, the same in every distribution folder

def core_priority(version):
    """Priority of a Core release's /opt/rocm/core alternative: a newer release wins (10.1.0 -> 100100).
    AMD's is not documented (recipes.py)."""
    major, minor, patch = (int(x) for x in version.split("."))
    return (major * 100 + minor) * 100 + patch


def core_postinst(prefix, priority):
    return f"""#!/bin/sh
# {FIXTURE_NOTE}.
# AMD's amdrocm packages point /opt/rocm/bin, /opt/rocm/lib (and /opt/rocm/core) at the newest
# /opt/rocm/core-X.Y through update-alternatives (AMD's transition guide); the alternative's name,
# its priority and the package that runs it are the fixture's (AMD does not document them).
set -e
case "$1" in
    configure)
        if command -v update-alternatives >/dev/null 2>&1; then
            update-alternatives --install /opt/rocm/core amdrocm-core {prefix} {priority} \\
                --slave /opt/rocm/bin amdrocm-core-bin {prefix}/bin \\
                --slave /opt/rocm/lib amdrocm-core-lib {prefix}/lib
        fi
        ;;
esac
exit 0
"""


def core_prerm(prefix):
    return f"""#!/bin/sh
# {FIXTURE_NOTE}.
# Drops this release from the /opt/rocm/core alternative (the links go with the last release).
set -e
case "$1" in
    remove|upgrade|deconfigure)
        if command -v update-alternatives >/dev/null 2>&1; then
            update-alternatives --remove amdrocm-core {prefix} || true
        fi
        ;;
esac
exit 0
"""


def core_packages(release):
    """The packages of one Core release (recipes.CORE_RELEASES entry), named with X.Y, all at release["apt"]."""
    ver, apt_version = release["version"], release["apt"]
    series = ver.rsplit(".", 1)[0]  # X.Y: package names and the install root (patches install in place)
    prefix = f"/opt/rocm/core-{series}"
    soname = recipes.CORE_SONAMES
    packages = {}

    def add(name, summary, deps=(), files=None, scripts=None):
        pkg = Package(name, apt_version, summary, [f"{d} (= {apt_version})" for d in deps])
        pkg.files, pkg.scripts = files or {}, scripts or {}
        packages[name] = pkg

    def lib(name):
        path = f"{prefix}/lib/{name}.so.{soname[name]}"
        return {path: stub_library(path.rsplit("/", 1)[-1])}

    def tools(*names):
        files = {}
        for tool in names:
            files[f"{prefix}/bin/{tool}"] = tool_script(tool, release, prefix)
            files.update(fixture_files(prefix, tool))
        return files

    smi = ["rocm-smi"] if release["rocm_smi"] else []
    host = f"amdrocm-core{series}"
    add(host, f"ROCm Core SDK {series}: runtime, tools, version file and the /opt/rocm alternative",
        files={f"{prefix}/.info/version": f"{apt_version}\n".encode(),
               **lib("libamdhip64"), **lib("libhsa-runtime64"), **lib("libamd_smi"),
               **(lib("librocm_smi64") if smi else {}),
               **tools("rocminfo", "rocm_agent_enumerator", "amd-smi", *smi)},
        scripts={"postinst": core_postinst(prefix, core_priority(ver)), "prerm": core_prerm(prefix)})
    add(f"amdrocm-blas{series}", "ROCm Core SDK BLAS (rocBLAS and hipBLAS), host part", [host],
        {**lib("librocblas"), **lib("libhipblas")})
    add(f"amdrocm-dnn{series}", "ROCm Core SDK DNN (MIOpen, hipDNN), host part", [f"amdrocm-blas{series}"],
        lib("libMIOpen"))
    add(f"amdrocm-core-dev{series}", "ROCm Core SDK development files (hipcc, HIP headers)", [host],
        {f"{prefix}/bin/hipcc": tool_script("hipcc", release, prefix),
         f"{prefix}/include/hip/hip_runtime.h": b"/* gpulab.rocm TEST FIXTURE */\n"})
    for gfx in recipes.CORE["targets"]:
        add(f"amdrocm-core{series}-{gfx}", f"ROCm Core SDK {series} device code for {gfx}", [host],
            {f"{prefix}/share/gpulab-fixture/targets/{gfx}": f"{FIXTURE_NOTE}: {gfx} device code\n".encode()})
        add(f"amdrocm-blas{series}-{gfx}", f"ROCm Core SDK BLAS kernels for {gfx}",
            [f"amdrocm-blas{series}", f"amdrocm-core{series}-{gfx}"],
            {f"{prefix}/lib/rocblas/library/TensileLibrary_lazy_{gfx}.dat": b"gpulab.rocm TEST FIXTURE\n"})
        add(f"amdrocm-dnn{series}-{gfx}", f"ROCm Core SDK DNN kernels and MIOpen kernel database for {gfx}",
            [f"amdrocm-dnn{series}", f"amdrocm-blas{series}-{gfx}"],
            {f"{prefix}/share/miopen/db/{gfx}.kdb": b"gpulab.rocm TEST FIXTURE kernel db placeholder\n"})
        add(f"amdrocm{series}-{gfx}", f"ROCm Core SDK {series} for {gfx}",
            [f"amdrocm-core{series}-{gfx}", f"amdrocm-blas{series}-{gfx}", f"amdrocm-dnn{series}-{gfx}"])
        add(f"amdrocm-core-dev{series}-{gfx}", f"ROCm Core SDK {series} development files for {gfx}",
            [f"amdrocm-core-dev{series}", f"amdrocm{series}-{gfx}"])
    targets = recipes.CORE["targets"]
    add(f"amdrocm{series}", f"ROCm Core SDK {series} for every GPU target", [f"amdrocm{series}-{g}" for g in targets])
    add(f"amdrocm-core-sdk{series}", f"ROCm Core SDK {series}: everything",
        [f"amdrocm{series}", f"amdrocm-core-dev{series}"] + [f"amdrocm-core-dev{series}-{g}" for g in targets])
    return list(packages.values())


def graphics_packages(release, codename):
    """What the fixture's graphics/<folder>/ubuntu repository (ROCm >= 7.0) serves: a stand-in, so the index is real."""
    version = f"1.0.0.{version_code(release['version'])}-{release['build']}~{recipes.UBUNTU[codename]}"
    packages = []
    for name in recipes.GRAPHICS_PACKAGES:
        pkg = Package(name, version, "stand-in for AMD's graphics repository of ROCm 7", arch="all", section="libs")
        pkg.files = {f"/usr/share/doc/{name}/GPULAB-FIXTURE.txt": f"{FIXTURE_NOTE}\n".encode()}
        packages.append(pkg)
    return packages


def exporter_packages(exporter, codename):
    """AMD's amdgpu-exporter as a stand-in (recipes.EXPORTER): its program prints the configuration it would serve
    and serves nothing; the unit and the default config sit where AMD's package puts them."""
    pkg = Package("amdgpu-exporter", f"{exporter['version']}~{recipes.UBUNTU[codename]}",
                  "AMD GPU Metrics Exporter for Ubuntu, stand-in", section="utils")
    pkg.files = {
        "/usr/local/bin/amd-metrics-exporter": f"""#!/bin/sh
# {FIXTURE_NOTE}: a stand-in for AMD's amd-metrics-exporter, which serves GPU metrics on the
# config's ServerPort. Same option and default as AMD's (cmd/exporter/main.go: -amd-metrics-config,
# /etc/metrics/config.json); it prints the configuration's path and content, and serves nothing.
config=/etc/metrics/config.json
[ "$1" = -amd-metrics-config ] && config=$2
echo "amd-metrics-exporter ({FIXTURE_NOTE}): config $config"
exec cat "$config"
""".encode(),
        # AMD's unit (debian/usr/lib/systemd/system/amd-metrics-exporter.service), without its gpuagent (not here).
        "/usr/lib/systemd/system/amd-metrics-exporter.service": f"""# {FIXTURE_NOTE}
[Unit]
Description=AMD GPU Prometheus Exporter Service (stand-in)

[Service]
Type=simple
ExecStart=/usr/local/bin/amd-metrics-exporter
Restart=on-failure
RestartSec=10

[Install]
WantedBy=multi-user.target
""".encode(),
        # AMD's package ships example/config.json here (Makefile.package); the stand-in a short one.
        "/etc/metrics/config.json": b'{"ServerPort": 5000, "GPUConfig": {"Fields": []}}\n',
    }
    return [pkg]


# ---------------------------------------------------------------------------------------------------------------
# Repository metadata and signatures

def pool_path(pkg):
    return f"pool/main/{pkg.name[0]}/{pkg.name}/{pkg.filename()}"


def index_repo(repo_root, codenames, origin=ORIGIN):
    """Packages{,.gz} per codename with apt-ftparchive (a file list per codename: one shared pool), then Release."""
    conf = ['Dir { ArchiveDir "."; };', 'Default { Packages::Compress ". gzip"; };']
    for codename in codenames:
        binary = f"dists/{codename}/main/binary-amd64"
        (repo_root / binary).mkdir(parents=True)
        conf.append(f'BinDirectory "{binary}" {{ Packages "{binary}/Packages"; FileList "files-{codename}"; }};')
    (repo_root / "ftparchive.conf").write_text("\n".join(conf) + "\n")
    run(["apt-ftparchive", "--no-contents", "-q=2", "generate", "ftparchive.conf"], cwd=repo_root)
    for codename in codenames:
        (repo_root / f"files-{codename}").unlink()
        if not (repo_root / f"dists/{codename}/main/binary-amd64/Packages").stat().st_size:
            raise BuildError(f"apt-ftparchive indexed no package in {repo_root}/dists/{codename}")
        release = run(["apt-ftparchive", "-q=2",
                       "-o", f"APT::FTPArchive::Release::Origin={origin}",
                       "-o", f"APT::FTPArchive::Release::Label={origin}",
                       "-o", f"APT::FTPArchive::Release::Suite={codename}",
                       "-o", f"APT::FTPArchive::Release::Codename={codename}",
                       "-o", "APT::FTPArchive::Release::Architectures=amd64",
                       "-o", "APT::FTPArchive::Release::Components=main",
                       "-o", f"APT::FTPArchive::Release::Description={FIXTURE_NOTE} (mirror layout of {origin})",
                       "release", f"dists/{codename}"], cwd=repo_root).stdout
        (repo_root / "dists" / codename / "Release").write_text(release)
    (repo_root / "ftparchive.conf").unlink()


class Signer:
    """A throwaway GNUPGHOME with the legacy signing key, the Core stream's signing key and an unrelated key."""

    def __init__(self):
        self.home = tempfile.mkdtemp(prefix="gpulab-mirror-gpg-")
        os.chmod(self.home, 0o700)
        self.fingerprint = self.generate(KEY_UID)
        self.core_fingerprint = self.generate(CORE_KEY_UID)
        self.wrong_fingerprint = self.generate(WRONG_KEY_UID)

    def gpg(self, *args):
        return run(["gpg", "--homedir", self.home, "--batch", "--yes", "--no-tty", *args])

    def generate(self, uid):
        self.gpg("--pinentry-mode", "loopback", "--passphrase", "", "--quick-gen-key", uid, "rsa3072", "sign",
                 "never")
        for line in self.gpg("--with-colons", "--list-secret-keys", uid).stdout.splitlines():
            if line.startswith("fpr:"):
                return line.split(":")[9]
        raise BuildError(f"gpg made no key for {uid}")

    def export(self, fingerprint, dest):
        dest.write_text(self.gpg("--armor", "--export", fingerprint).stdout)

    def sign(self, dist_dir, fingerprint):
        release = str(dist_dir / "Release")
        key = ["--local-user", fingerprint + "!", "--digest-algo", "SHA512"]
        self.gpg(*key, "--clearsign", "--output", str(dist_dir / "InRelease"), release)
        self.gpg(*key, "--armor", "--detach-sign", "--output", str(dist_dir / "Release.gpg"), release)

    def close(self):
        subprocess.run(["gpgconf", "--homedir", self.home, "--kill", "gpg-agent"], capture_output=True, check=False)
        shutil.rmtree(self.home, ignore_errors=True)


# ---------------------------------------------------------------------------------------------------------------

def build(out, jobs):
    started = time.monotonic()
    missing = [name for name in profile_captures() if not (CAPTURES / name).is_file()]
    if missing:
        raise BuildError(f"recipes.PROFILES names captures that are not in {CAPTURES}: {', '.join(missing)}")
    stage = out.parent / f".{out.name}.building-{os.getpid()}"
    shutil.rmtree(stage, ignore_errors=True)
    # gpg-agent makes the three RSA keys (seconds of CPU) while this process writes the packages.
    keygen = concurrent.futures.ThreadPoolExecutor(1)
    signing = keygen.submit(Signer)
    try:
        repos = {}  # repo root -> (codenames, Release origin, signing key: "legacy" or "core")
        debs = []  # (package, destination)
        links = []  # (built .deb, another pool's path): Core packages are the same in every distribution folder

        def place(root, codename, packages, origin=ORIGIN, key="legacy"):
            """List packages in root's index for codename; return their pool paths."""
            repos.setdefault(root, ([], origin, key))[0].append(codename)
            root.mkdir(parents=True, exist_ok=True)
            (root / f"files-{codename}").write_text("".join(pool_path(pkg) + "\n" for pkg in packages))
            return [root / pool_path(pkg) for pkg in packages]

        def queue(root, codename, packages):
            debs.extend(zip(packages, place(root, codename, packages)))

        for release in recipes.RELEASES:
            # From 7.0 the driver has its own folder (30.x) and user space a second repository (graphics/).
            driver = release["amdgpu"]
            amdgpu_root = stage / "amdgpu" / driver.get("folder", release["folder"]) / "ubuntu"
            for codename in release["codenames"]:
                queue(stage / "rocm" / "apt" / release["folder"], codename, rocm_packages(release, codename))
                queue(amdgpu_root, codename, amdgpu_packages(driver, codename, release["version"]))
                if release.get("graphics"):
                    queue(stage / "graphics" / release["folder"] / "ubuntu", codename,
                          graphics_packages(release, codename))
        for driver in recipes.CORE_DRIVERS:  # the Core releases' drivers, in the legacy layout
            for codename in driver["codenames"]:
                queue(stage / "amdgpu" / driver["folder"] / "ubuntu", codename, amdgpu_packages(driver, codename))
        exporter = recipes.EXPORTER
        for codename in exporter["codenames"]:
            queue(stage / "device-metrics-exporter" / "apt" / exporter["folder"], codename,
                  exporter_packages(exporter, codename))
        core = [pkg for release in recipes.CORE_RELEASES for pkg in core_packages(release)]
        first, *others = [stage / CORE_ROOT / distro for distro in recipes.CORE["distros"]]
        built = place(first, recipes.CORE["suite"], core, recipes.CORE["origin"], "core")
        debs += zip(core, built)
        for root in others:
            links += zip(built, place(root, recipes.CORE["suite"], core, recipes.CORE["origin"], "core"))
        mtime = int(time.time())
        for pkg, dest in debs:  # in-process Python work: threads would only contend for the GIL
            write_deb(pkg, dest, mtime)
        for source, dest in links:
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.link(source, dest)
        built_debs = time.monotonic()

        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            list(pool.map(lambda root: index_repo(root, *repos[root][:2]), repos))
        signer = signing.result()
        fingerprints = {"legacy": signer.fingerprint, "core": signer.core_fingerprint}
        dists = [(root / "dists" / c, fingerprints[key]) for root, (codenames, _o, key) in repos.items()
                 for c in codenames]
        with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
            list(pool.map(lambda d: signer.sign(*d), dists))
        signer.export(signer.fingerprint, stage / "rocm" / "rocm.gpg.key")
        signer.export(signer.wrong_fingerprint, stage / "rocm" / "wrong.gpg.key")
        (stage / "rocm" / "gpg").mkdir()
        signer.export(signer.core_fingerprint, stage / "rocm" / "gpg" / "packages.gpg")  # armored, as AMD's
        (stage / "fingerprint").write_text(signer.fingerprint + "\n")
        (stage / "wrong-fingerprint").write_text(signer.wrong_fingerprint + "\n")
        (stage / "core-fingerprint").write_text(signer.core_fingerprint + "\n")
        (stage / ".stamp").write_text(builder_hash() + "\n")  # last: its presence means complete
        shutil.rmtree(out, ignore_errors=True)
        stage.rename(out)
    finally:
        if signing.exception() is None:  # waits for the keys, so the agent is stopped whatever failed
            signing.result().close()
        keygen.shutdown()
        shutil.rmtree(stage, ignore_errors=True)
    total = time.monotonic() - started
    print(f"build_mirror: built {out}: {len(debs)} packages ({len(links)} more hard-linked) in {len(dists)} dists, "
          f"{total:.1f} s (packages {built_debs - started:.1f} s, index + signatures "
          f"{total - (built_debs - started):.1f} s, {jobs} jobs)")


def is_current(out):
    try:
        return ((out / ".stamp").read_text().strip() == builder_hash()
                and len((out / "fingerprint").read_text().strip()) == 40
                and len((out / "core-fingerprint").read_text().strip()) == 40
                and (out / "rocm" / "rocm.gpg.key").is_file()
                and (out / "rocm" / "gpg" / "packages.gpg").is_file())
    except OSError:
        return False


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="directory to build the mirror into")
    parser.add_argument("--force", action="store_true", help="rebuild even if DIR holds a current mirror")
    parser.add_argument("--jobs", type=int, default=max(2, os.cpu_count() or 2),
                        help="parallel apt-ftparchive and gpg runs")
    args = parser.parse_args()
    out = args.out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.parent / f".{out.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent callers wait, then find the mirror current
        if not args.force and is_current(out):
            print(f"build_mirror: {out} is current (same builder files), nothing to do")
            return 0
        try:
            build(out, args.jobs)
        except BuildError as err:
            print(f"build_mirror: ERROR: {err}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
