"""Package recipes of the fixture ROCm mirror: releases, version strings, dependency structure, profiles.

Data only; build_mirror.py turns it into .deb files. Every package built from here is a gpulab.rocm TEST
FIXTURE that imitates the names, versions and dependencies of AMD's packages, never AMD's package itself.

Sources for the version strings (see /work/shared/docs/rocm-reference.md in the project notes, §1.2, §4):
- "<component version>.<MMmmpp>-<build>~<ubuntu>" e.g. rocminfo_1.0.0.60103-122~22.04 (real listing).
- amdgpu-dkms "1:6.8.5.60200-2009582.24.04" for 6.2.0 on noble is real (ROCm/ROCm issue #3701 apt log);
  "1:6.8.5.60204-2044426.22.04" for 6.2.4 was given by the project. The 5.x driver builds below are
  PLAUSIBLE, NOT VERIFIED (kernel-module base and build number chosen to look like AMD's).
- Build numbers 139 (6.2.4) was given; 66 (6.2.0), 98 (5.7.1), 93 (5.6.1), 121 (5.4.3) are recalled from AMD
  package listings and not re-verified here. Component versions (hip 6.2.41134 etc.) likewise.
"""

# Ubuntu codename -> version suffix used in AMD's package versions.
UBUNTU = {"focal": "20.04", "jammy": "22.04", "noble": "24.04"}

# One entry per repository folder. "version" is the ROCm release (always X.Y.Z, used for /opt/rocm-X.Y.Z and
# versioned package names); "folder" is the directory under rocm/apt/ and amdgpu/ (6.2.0 is served as "6.2").
RELEASES = [
    {
        "version": "5.4.3", "folder": "5.4.3", "build": 121, "codenames": ["focal", "jammy"],
        "components": {
            "hip-runtime-amd": "5.4.22804", "hipcc": "1.0.0", "rocminfo": "1.0.0", "rocm-smi-lib": "5.0.0",
            "hsa-rocr": "1.7.0", "rocblas": "2.46.0", "miopen-hip": "2.19.0",
        },
        "sonames": {"libamdhip64": 5, "librocblas": 0, "librocm_smi64": 5},
        "kdb_scheme": "miopenkernels",
        "amdgpu": {"kernel": "5.18.13", "build": 1538762},  # plausible, not verified
    },
    {
        "version": "5.6.1", "folder": "5.6.1", "build": 93, "codenames": ["focal", "jammy"],
        "components": {
            "hip-runtime-amd": "5.6.31062", "hipcc": "1.0.0", "rocminfo": "1.0.0", "rocm-smi-lib": "5.0.0",
            "hsa-rocr": "1.9.0", "rocblas": "3.0.0", "miopen-hip": "2.20.0",
        },
        "sonames": {"libamdhip64": 5, "librocblas": 3, "librocm_smi64": 5},
        "kdb_scheme": "miopen-hip-cu",
        "amdgpu": {"kernel": "6.1.5", "build": 1649308},  # plausible, not verified
    },
    {
        "version": "5.7.1", "folder": "5.7.1", "build": 98, "codenames": ["focal", "jammy"],
        "components": {
            "hip-runtime-amd": "5.7.31921", "hipcc": "1.0.0", "rocminfo": "1.0.0", "rocm-smi-lib": "6.0.0",
            "hsa-rocr": "1.11.0", "rocblas": "3.1.0", "miopen-hip": "2.20.0",
        },
        "sonames": {"libamdhip64": 5, "librocblas": 3, "librocm_smi64": 6},
        "kdb_scheme": "miopen-hip",
        "amdgpu": {"kernel": "6.2.4", "build": 1681782},  # plausible, not verified
    },
    {
        "version": "6.2.0", "folder": "6.2", "build": 66, "codenames": ["jammy", "noble"],
        "components": {
            "hip-runtime-amd": "6.2.41133", "hipcc": "1.1.1", "rocminfo": "1.0.0", "rocm-smi-lib": "7.3.0",
            "amd-smi-lib": "24.6.2", "hsa-rocr": "1.14.0", "rocblas": "4.2.0", "miopen-hip": "3.2.0",
        },
        "sonames": {"libamdhip64": 6, "librocblas": 4, "librocm_smi64": 7},
        "kdb_scheme": "miopen-hip",
        "amdgpu": {"kernel": "6.8.5", "build": 2009582},  # real (ROCm/ROCm #3701)
    },
    {
        "version": "6.2.4", "folder": "6.2.4", "build": 139, "codenames": ["jammy", "noble"],
        "components": {
            "hip-runtime-amd": "6.2.41134", "hipcc": "1.1.1", "rocminfo": "1.0.0", "rocm-smi-lib": "7.3.0",
            "amd-smi-lib": "24.6.3", "hsa-rocr": "1.14.0", "rocblas": "4.2.4", "miopen-hip": "3.2.0",
        },
        "sonames": {"libamdhip64": 6, "librocblas": 4, "librocm_smi64": 7},
        "kdb_scheme": "miopen-hip",
        "amdgpu": {"kernel": "6.8.5", "build": 2044426},  # given by the project
    },
]

# ROCm 7.x releases (one entry each, appended here so other additions merge cleanly). From 7.0 the layout changes
# (rocm-reference.md 1.1): user space also needs graphics/<folder>/ubuntu (built from "graphics" below: the fixture
# serves the same small set there, AMD's holds the Mesa/UMD graphics libraries), and the driver lives under its own
# numbers, amdgpu/<driver folder>/ubuntu ("amdgpu": {"folder", "code"}; amdgpu-dkms carries the driver's 8-digit
# code, 6.10.5.30100200-2109964.24.04 for 30.10.2 in AMD's ROCm blog on the driver version scheme).
# Version sources:
# - 7.2.x components: AMD's rocm/apt/7.2 pool as listed in a third-party PKGBUILD (rocblas 5.2.0.70200-43,
#   miopen-hip 3.5.1.70200-43, hipcc 1.1.1.70200-43, hip-dev 7.2.26015.70200-43) and rocm-core 7.2.0.70200-43~24.04
#   in a ROCm issue; 7.2.3 keeps 7.2.0's component versions and build 43: PLAUSIBLE, NOT VERIFIED.
# - 7.0.2: miopen-hip-gfx942kdb 3.5.0.70002-56~24.04 (third-party apt-cache, rocm-reference.md 4.4): build 56 and
#   MIOpen 3.5.0 are real; the other component versions are PLAUSIBLE, NOT VERIFIED.
# - Driver kernel bases and build numbers (6.14.14/6.10.5, 22xxxxx): PLAUSIBLE, NOT VERIFIED; the 8-digit codes
#   follow AMD's documented scheme.
RELEASES += [
    {
        "version": "7.0.2", "folder": "7.0.2", "build": 56, "codenames": ["jammy", "noble"],
        "components": {
            "hip-runtime-amd": "7.0.51831", "hipcc": "1.1.1", "rocminfo": "1.0.0", "rocm-smi-lib": "7.8.0",
            "amd-smi-lib": "26.0.2", "hsa-rocr": "1.18.0", "rocblas": "5.0.2", "miopen-hip": "3.5.0",
        },
        "sonames": {"libamdhip64": 7, "librocblas": 5, "librocm_smi64": 7},
        "kdb_scheme": "miopen-hip",
        "graphics": True,
        "amdgpu": {"folder": "30.10.2", "code": "30100200", "kernel": "6.10.5", "build": 2109964},
    },
    {
        "version": "7.2.3", "folder": "7.2.3", "build": 43, "codenames": ["jammy", "noble"],
        "components": {
            "hip-runtime-amd": "7.2.26015", "hipcc": "1.1.1", "rocminfo": "1.0.0", "rocm-smi-lib": "7.8.0",
            "amd-smi-lib": "26.2.1", "hsa-rocr": "1.18.0", "rocblas": "5.2.0", "miopen-hip": "3.5.1",
        },
        "sonames": {"libamdhip64": 7, "librocblas": 5, "librocm_smi64": 7},
        "kdb_scheme": "miopen-hip",
        "graphics": True,
        "amdgpu": {"folder": "30.30.3", "code": "30300300", "kernel": "6.14.14", "build": 2254139},
    },
]
# 7.2.4 (2026-05-29), driver 30.30.4: the last legacy release (rocm-reference.md 13). Components and build 43 as
# 7.2.3's; the driver's kernel base and build number: PLAUSIBLE, NOT VERIFIED.
RELEASES.append(dict(RELEASES[-1], version="7.2.4", folder="7.2.4",
                     amdgpu={"folder": "30.30.4", "code": "30300400", "kernel": "6.14.14", "build": 2269523}))

# MIOpen kernel-db packages: (gfx, CUs) per naming scheme (rocm-reference.md §4.4).
#   miopenkernels  (<= 5.4):  miopenkernels-<gfx>-<CUs>kdb, file <gfx>_<CUs>.kdb
#   miopen-hip-cu  (5.5-5.6): miopen-hip-<gfx>-<CUs>kdb,    file <gfx>_<CUs>.kdb
#   miopen-hip     (>= 5.7):  miopen-hip-<gfx>kdb,          file <gfx>.kdb
# gfx1100 kdb packages were not confirmed in AMD's pool (rocm-reference.md says so); they are here because the
# project asked for them. gfx942 only from 6.0 (MI300).
KDB_TARGETS = {
    "miopenkernels": [("gfx906", 60), ("gfx906", 64), ("gfx908", 120), ("gfx90a", 104), ("gfx90a", 110),
                      ("gfx1030", 36)],
    "miopen-hip-cu": [("gfx906", 60), ("gfx908", 120), ("gfx90a", 104), ("gfx90a", 110), ("gfx1030", 36)],
    "miopen-hip": [("gfx906", None), ("gfx908", None), ("gfx90a", None), ("gfx942", None), ("gfx1030", None),
                   ("gfx1100", None), ("gfx950", None)],
}
# The first release of each kdb target that is not in every release: gfx942 (MI300) from 6.0, gfx950 (MI350X/MI355X)
# from 7.0 (rocm-reference.md 7). A miopen-hip-gfx950kdb package is not confirmed in AMD's pool: PLAUSIBLE, NOT
# VERIFIED (the roles treat kdb packages as optional and ask apt).
KDB_SINCE = {"gfx942": "6.0.0", "gfx950": "7.0.0"}
# The packages the fixture's graphics/<folder>/ubuntu repository serves (AMD's holds the user-mode graphics
# libraries ROCm 7 links against; one stand-in package, which rocm-core does not need, keeps the index real).
GRAPHICS_PACKAGES = ["amdgpu-graphics-fixture"]

# Meta-packages: name -> the packages it depends on (all at this release's exact version, as AMD's do).
# Kept small: the real ones pull many more libraries (hipBLAS, rocFFT, RCCL ...). miopen in rocm-hip-sdk
# follows the project's brief; in AMD's packaging MIOpen comes with rocm-ml-libraries/rocm-ml-sdk.
METAS = {
    "rocm-language-runtime": ["hsa-rocr", "rocm-core"],
    "rocm-hip-runtime": ["hip-runtime-amd", "rocm-core", "rocm-language-runtime", "rocminfo"],
    "rocm-hip-libraries": ["rocblas", "rocm-core", "rocm-hip-runtime"],
    "rocm-hip-sdk": ["hipcc", "miopen-hip", "miopen-hip-dev", "rocblas-dev", "rocm-core", "rocm-hip-libraries",
                     "rocm-hip-runtime"],
    "rocm-ml-libraries": ["miopen-hip", "rocm-core", "rocm-hip-libraries"],
    "rocm-ml-sdk": ["miopen-hip-dev", "rocm-core", "rocm-hip-sdk", "rocm-ml-libraries"],
    "rocm-developer-tools": ["amd-smi-lib", "rocm-core", "rocm-smi-lib", "rocminfo"],
    "rocm": ["rocm-core", "rocm-developer-tools", "rocm-hip-sdk", "rocm-ml-sdk"],
}

# Component packages: name -> (version key in "components" or None for the ROCm version, dependencies).
# Each also depends on rocm-core at the exact version; that alone keeps apt from mixing releases.
COMPONENTS = {
    "hsa-rocr": ("hsa-rocr", []),
    "hip-runtime-amd": ("hip-runtime-amd", ["hsa-rocr"]),
    "hipcc": ("hipcc", []),
    "rocminfo": ("rocminfo", ["hsa-rocr"]),
    "rocm-smi-lib": ("rocm-smi-lib", []),
    "amd-smi-lib": ("amd-smi-lib", []),
    "rocblas": ("rocblas", ["hip-runtime-amd"]),
    "rocblas-dev": ("rocblas", ["rocblas"]),
    "miopen-hip": ("miopen-hip", ["hip-runtime-amd", "rocblas"]),
    "miopen-hip-dev": ("miopen-hip", ["miopen-hip"]),
}

# Fixture profiles: which capture each fake tool prints. Keys are what the tool looks up:
#   rocminfo: "default"; rocm-smi: "json" (with --json) then "text"; amd-smi: "<subcommand>.json|txt"
#   ("default.*" with no subcommand); every tool falls back to "any" (used by no-gpu for the real failure).
# Value: (capture path in the collection's fixture store, build_mirror.CAPTURES; exit code; stream 1=stdout 2=stderr).
# Streams: rocm-smi and amd-smi print their failures through Python logging, which writes to stderr.
PROFILES = {
    "rx6900xt": {
        "rocminfo": {"default": ("rocminfo/gfx1030-rx6900xt-rocm6.4.txt", 0, 1)},
    },
    "mi250x": {
        "rocminfo": {"default": ("rocminfo/gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt", 0, 1)},
    },
    "mi300x-vf": {
        "rocminfo": {"default": ("rocminfo/gfx942-mi300x-vf-rocm6.4.0.txt", 0, 1)},
        "amd-smi": {
            "list.txt": ("amd-smi/list-mi300x-vf-azure-rocm7.0.0.txt", 0, 1),
            "default.txt": ("amd-smi/default-table-mi300x-vf-azure-amdsmi26.0.0-rocm7.0.0.txt", 0, 1),
        },
        # `rocm-smi -a` of a 4x MI300X VF host (the rocminfo capture shows 1 VF: different machines).
        "rocm-smi": {"text": ("rocm-smi/showallinfo-a-4x-mi300x-vf-sriov-driver6.7.0.txt", 0, 1)},
    },
    "rx6700xt": {
        # Navi 22 (gfx1031) needs HSA_OVERRIDE_GFX_VERSION; no rocminfo capture of it exists, so rocminfo
        # reports "no capture" (rc 2) instead of inventing one.
        "rocm-smi": {"json": ("rocm-smi/json-telegraf-flags-rx6700xt-rocm6.1.2.json", 0, 1)},
    },
    "rx7600": {
        "rocminfo": {"default": ("rocminfo/gfx1102-rx7600-rocm7-rock6.16.13-sudo.txt", 0, 1)},
        "rocm-smi": {"text": ("rocm-smi/default-rocm7-rx7600.txt", 0, 1)},
    },
    "rx6600": {
        "amd-smi": {
            "static.json": ("amd-smi/static-json-rx6600-navi23-proxmox-bare-array.json", 0, 1),
            "metric.json": ("amd-smi/metric-json-rx6600-navi23-proxmox-bare-array.json", 0, 1),
            "topology.json": ("amd-smi/topology-json-rx6600-single-gpu.json", 0, 1),
        },
        "rocm-smi": {"json": ("rocm-smi/json-showallinfo-rx6600-navi23-jq-reformatted.json", 0, 1)},
    },
    "no-gpu": {
        "rocminfo": {"any": ("rocminfo/fail-rock-not-loaded-azure-mi25.txt", 1, 1)},
        "rocm-smi": {"any": ("rocm-smi/fail-driver-not-initialized-azure-mi25.txt", 0, 2)},
        "amd-smi": {"any": ("amd-smi/fail-version-wsl2-driver-not-initialized.txt", 255, 2)},
    },
}

# Partition modes of a fixture profile (issue 41): amd-smi's `static --partition` prints the capture of
# the current (compute, memory) pair; `set --compute-partition X` / `set --memory-partition Y` print the capture of that
# set and change the pair, kept in /var/lib/gpulab-fixture/partition (root only; GPULAB_FIXTURE_STATE_DIR moves it for
# tests). A pair or a set without a capture is refused with rc 2 and nothing changes. "initial": the pair before any
# set. "moves": AMD's quick-start guide, "setting NPS4 alone ... will internally transition the compute mode from SPX
# to CPX" (SPX+NPS4 is invalid on MI300X). The captures: AMD's documented outputs of that guide, and two DERIVED
# `static --partition` outputs (SPX+NPS1, CPX+NPS1), named so in SOURCES.md.
PARTITIONS = {
    "mi300x-8x": {
        "initial": ("SPX", "NPS1"),
        "static": {
            ("SPX", "NPS1"): "amd-smi/static-partition-spx-nps1-8x-mi300x-derived.txt",
            ("CPX", "NPS1"): "amd-smi/static-partition-cpx-nps1-64-partitions-8x-mi300x-derived.txt",
            ("CPX", "NPS4"): "amd-smi/static-partition-cpx-nps4-64-partitions-8x-mi300x-amd-guide.txt",
        },
        "set_compute": {
            "CPX": "amd-smi/set-compute-partition-cpx-8x-mi300x-amd-guide.txt",
            "SPX": "amd-smi/set-compute-partition-spx-8x-mi300x-amd-guide.txt",
        },
        "set_memory": {
            "NPS4": "amd-smi/set-memory-partition-nps4-8x-mi300x-amd-guide.txt",
            "NPS1": "amd-smi/set-memory-partition-nps1-8x-mi300x-amd-guide.txt",
        },
        "moves": {("SPX", "NPS4"): "CPX"},
    },
}
# The partition profile's other tools: the MI300X's rocminfo of a VF (the only MI300X rocminfo capture) is not this
# node's, so rocminfo and rocm-smi say "no capture" for it, as a profile chosen for one tool does.
PROFILES["mi300x-8x"] = {}


# AMD's device-metrics-exporter repository (ROCm/device-metrics-exporter docs/installation/deb-package.rst at
# afd0fe81: "device-metrics-exporter/apt/1.5.2 <jammy|noble> main", package amdgpu-exporter; its version is
# DEBIAN_VERSION~<Ubuntu version>, Makefile 1.5.2 and Makefile.package BUILD_VER_ENV). The fixture's package is a
# stand-in with the paths of AMD's: the program in /usr/local/bin, its unit in /usr/lib/systemd/system and the
# default config in /etc/metrics/config.json (pkg/exporter/globals/constants.go AMDMetricsFile).
EXPORTER = {"folder": "1.5.2", "version": "1.5.2", "codenames": ["jammy", "noble"]}


# ---------------------------------------------------------------------------------------------------------------
# The ROCm Core SDK stream (AMD's production line built by TheRock since 7.14; rocm-reference.md 13). Sources: AMD's
# ROCm 10.0 install page (docs-10.0.0 install/rocm) unless marked.
# - Repository: deb822 "URIs: https://stable.repo.amd.com/rocm/core/packages/<distro>/", "Suites: stable",
#   "Components: main", "Signed-By: /etc/apt/keyrings/amdrocm.gpg"; key at stable.repo.amd.com/rocm/gpg/packages.gpg,
#   a different key than the legacy one. The fixture signs it with its own second key.
# - Origin/Label of AMD's Release file are not documented: "stable.repo.amd.com", and Codename = Suite = "stable":
#   PLAUSIBLE, NOT VERIFIED (the roles pin by origin).
# - Distributions: AMD has ubuntu2204, ubuntu2404, ubuntu2604, debian12, debian13. The fixture builds the three the
#   project tests on (Debian 12/13 and the real Ubuntu host's 24.04) and skips ubuntu2204 and ubuntu2604 to keep the
#   build short. apt versions carry no distribution suffix (10.0.0-4), so the fixture builds each package once and
#   hard-links it into every distribution's pool (whether AMD's files are identical across distributions is not
#   known).
# - Packages: amdrocm<X.Y> (every target) and amdrocm<X.Y>-<gfx>; per component and target amdrocm-core<X.Y>-<gfx>,
#   amdrocm-blas<X.Y>-<gfx> (third-party install notes; rocBLAS and hipBLAS are merged into amdrocm-blas, TheRock
#   RFC0009 and AMD's 7.13 packages page), amdrocm-dnn<X.Y>-<gfx> (MIOpen, hipDNN: the same sources);
#   amdrocm-core-dev<X.Y>[-<gfx>] (AMD's 7.13 packages page), amdrocm-core-sdk<X.Y> (everything). The host parts
#   amdrocm-core/-blas/-dnn<X.Y>, what each package holds, and the dependencies between them are the fixture's
#   choice, PLAUSIBLE, NOT VERIFIED. Every dependency is at the exact version.
# - Install root /opt/rocm/core-X.Y (patch releases install in place), version file .info/version (TheRock#5475).
#   No ld.so.conf.d file (the libraries are not registered with ldconfig, TheRock#6718).
# - /opt/rocm: AMD's transition guide says "the amdrocm meta package configures update-alternatives and provides
#   backward-compatible symlinks for /opt/rocm/bin, /opt/rocm/lib"; /opt/rocm/core points at the newest core-X.Y
#   (TheRock RFC0009). Which package runs update-alternatives, the alternative's name and its priority are not
#   documented: the fixture's amdrocm-core<X.Y> (which every amdrocm<X.Y>[-<gfx>] pulls) registers alternative
#   "amdrocm-core" (/opt/rocm/core -> /opt/rocm/core-X.Y, slaves /opt/rocm/bin and /opt/rocm/lib), priority from the
#   release (build_mirror.core_priority): PLAUSIBLE, NOT VERIFIED.
# - Targets: AMD ships fifteen (gfx950 gfx942 gfx90a gfx908 gfx1201 gfx1200 gfx1100-gfx1103 gfx1030 gfx1150-gfx1153);
#   the fixture builds the ones below: the project's GPU fixtures (MI300X gfx942, MI250X gfx90a, RX 6900 XT and
#   RX 6600 gfx1030, RX 7600 gfx1102) plus gfx950, gfx908, gfx1100 and gfx1151 (Strix Halo, in third-party notes).
CORE = {
    "origin": "stable.repo.amd.com",
    "suite": "stable",
    "distros": ["debian12", "debian13", "ubuntu2404"],
    "targets": ["gfx950", "gfx942", "gfx90a", "gfx908", "gfx1030", "gfx1100", "gfx1102", "gfx1151"],
}
# One entry per Core release, all in the same "stable" suite (AMD's holds several X.Y side by side; names carry X.Y).
# - "apt": 10.0.0-4 is real (AMD's runfile rocm-installer-10.0.0-4.run, third-party apt listings); 10.1.0-2:
#   PLAUSIBLE, NOT VERIFIED (10.1.0's build number is not known).
# - 10.2.0 is a FIXTURE-ONLY release AMD has not published: the project tests that a Core release missing from its
#   release table still installs by reading the stream's signed index.
# - "rocm_smi": rocm-smi ships in 7.14 and 10.0 (its upstream build was switched off 2026-07-24, TheRock#6852). It is
#   not known whether AMD's 10.1 has it; the fixture leaves it out of 10.1 and 10.2 (a FIXTURE CHOICE) so the suite
#   holds the "Core node without rocm-smi" path.
# - "hip" (hipcc --version) and the sonames: PLAUSIBLE, NOT VERIFIED; libamd_smi.so.27: amd-smi 27.x in 10.x
#   (rocm-reference.md 13).
CORE_RELEASES = [
    {"version": "10.0.0", "apt": "10.0.0-4", "hip": "10.0.0", "rocm_smi": True},
    {"version": "10.1.0", "apt": "10.1.0-2", "hip": "10.1.0", "rocm_smi": False},
    {"version": "10.2.0", "apt": "10.2.0-1", "hip": "10.2.0", "rocm_smi": False, "fixture_only": True},
]
CORE_SONAMES = {"libamdhip64": 10, "libhsa-runtime64": 1, "librocm_smi64": 7, "libamd_smi": 27, "librocblas": 5,
                "libhipblas": 3, "libMIOpen": 1}
# The amdgpu driver for the Core stream stays in the legacy layout on repo.radeon.com (amdgpu/<folder>/ubuntu
# <jammy|noble> main, legacy key): 10.0 and 10.1 document 31.50 (amdgpu-install_31.50.315000-1, AMD's 10.0 install
# page), 7.14 documents 31.40.1. amdgpu-dkms carries the 8-digit code; the kernel bases (6.19.14 is 31.40.0's,
# rocm-reference.md 13; 7.0.5) and the build numbers are PLAUSIBLE, NOT VERIFIED.
CORE_DRIVERS = [
    {"folder": "31.40.1", "code": "31400100", "kernel": "6.19.14", "build": 2298417, "codenames": ["jammy", "noble"]},
    {"folder": "31.50", "code": "31500000", "kernel": "7.0.5", "build": 2331850, "codenames": ["jammy", "noble"]},
]
