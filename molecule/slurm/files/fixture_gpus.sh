#!/bin/sh
# TEST FIXTURE, not part of the product: gives a container the GPUs of a fixture sysfs spec. It builds the sysfs tree
# that the role reads (rocm_slurm_sysfs_root) with the collection's sysfs_tree.py, and makes the render nodes the
# tree names with mknod (char 226:N, as amdgpu's). Docker lets a container make device nodes but not open them:
# Slurm only stats them (for their device numbers); no GPU is behind them.
#   fixture_gpus.sh SPEC.json
set -eu
spec=$1
python3 /srv/slurm-fixture/sysfs_tree.py "$spec" /srv/gpulab-sysfs
mkdir -p /dev/dri
for minor in $(python3 -c '
import json, sys
spec = json.load(open(sys.argv[1]))
print(" ".join(name[7:] for function in spec.get("functions", []) for name in function.get("drm", [])
               if name.startswith("renderD")))' "$spec"); do
    [ -c "/dev/dri/renderD$minor" ] || mknod -m 0660 "/dev/dri/renderD$minor" c 226 "$minor"
done
echo "gpulab.rocm TEST FIXTURE: render nodes made with mknod for the sysfs tree in /srv/gpulab-sysfs ($spec);" \
    "no GPU is behind them" > /dev/dri/GPULAB-FIXTURE
