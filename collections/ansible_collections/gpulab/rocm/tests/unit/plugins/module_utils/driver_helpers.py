"""A host's kernel side laid out under a fake root, as the kernel packages and DKMS lay it out on Ubuntu and Debian,
for the probe's readers (node_state.driver_state) and the guard's tests (test_driver_probe.py, test_plan_driver.py,
test_plan_verify.py). The layout is dkms's own (dell/dkms dkms.in: <module>/<version>/source links to
/usr/src/<module>-<version>; <module>/<version>/<kernel>/<arch>/module holds what it built; <module>/kernel-<kernel>-
<arch> links to <version>/<kernel>/<arch> for the installed one; Debian and Ubuntu install into
/lib/modules/<kernel>/updates/dkms), checked against Debian 12's dkms 3.0.10 itself where one is at hand
(test_driver_probe.py). The names are real ones:

- amdgpu-dkms 1:6.16.13.30300400-2341068.24.04 is the DKMS tree amdgpu/6.16.13-2341068.24.04 (driver 30.30.4, ROCm
  7.2.4): both lines in ROCm/ROCm#6193; 6.16.13/2341068 also in silogen/cluster-bloom's table.
- amdgpu/6.7.0-1787201.22.04 is the tree ROCm/ROCm#3701 found left behind, its source gone ("Could not locate
  dkms.conf file. File: /var/lib/dkms/amdgpu/6.7.0-1787201.22.04/source/dkms.conf does not exist").
- Ubuntu 24.04's kernels 6.8.0-45-generic and 6.8.0-51-generic (ROCm/ROCm#3883, and the dkms status line
  amdgpu/6.8.5-2044426.22.04, 6.8.0-51-generic, x86_64: installed of a third-party note); Ubuntu 26.04's
  7.0.0-22-generic (ROCm/amdgpu#220); Ubuntu's modules are compressed with zstd (.ko.zst).
"""

import os

DRIVER_VERSION = "1:6.16.13.30300400-2341068.24.04"
DKMS_VERSION = "6.16.13-2341068.24.04"
OLD_DKMS_VERSION = "6.7.0-1787201.22.04"
RUNNING = "6.8.0-45-generic"
NEWEST = "6.8.0-51-generic"
ARCH = "x86_64"
IN_TREE = "kernel/drivers/gpu/drm/amd/amdgpu"


def write(path, text="", mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)
    os.chmod(path, mode)


def link(path, target):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


class Host(object):
    """A fake root (root) and sysfs (sysfs) laid out step by step."""

    def __init__(self, tmp_path):
        self.root = str(tmp_path / "root")
        self.sysfs = str(tmp_path / "sys")
        os.makedirs(os.path.join(self.root, "boot"))
        os.makedirs(os.path.join(self.root, "var", "lib", "dkms"))
        os.makedirs(self.sysfs)

    def at(self, path):
        return os.path.join(self.root, path.lstrip("/"))

    def kernel(self, release, headers=True, in_tree=".ko.zst", dkms=None):
        """An installed kernel: modules.dep, its in-tree amdgpu (a suffix, or None), its headers (build links to
        /usr/src/linux-headers-<release>, which has include/), a DKMS amdgpu in updates/dkms (a suffix, or None)."""
        base = "/lib/modules/%s" % release
        write(self.at(base + "/modules.dep"), "kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst: \n")
        if in_tree:
            write(self.at("%s/%s/amdgpu%s" % (base, IN_TREE, in_tree)), "\x7fELF")
        if headers:
            os.makedirs(self.at("/usr/src/linux-headers-%s/include" % release), exist_ok=True)
            link(self.at(base + "/build"), "/usr/src/linux-headers-%s" % release)
        if dkms:
            write(self.at("%s/updates/dkms/amdgpu%s" % (base, dkms)), "\x7fELF")
        return self

    def leftover(self, release):
        """A /lib/modules folder a removed kernel left: DKMS's module, no modules.dep (not a kernel any more)."""
        write(self.at("/lib/modules/%s/updates/dkms/amdgpu.ko.zst" % release), "\x7fELF")
        return self

    def tree(self, version, module="amdgpu", source="package", built=(), installed=(), ko=".ko.zst"):
        """A DKMS tree: source 'package' links to /usr/src/<module>-<version> with its dkms.conf, 'gone' links there
        with nothing there (ROCm/ROCm#3701), a path links there (with a dkms.conf), None has no source link; built:
        kernels it built a module folder for (with amdgpu.ko<ko> when ko), installed: those it is installed for."""
        base = "/var/lib/dkms/%s/%s" % (module, version)
        os.makedirs(self.at(base), exist_ok=True)
        if source is not None:
            target = "/usr/src/%s-%s" % (module, version) if source in ("package", "gone") else source
            link(self.at(base + "/source"), target)
            if source != "gone":
                folder = target if target.startswith(self.root + "/") else self.at(target)
                write(folder + "/dkms.conf", 'PACKAGE_NAME="%s"\nPACKAGE_VERSION="%s"\n' % (module, version))
        for kernel in built:
            folder = self.at("%s/%s/%s/module" % (base, kernel, ARCH))
            os.makedirs(folder, exist_ok=True)
            if ko:
                write(os.path.join(folder, "amdgpu" + ko), "\x7fELF")
        for kernel in installed:
            link(self.at("/var/lib/dkms/%s/kernel-%s-%s" % (module, kernel, ARCH)), "%s/%s/%s" % (version, kernel, ARCH))
        return self

    def loaded(self, version=None, srcversion=None, amdkcl=False):
        """amdgpu in sysfs: the DKMS build has a version file (MODULE_VERSION), the kernel's own none."""
        write(os.path.join(self.sysfs, "module", "amdgpu", "initstate"), "live\n")
        if version:
            write(os.path.join(self.sysfs, "module", "amdgpu", "version"), version + "\n")
        if srcversion:
            write(os.path.join(self.sysfs, "module", "amdgpu", "srcversion"), srcversion + "\n")
        if amdkcl:
            os.makedirs(os.path.join(self.sysfs, "module", "amdkcl"), exist_ok=True)
        return self


def ubuntu_host(tmp_path, running=RUNNING):
    """Ubuntu 24.04 with amdgpu-dkms 30.30.4 installed for the running kernel and loaded, and a newer kernel
    (6.8.0-51) whose headers are not installed; the old tree of ROCm/ROCm#3701 left behind."""
    host = Host(tmp_path)
    host.kernel(running, dkms=".ko.zst").kernel(NEWEST, headers=False)
    host.tree(DKMS_VERSION, built=[running], installed=[running])
    host.tree(OLD_DKMS_VERSION, source="gone")
    host.loaded(version="6.16.13", srcversion="1C4E2D9F0B6A5E3C7D8A9B0", amdkcl=True)
    return host
