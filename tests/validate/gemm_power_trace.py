#!/usr/bin/env python3
"""Why sustained GEMM TFLOP/s sits under the first iterations' on an NVIDIA GPU: a time line.

Runs bf16 n x n x n matmuls back to back for --seconds, each timed with CUDA events, while nvidia-smi reports SM
clock, power and the clock-event (throttle) reasons every 250 ms. Prints one row per --bucket seconds: TFLOP/s of
the matmuls that ended in it, and the mean clock, power and the reasons seen. Used for docs/validation.md; needs
torch with a CUDA GPU and nvidia-smi. Usage: python3 gemm_power_trace.py [--size 8192] [--seconds 8]
"""

import argparse
import statistics
import subprocess
import threading
import time

import torch

QUERY = "clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"
# nvidia-smi's clocks_event_reasons bits (nvml.h, nvmlClocksEventReason*)
REASONS = {0x1: "idle", 0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x20: "sw_thermal", 0x40: "hw_thermal",
           0x80: "hw_power_brake"}


def sample_smi(samples, stop):
    proc = subprocess.Popen(["nvidia-smi", "--query-gpu=" + QUERY, "--format=csv,noheader,nounits", "-lms", "250"],
                            stdout=subprocess.PIPE, text=True)
    while not stop.is_set():
        line = proc.stdout.readline()
        if not line:
            break
        fields = [f.strip() for f in line.split(",")]
        try:
            samples.append((time.monotonic(), float(fields[0]), float(fields[1]), float(fields[2]), int(fields[3], 16)))
        except (ValueError, IndexError):
            continue
    proc.terminate()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=8192)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--bucket", type=float, default=0.5)
    args = parser.parse_args()
    n = args.size
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = torch.empty_like(a)
    for _ in range(3):
        torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    time.sleep(2.0)  # let the card cool back to its idle state between runs

    samples, stop = [], threading.Event()
    thread = threading.Thread(target=sample_smi, args=(samples, stop), daemon=True)
    thread.start()
    time.sleep(1.0)
    probe = time.perf_counter()
    torch.matmul(a, b, out=c)
    torch.cuda.synchronize()
    iters = int(args.seconds / (time.perf_counter() - probe))
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    wall0 = time.monotonic()
    for start, end in events:
        start.record()
        torch.matmul(a, b, out=c)
        end.record()
    torch.cuda.synchronize()
    time.sleep(0.5)
    stop.set()

    first = events[0][0]
    flop = 2.0 * n ** 3
    buckets = {}
    for start, end in events:
        t_end = first.elapsed_time(end) / 1000.0
        buckets.setdefault(int(t_end / args.bucket), []).append(start.elapsed_time(end) / 1000.0)
    print("n=%d bf16, %d matmuls, torch %s, %s" % (n, iters, torch.__version__, torch.cuda.get_device_name()))
    print("%6s %9s %9s %8s %6s  %s" % ("t_s", "TFLOP/s", "SM_MHz", "power_W", "temp", "clock event reasons"))
    for k in sorted(buckets):
        lo, hi = wall0 + k * args.bucket, wall0 + (k + 1) * args.bucket
        win = [s for s in samples if lo <= s[0] < hi]
        reasons = sorted({name for s in win for bit, name in REASONS.items() if s[4] & bit})
        print("%6.1f %9.1f %9s %8s %6s  %s" % (
            k * args.bucket, flop / statistics.median(buckets[k]) / 1e12,
            "%.0f" % statistics.mean(s[1] for s in win) if win else "-",
            "%.0f" % statistics.mean(s[2] for s in win) if win else "-",
            "%.0f" % max(s[3] for s in win) if win else "-", ",".join(reasons) or "-"))
    times = [s.elapsed_time(e) / 1000.0 for s, e in events]
    print("best %.1f, median %.1f, first 10 median %.1f TFLOP/s" % (
        flop / min(times) / 1e12, flop / statistics.median(times) / 1e12, flop / statistics.median(times[:10]) / 1e12))


if __name__ == "__main__":
    main()
