# Managed by gpulab.rocm (role rocm_env). Local changes are overwritten.
# ROCm environment for login shells.
export ROCM_PATH=/opt/rocm
export HIP_PLATFORM=amd
# NVIDIA GPUs present, ROCm/CUDA coexistence policy: both
case ":${PATH}:" in
  *:/opt/rocm/bin:*) ;;
  *) export PATH="${PATH:+${PATH}:}/opt/rocm/bin" ;;
esac
