#!/usr/bin/env python3
# gpulab.rocm - GPU acceptance benchmarks (rocm_validate role). Needs Python 3.8+ and torch, nothing else.
# Vendor-neutral: ROCm builds of PyTorch expose AMD GPUs through the same torch.cuda API as CUDA builds.
"""Measure GEMM TFLOP/s, host<->device bandwidth, ResNet-50 and BERT-base training throughput and GPU power.

Writes one JSON report (schema: docs/validation.md). Exit status: 0 with a report (a benchmark that broke is
recorded under "errors"), 2 when the environment cannot run at all (no torch, no GPU), with the reason on stderr.
"""

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

SCHEMA_VERSION = 1
SCRIPT_VERSION = "1.0.0"

GEMM_DTYPES = ("fp32", "tf32", "fp16", "bf16")
BENCHMARKS = ("gemm", "bandwidth", "resnet50", "bert")

# Sizes for --tiny: the same code paths as a real run, done in seconds on a CPU (CI).
TINY = {
    "gemm_size": 128,
    "bandwidth_mib": 4,
    "resnet50_batch_size": 2,
    "resnet50_image_size": 64,
    "bert_batch_size": 2,
    "bert_seq_len": 16,
    "bert_layers": 2,
    "bert_hidden": 64,
    "bert_heads": 2,
    "bert_ffn": 128,
    "bert_vocab": 1000,
    "warmup": 1,
    "min_iters": 2,
    "min_seconds": 0.0,
}

# BERT-base (Devlin et al. 2018): 12 layers, hidden 768, 12 heads, FFN 3072, WordPiece vocabulary of 30522.
BERT_BASE = {"bert_layers": 12, "bert_hidden": 768, "bert_heads": 12, "bert_ffn": 3072, "bert_vocab": 30522}


class BenchError(Exception):
    """The environment cannot run the benchmarks at all (exit status 2)."""


# ---------------------------------------------------------------------------------------------------------------
# Power sampling through whichever vendor tool the host has.

def parse_nvidia_smi_power(text):
    """Watts per GPU from `nvidia-smi --query-gpu=power.draw --format=csv,noheader,nounits` (one line a GPU)."""
    watts = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            watts.append(float(line))
        except ValueError:
            watts.append(None)  # "[N/A]" on boards that do not report power
    return watts


def _json_start(text):
    """The JSON document in a tool's output: rocm-smi and amd-smi may print warnings before it."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        raise ValueError("no JSON in the output")
    return json.loads(text[min(starts):])


def _number(value):
    """A float from a tool's value ("19.0", 6, {"value": 6, "unit": "W"}), or None for N/A spellings."""
    if isinstance(value, dict):
        value = value.get("value")
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def parse_amd_smi_power(text):
    """Watts per GPU from `amd-smi metric --power --json`: a bare array (ROCm 6) or {"gpu_data": [...]} (ROCm 7)."""
    data = _json_start(text)
    if isinstance(data, dict):
        data = data.get("gpu_data", [])
    watts = []
    for gpu in sorted(data, key=lambda g: g.get("gpu", 0)):
        power = gpu.get("power", {})
        # socket_power on current amd-smi; older releases said average_socket_power or current_socket_power
        value = None
        for key in ("socket_power", "average_socket_power", "current_socket_power"):
            value = _number(power.get(key))
            if value is not None:
                break
        watts.append(value)
    return watts


def parse_rocm_smi_power(text):
    """Watts per GPU from `rocm-smi --showpower --json`: {"card0": {"Average Graphics Package Power (W)": "19.0"}}."""
    data = _json_start(text)
    cards = sorted((k for k in data if k.startswith("card")), key=lambda k: int(k[4:]) if k[4:].isdigit() else 0)
    watts = []
    for card in cards:
        value = None
        for key, raw in data[card].items():
            # "Average Graphics Package Power (W)" on discrete GPUs, "Current Socket Graphics Package Power (W)"
            # on APUs and MI300
            if "Power (W)" in key and "Max" not in key:
                value = _number(raw)
                if value is not None:
                    break
        watts.append(value)
    return watts


POWER_TOOLS = (
    ("nvidia-smi", ["--query-gpu=power.draw", "--format=csv,noheader,nounits"], parse_nvidia_smi_power),
    ("amd-smi", ["metric", "--power", "--json"], parse_amd_smi_power),
    ("rocm-smi", ["--showpower", "--json"], parse_rocm_smi_power),
)


def find_power_tool(backend):
    """The first power tool on PATH, vendor's own first. None when the host has none."""
    order = {"cuda": ("nvidia-smi",), "hip": ("amd-smi", "rocm-smi")}.get(backend, ())
    for name, args, parser in POWER_TOOLS:
        if name in order and shutil.which(name):
            return name, [shutil.which(name)] + args, parser
    return None


class PowerSampler:
    """Polls a power tool in a background thread; window() averages the samples taken between two instants."""

    def __init__(self, tool, gpu_position, interval_s):
        self.name, self.argv, self.parser = tool
        self.gpu_position = gpu_position
        self.interval_s = interval_s
        self.samples = []  # (monotonic time, watts)
        self.last_error = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def read_once(self):
        out = subprocess.run(self.argv, capture_output=True, text=True, timeout=10, check=False)
        watts = self.parser(out.stdout)
        if self.gpu_position >= len(watts) or watts[self.gpu_position] is None:
            raise ValueError("%s reported no power for GPU %d" % (self.name, self.gpu_position))
        return watts[self.gpu_position]

    def _run(self):
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                watts = self.read_once()
                # the tool took time to answer: stamp the sample halfway through the call
                self.samples.append(((started + time.monotonic()) / 2, watts))
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                self.last_error = str(exc)
            self._stop.wait(max(0.0, self.interval_s - (time.monotonic() - started)))

    def start(self):
        self._thread.start()

    def stop(self):
        self._stop.set()
        self._thread.join(timeout=15)

    def window(self, start, end):
        watts = [w for t, w in list(self.samples) if start <= t <= end]
        if not watts:
            return {"power_avg_w": None, "power_max_w": None, "power_samples": 0}
        return {"power_avg_w": round(statistics.mean(watts), 1), "power_max_w": round(max(watts), 1),
                "power_samples": len(watts)}


# ---------------------------------------------------------------------------------------------------------------
# Timing.

def sig(value, digits=5):
    """value to `digits` significant digits: fixed decimals would round a tiny CPU figure to 0."""
    return float("%.*g" % (digits, value))


def synchronize(torch, device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed_loop(torch, device, step, warmup, min_iters, min_seconds, max_iters=100000):
    """Run step() warmup times, then enough timed times to last min_seconds (at least min_iters).

    Returns per-iteration seconds, the total seconds of the timed phase, and its (start, end) in
    time.monotonic() for the power window. On a GPU each iteration is timed with CUDA events (HIP events on ROCm).
    """
    for _ in range(warmup):
        step()
    synchronize(torch, device)
    probe = time.perf_counter()
    step()
    synchronize(torch, device)
    per_iter = max(time.perf_counter() - probe, 1e-6)
    iters = int(min(max_iters, max(min_iters, math.ceil(min_seconds / per_iter))))

    wall_start = time.monotonic()
    if device.type == "cuda":
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
        for i in range(iters):
            starts[i].record()
            step()
            ends[i].record()
        torch.cuda.synchronize(device)
        times = [s.elapsed_time(e) / 1000.0 for s, e in zip(starts, ends)]
        total = starts[0].elapsed_time(ends[-1]) / 1000.0
    else:
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)
        total = sum(times)
    return times, total, (wall_start, time.monotonic())


def with_power(result, power, window, figure, per_watt_key):
    """Add the power seen during window and figure/watt to result."""
    if power is None:
        result.update({"power_avg_w": None, "power_max_w": None, "power_samples": 0, per_watt_key: None})
        return result
    result.update(power.window(*window))
    avg = result["power_avg_w"]
    result[per_watt_key] = sig(figure / avg) if avg else None
    return result


# ---------------------------------------------------------------------------------------------------------------
# Benchmarks.

def fp32_matmul_setting(torch, tf32=None):
    """Return the fp32 matmul setting, after setting it when tf32 is given (True: TF32, False: IEEE fp32, or
    a value returned earlier). Uses fp32_precision on torch >= 2.9, allow_tf32 before: never both, which
    newer torch refuses."""
    matmul = torch.backends.cuda.matmul
    attr = "fp32_precision" if hasattr(matmul, "fp32_precision") else "allow_tf32"
    previous = getattr(matmul, attr)
    if isinstance(tf32, bool):
        tf32 = ("tf32" if tf32 else "ieee") if attr == "fp32_precision" else tf32
    if tf32 is not None:
        setattr(matmul, attr, tf32)
    return previous


def bench_gemm(torch, device, args, power):
    """Square n x n x n matmuls per dtype: 2 n^3 FLOP each, TFLOP/s best and median over the timed iterations."""
    n = args.gemm_size
    dtypes = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
    results, skipped = {}, {}
    gen = torch.Generator(device=device).manual_seed(0)
    original = fp32_matmul_setting(torch) if device.type == "cuda" else None
    for name in args.gemm_dtypes:
        if name == "tf32" and device.type != "cuda":
            skipped[name] = "TF32 is a GPU matrix-unit mode"
            continue
        dtype = dtypes[name]
        # random data: zeros run faster than real data on some GPUs
        a = torch.randn(n, n, device=device, dtype=dtype, generator=gen)
        b = torch.randn(n, n, device=device, dtype=dtype, generator=gen)
        c = torch.empty(n, n, device=device, dtype=dtype)
        if device.type == "cuda":
            fp32_matmul_setting(torch, name == "tf32")
        times, _, window = timed_loop(torch, device, lambda: torch.matmul(a, b, out=c), args.warmup,
                                      args.min_iters, args.min_seconds)
        flop = 2.0 * n ** 3
        median = flop / statistics.median(times) / 1e12
        result = {"tflops_best": sig(flop / min(times) / 1e12), "tflops_median": sig(median),
                  "iterations": len(times)}
        results[name] = with_power(result, power, window, median * 1000.0, "gflops_per_watt")
        del a, b, c
    if device.type == "cuda":
        fp32_matmul_setting(torch, original)
        torch.cuda.empty_cache()
    return {"size": n, "results": results, "skipped": skipped}


def bench_bandwidth(torch, device, args):
    """Host->device and device->host copies of one large buffer, pinned and pageable host memory, GB/s (1e9 B/s)."""
    nbytes = args.bandwidth_mib * 1024 * 1024
    out = {"bytes": nbytes}
    if device.type != "cuda":
        # no device memory: a host-to-host copy keeps the schema and the code path exercised
        src = torch.ones(nbytes, dtype=torch.uint8)
        dst = torch.empty_like(src)
        times, _, _ = timed_loop(torch, device, lambda: dst.copy_(src), args.warmup, args.min_iters, 0.0)
        gbps = {"best": nbytes / min(times) / 1e9, "median": nbytes / statistics.median(times) / 1e9}
        figures = {"h2d_gbps_best": gbps["best"], "h2d_gbps_median": gbps["median"],
                   "d2h_gbps_best": gbps["best"], "d2h_gbps_median": gbps["median"]}
        out["note"] = "cpu device: host-to-host copies, no pinned memory"
        out["pinned"] = {k: sig(v) for k, v in figures.items()}
        out["pageable"] = dict(out["pinned"])
        return out
    dev_buf = torch.empty(nbytes, dtype=torch.uint8, device=device)
    for kind, pinned in (("pinned", True), ("pageable", False)):
        host = torch.ones(nbytes, dtype=torch.uint8, pin_memory=pinned)
        result = {}
        for direction, step in (("h2d", lambda: dev_buf.copy_(host, non_blocking=pinned)),
                                ("d2h", lambda: host.copy_(dev_buf, non_blocking=pinned))):
            times, _, _ = timed_loop(torch, device, step, args.warmup, args.min_iters, args.min_seconds / 4)
            result[direction + "_gbps_best"] = sig(nbytes / min(times) / 1e9)
            result[direction + "_gbps_median"] = sig(nbytes / statistics.median(times) / 1e9)
        out[kind] = result
        del host
    del dev_buf
    torch.cuda.empty_cache()
    return out


def build_resnet50(torch, num_classes=1000):
    """ResNet-50 v1.5 (stride on the 3x3 conv), as torchvision builds it, in plain torch: 25,557,032 parameters."""
    nn = torch.nn

    class Bottleneck(nn.Module):
        def __init__(self, inplanes, width, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(inplanes, width, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(width)
            self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(width)
            self.conv3 = nn.Conv2d(width, width * 4, 1, bias=False)
            self.bn3 = nn.BatchNorm2d(width * 4)
            self.relu = nn.ReLU(inplace=True)
            self.downsample = None
            if stride != 1 or inplanes != width * 4:
                self.downsample = nn.Sequential(nn.Conv2d(inplanes, width * 4, 1, stride=stride, bias=False),
                                                nn.BatchNorm2d(width * 4))

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return self.relu(out + identity)

    layers = [nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
              nn.MaxPool2d(3, stride=2, padding=1)]
    inplanes = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(inplanes, width, stride if i == 0 else 1))
            inplanes = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, num_classes)]
    return nn.Sequential(*layers)


def build_bert(torch, vocab, hidden, layers, heads, ffn, max_positions=512):
    """BERT encoder with its masked-LM head (decoder tied to the word embeddings), in plain torch.

    With BERT-base sizes it has 109,514,298 parameters, as BertForMaskedLM does.
    """
    nn = torch.nn

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.word = nn.Embedding(vocab, hidden)
            self.position = nn.Embedding(max_positions, hidden)
            self.token_type = nn.Embedding(2, hidden)
            self.emb_norm = nn.LayerNorm(hidden, eps=1e-12)
            self.dropout = nn.Dropout(0.1)
            layer = nn.TransformerEncoderLayer(hidden, heads, ffn, dropout=0.1, activation="gelu",
                                               layer_norm_eps=1e-12, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.GELU(), nn.LayerNorm(hidden, eps=1e-12))
            self.decoder_bias = nn.Parameter(torch.zeros(vocab))

        def forward(self, ids):
            positions = torch.arange(ids.shape[1], device=ids.device)
            x = self.word(ids) + self.position(positions) + self.token_type(torch.zeros_like(ids))
            x = self.encoder(self.dropout(self.emb_norm(x)))
            return nn.functional.linear(self.head(x), self.word.weight, self.decoder_bias)

    return Bert()


def pick_precision(torch, device, requested):
    """The autocast dtype for the training benchmarks: bf16 where the GPU has it, else fp16; fp32 on a CPU."""
    if requested != "auto":
        return requested
    if device.type != "cuda":
        return "fp32"
    return "bf16" if torch.cuda.is_bf16_supported() else "fp16"


def train_loop(torch, device, args, model, optimizer, make_batch, loss_fn, precision):
    """Training steps under autocast (fp16 with a gradient scaler); returns timed_loop's result."""
    amp_dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    scaler = torch.amp.GradScaler(device.type) if precision == "fp16" else None
    inputs, targets = make_batch()

    def step():
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=amp_dtype or torch.float32, enabled=amp_dtype is not None):
            loss = loss_fn(model(inputs), targets)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()

    return timed_loop(torch, device, step, args.warmup, args.min_iters, args.min_seconds)


def bench_resnet50(torch, device, args, power):
    """ResNet-50 training on synthetic 224x224 images (SGD with momentum), images/s."""
    batch, size = args.resnet50_batch_size, args.resnet50_image_size
    precision = pick_precision(torch, device, args.precision)
    channels_last = device.type == "cuda"  # NHWC feeds the GPUs' convolution kernels best
    fmt = torch.channels_last if channels_last else torch.contiguous_format
    model = build_resnet50(torch).to(device, memory_format=fmt).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    gen = torch.Generator(device=device).manual_seed(0)

    def make_batch():
        images = torch.randn(batch, 3, size, size, device=device, generator=gen).to(memory_format=fmt)
        labels = torch.randint(0, 1000, (batch,), device=device, generator=gen)
        return images, labels

    times, total, window = train_loop(torch, device, args, model, optimizer, make_batch,
                                      torch.nn.functional.cross_entropy, precision)
    rate = batch * len(times) / total
    result = {"batch_size": batch, "image_size": size, "precision": precision, "channels_last": channels_last,
              "optimizer": "SGD", "iterations": len(times), "images_per_s": sig(rate),
              "step_ms_median": sig(statistics.median(times) * 1000)}
    return with_power(result, power, window, rate, "images_per_s_per_watt")


def bench_bert(torch, device, args, power):
    """BERT-base-sized encoder with its masked-LM head, trained with AdamW on random tokens, samples/s."""
    batch, seq = args.bert_batch_size, args.bert_seq_len
    precision = pick_precision(torch, device, args.precision)
    model = build_bert(torch, args.bert_vocab, args.bert_hidden, args.bert_layers, args.bert_heads,
                       args.bert_ffn).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    gen = torch.Generator(device=device).manual_seed(0)
    vocab = args.bert_vocab

    def make_batch():
        ids = torch.randint(0, vocab, (batch, seq), device=device, generator=gen)
        return ids, torch.randint(0, vocab, (batch, seq), device=device, generator=gen)

    def loss_fn(logits, labels):
        return torch.nn.functional.cross_entropy(logits.reshape(-1, vocab), labels.reshape(-1))

    times, total, window = train_loop(torch, device, args, model, optimizer, make_batch, loss_fn, precision)
    rate = batch * len(times) / total
    result = {"batch_size": batch, "seq_len": seq, "layers": args.bert_layers, "hidden": args.bert_hidden,
              "heads": args.bert_heads, "ffn": args.bert_ffn, "vocab": vocab, "precision": precision,
              "optimizer": "AdamW", "parameters": sum(p.numel() for p in model.parameters()),
              "iterations": len(times), "samples_per_s": sig(rate),
              "step_ms_median": sig(statistics.median(times) * 1000)}
    return with_power(result, power, window, rate, "samples_per_s_per_watt")


# ---------------------------------------------------------------------------------------------------------------
# Device description.

def read_text(path):
    try:
        with open(path, encoding="ascii", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def pcie_link(bus_id):
    """The GPU's PCIe link from sysfs, for the bandwidth figures' context."""
    if not bus_id:
        return None
    base = "/sys/bus/pci/devices/%s" % bus_id.lower()
    if not os.path.isdir(base):
        return None
    link = {name: read_text(os.path.join(base, name)) for name in
            ("current_link_speed", "current_link_width", "max_link_speed", "max_link_width")}
    link["bus_id"] = bus_id.lower()
    return link


def driver_version(backend):
    if backend == "cuda" and shutil.which("nvidia-smi"):
        out = subprocess.run([shutil.which("nvidia-smi"), "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=False)
        return out.stdout.splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else None
    if backend == "hip":
        return read_text("/sys/module/amdgpu/version")
    return None


def describe_device(torch, device):
    info = {"type": device.type, "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
            "hip_version": getattr(torch.version, "hip", None), "hostname": socket.gethostname()}
    if device.type != "cuda":
        info.update({"backend": "cpu", "name": "cpu", "index": None, "count": 0, "memory_bytes": None,
                     "processor": platform.processor() or platform.machine(), "threads": torch.get_num_threads()})
        return info
    props = torch.cuda.get_device_properties(device)
    backend = "hip" if info["hip_version"] else "cuda"
    bus_id = None
    if hasattr(props, "pci_bus_id") and hasattr(props, "pci_device_id"):
        bus_id = "%04x:%02x:%02x.0" % (getattr(props, "pci_domain_id", 0), props.pci_bus_id, props.pci_device_id)
    info.update({
        "backend": backend,
        "name": torch.cuda.get_device_name(device),
        "index": device.index,
        "count": torch.cuda.device_count(),
        "memory_bytes": props.total_memory,
        "multiprocessors": props.multi_processor_count,
        "compute_capability": "%d.%d" % (props.major, props.minor),
        "gcn_arch_name": getattr(props, "gcnArchName", None) if backend == "hip" else None,
    })
    # context only: a tool or sysfs file that is missing or odd must not stop the benchmarks
    for key, probe in (("driver_version", lambda: driver_version(backend)), ("pcie", lambda: pcie_link(bus_id))):
        try:
            info[key] = probe()
        except (OSError, ValueError, IndexError, subprocess.SubprocessError) as exc:
            info[key] = None
            info.setdefault("probe_errors", {})[key] = str(exc)
    return info


# ---------------------------------------------------------------------------------------------------------------
# Main.

def headline_figures(results):
    """The flat, higher-is-better figures that thresholds compare against (names in docs/validation.md)."""
    figures = {}
    for dtype, r in results.get("gemm", {}).get("results", {}).items():
        figures["gemm_%s_tflops_median" % dtype] = r["tflops_median"]
        figures["gemm_%s_tflops_best" % dtype] = r["tflops_best"]
        if r.get("gflops_per_watt") is not None:
            figures["gemm_%s_gflops_per_watt" % dtype] = r["gflops_per_watt"]
    bandwidth = results.get("bandwidth", {})
    for kind in ("pinned", "pageable"):
        for direction in ("h2d", "d2h"):
            value = bandwidth.get(kind, {}).get(direction + "_gbps_median")
            if value is not None:
                figures["bandwidth_%s_%s_gbps" % (direction, kind)] = value
    for bench, key in (("resnet50", "images_per_s"), ("bert", "samples_per_s")):
        r = results.get(bench, {})
        for figure in (key, key + "_per_watt"):
            if r.get(figure) is not None:
                figures["%s_%s" % (bench, figure)] = r[figure]
    return figures


def csv_list(choices):
    def parse(text):
        items = [item.strip() for item in text.split(",") if item.strip()]
        bad = [item for item in items if item not in choices]
        if bad:
            raise argparse.ArgumentTypeError("unknown %s; choose from %s" % (", ".join(bad), ", ".join(choices)))
        return items
    return parse


def positive(kind):
    def parse(text):
        value = kind(text)
        if value <= 0:
            raise argparse.ArgumentTypeError("must be > 0, got %s" % text)
        return value
    return parse


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--output", "-o", required=True, help="where to write the JSON report")
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                   help="cuda means any torch.cuda GPU, ROCm (HIP) included; auto: the GPU when torch sees one")
    p.add_argument("--device-index", type=int, default=0, help="which GPU to measure (torch.cuda index)")
    p.add_argument("--tiny", action="store_true", help="tiny sizes that finish in seconds on a CPU (CI)")
    p.add_argument("--benchmarks", type=csv_list(BENCHMARKS), default=list(BENCHMARKS),
                   help="comma-separated subset of " + ",".join(BENCHMARKS))
    p.add_argument("--gemm-dtypes", type=csv_list(GEMM_DTYPES), default=list(GEMM_DTYPES))
    p.add_argument("--gemm-size", type=positive(int), default=8192)
    p.add_argument("--bandwidth-mib", type=positive(int), default=1024)
    p.add_argument("--resnet50-batch-size", type=positive(int), default=64)
    p.add_argument("--resnet50-image-size", type=positive(int), default=224)
    p.add_argument("--bert-batch-size", type=positive(int), default=32)
    p.add_argument("--bert-seq-len", type=positive(int), default=128)
    p.add_argument("--precision", choices=("auto", "bf16", "fp16", "fp32"), default="auto",
                   help="autocast dtype of the training benchmarks; auto: bf16 where supported, else fp16")
    p.add_argument("--warmup", type=int, default=5, help="untimed iterations before each timed phase")
    p.add_argument("--min-iters", type=positive(int), default=10, help="least timed iterations per phase")
    p.add_argument("--min-seconds", type=float, default=5.0,
                   help="least duration of each timed phase, long enough for several power samples")
    p.add_argument("--power", choices=("auto", "off"), default="auto",
                   help="sample power with nvidia-smi, amd-smi or rocm-smi, whichever the host has")
    p.add_argument("--power-interval", type=positive(float), default=0.5, help="seconds between power samples")
    args = p.parse_args(argv)
    if args.tiny:
        for key, value in TINY.items():
            setattr(args, key, value)
    else:
        for key, value in BERT_BASE.items():
            setattr(args, key, value)
    return args


def pick_device(torch, requested, index):
    if requested == "cpu" or (requested == "auto" and not torch.cuda.is_available()):
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise BenchError("torch %s sees no GPU (torch.cuda.is_available() is False): check the driver "
                         "(/dev/kfd and /dev/dri for ROCm, nvidia-smi for CUDA), that this user is in the "
                         "render and video groups, and that torch is a ROCm or CUDA build (torch.version.hip=%s, "
                         "torch.version.cuda=%s); or run with --device cpu"
                         % (torch.__version__, getattr(torch.version, "hip", None), torch.version.cuda))
    if not 0 <= index < torch.cuda.device_count():
        raise BenchError("--device-index %d is out of range: torch sees %d GPU(s)" % (index, torch.cuda.device_count()))
    return torch.device("cuda", index)


def run(args):
    try:
        import torch  # pylint: disable=import-outside-toplevel
    except ImportError as exc:
        raise BenchError("cannot import torch with %s (%s): install PyTorch for this interpreter "
                         "(rocm_validate_install_pytorch: true) or point rocm_validate_python at one that has it"
                         % (sys.executable, exc)) from exc
    device = pick_device(torch, args.device, args.device_index)
    torch.manual_seed(0)
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.backends.cudnn.benchmark = True
    info = describe_device(torch, device)

    power, power_info = None, {"tool": None, "interval_s": args.power_interval, "error": None}
    tool = find_power_tool(info["backend"]) if args.power == "auto" else None
    if tool is not None:
        # GPU position in the tool's list; assumes the tool and torch enumerate GPUs in the same (PCI) order
        power = PowerSampler(tool, args.device_index, args.power_interval)
        power_info["tool"] = tool[0]
        try:
            power_info["idle_w"] = power.read_once()
            power.start()
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            power_info["error"] = "%s: %s" % (tool[0], exc)
            power = None
    elif args.power == "auto":
        power_info["error"] = "no nvidia-smi, amd-smi or rocm-smi on PATH" if info["backend"] != "cpu" else None

    results, errors = {}, {}
    runners = {"gemm": lambda: bench_gemm(torch, device, args, power),
               "bandwidth": lambda: bench_bandwidth(torch, device, args),
               "resnet50": lambda: bench_resnet50(torch, device, args, power),
               "bert": lambda: bench_bert(torch, device, args, power)}
    started = time.monotonic()
    for name in args.benchmarks:
        try:
            results[name] = runners[name]()
        except Exception as exc:  # pylint: disable=broad-except  # one broken benchmark must not lose the others
            errors[name] = "%s: %s" % (type(exc).__name__, exc)
            if device.type == "cuda":
                torch.cuda.empty_cache()
    if power is not None:
        power.stop()
        if power.last_error and not power.samples:
            power_info["error"] = power.last_error

    config = {key: getattr(args, key) for key in
              ("tiny", "benchmarks", "gemm_dtypes", "gemm_size", "bandwidth_mib", "resnet50_batch_size",
               "resnet50_image_size", "bert_batch_size", "bert_seq_len", "precision", "warmup", "min_iters",
               "min_seconds")}
    return {
        "schema_version": SCHEMA_VERSION,
        "script_version": SCRIPT_VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "duration_s": round(time.monotonic() - started, 1),
        "device": info,
        "power": power_info,
        "config": config,
        "benchmarks": results,
        "errors": errors,
        "figures": headline_figures(results),
    }


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        report = run(args)
    except BenchError as exc:
        print("gpu_bench: %s" % exc, file=sys.stderr)
        return 2
    directory = os.path.dirname(os.path.abspath(args.output))
    os.makedirs(directory, exist_ok=True)
    # A temporary file of a name nobody can guess, made by this process (O_EXCL): never a file or link someone
    # planted beside the report. os.replace: a reader never sees half a report.
    handle, tmp = tempfile.mkstemp(dir=directory, prefix=".report.", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(report, out, indent=2, sort_keys=True)
        out.write("\n")
    os.replace(tmp, args.output)
    for name, value in sorted(report["figures"].items()):
        print("%-40s %s" % (name, value))
    for name, error in sorted(report["errors"].items()):
        print("ERROR %s: %s" % (name, error), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
