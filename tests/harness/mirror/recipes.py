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

# AMD's device-metrics-exporter repository (ROCm/device-metrics-exporter docs/installation/deb-package.rst at
# afd0fe81: "device-metrics-exporter/apt/1.5.2 <jammy|noble> main", package amdgpu-exporter; its version is
# DEBIAN_VERSION~<Ubuntu version>, Makefile 1.5.2 and Makefile.package BUILD_VER_ENV). The fixture's package is a
# stand-in with the paths of AMD's: the program in /usr/local/bin, its unit in /usr/lib/systemd/system and the
# default config in /etc/metrics/config.json (pkg/exporter/globals/constants.go AMDMetricsFile).
EXPORTER = {"folder": "1.5.2", "version": "1.5.2", "codenames": ["jammy", "noble"]}
