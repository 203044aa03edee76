"""roles/rocm_validate/files/gpu_bench.py on a CPU: a tiny run writes a well-formed report with the schema of a
real GPU report, the models are the real ResNet-50 and BERT-base, the power parsers read real tool outputs, and
bad environments give a clear message with exit status 2. Needs torch (requirements-validate.txt)."""

import datetime
import importlib.util
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is pinned in requirements-validate.txt")

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "roles" / "rocm_validate" / "files" / "gpu_bench.py"
# Real tool outputs: the collection's fixture store (provenance in its SOURCES.md).
FIXTURES = REPO / "collections/ansible_collections/gpulab/rocm/tests/unit/plugins/module_utils/fixtures"
REPORTS = REPO / "collections/ansible_collections/gpulab/rocm/tests/unit/plugins/filter/fixtures"
H200_REPORT = REPORTS / "gpu_bench-nvidia-h200-2026-11-29.json"

spec = importlib.util.spec_from_file_location("gpu_bench", SCRIPT)
gpu_bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_bench)

TOP_KEYS = {"schema_version", "script_version", "created", "duration_s", "device", "power", "config", "benchmarks",
            "errors", "figures"}


def run_script(*args, python=(sys.executable,)):
    return subprocess.run([*python, str(SCRIPT), *args], capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(name="tiny_run", scope="module")
def fixture_tiny_run(tmp_path_factory):
    """One tiny CPU run, with a trap beside its report: report.json.tmp planted as a link to another file (as a user
    could in a shared folder), which the script must neither follow nor use."""
    base = tmp_path_factory.mktemp("bench")
    victim = base / "victim"
    victim.write_text("a file the report must not overwrite\n")
    out = base / "sub" / "report.json"
    out.parent.mkdir()
    (out.parent / "report.json.tmp").symlink_to(victim)
    proc = run_script("--device", "cpu", "--tiny", "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    report = json.loads(out.read_text())
    # what it prints is the figures of the report
    printed = dict(line.split() for line in proc.stdout.splitlines())
    assert {k: float(v) for k, v in printed.items()} == report["figures"]
    return {"report": report, "victim": victim, "folder": out.parent}


@pytest.fixture(name="tiny_report", scope="module")
def fixture_tiny_report(tiny_run):
    return tiny_run["report"]


def test_a_planted_temporary_file_is_neither_followed_nor_used(tiny_run):
    assert tiny_run["victim"].read_text() == "a file the report must not overwrite\n"
    assert (tiny_run["folder"] / "report.json.tmp").is_symlink()
    # the report was written through a file of its own, and nothing else is left in the folder
    assert sorted(p.name for p in tiny_run["folder"].iterdir()) == ["report.json", "report.json.tmp"]


def test_tiny_report_is_well_formed(tiny_report):
    r = tiny_report
    assert set(r) == TOP_KEYS
    assert r["schema_version"] == gpu_bench.SCHEMA_VERSION
    assert r["errors"] == {}
    assert datetime.datetime.fromisoformat(r["created"]).tzinfo is not None
    assert r["device"]["type"] == "cpu" and r["device"]["name"] == "cpu"
    assert r["device"]["torch_version"] == torch.__version__
    assert r["config"]["tiny"] is True
    assert r["config"]["benchmarks"] == list(gpu_bench.BENCHMARKS)
    assert set(r["benchmarks"]) == set(gpu_bench.BENCHMARKS)
    # tf32 is a GPU mode: skipped with a reason on a CPU, the other dtypes measured
    assert set(r["benchmarks"]["gemm"]["results"]) == {"fp32", "fp16", "bf16"}
    assert "tf32" in r["benchmarks"]["gemm"]["skipped"]
    assert r["power"]["tool"] is None


def test_tiny_report_figures_are_sane(tiny_report):
    figures = tiny_report["figures"]
    expected = {"bandwidth_%s_%s_gbps" % (d, k) for d in ("h2d", "d2h") for k in ("pinned", "pageable")}
    expected |= {"gemm_%s_tflops_%s" % (t, s) for t in ("fp32", "fp16", "bf16") for s in ("best", "median")}
    expected |= {"resnet50_images_per_s", "bert_samples_per_s"}
    # no power tool on a CPU run, so no per-watt figures
    assert set(figures) == expected
    for name, value in figures.items():
        assert isinstance(value, float) and math.isfinite(value) and value > 0, name
    for dtype, result in tiny_report["benchmarks"]["gemm"]["results"].items():
        assert result["tflops_best"] >= result["tflops_median"], dtype
        assert result["iterations"] >= gpu_bench.TINY["min_iters"]


def test_tiny_sizes_are_the_ones_asked_for(tiny_report):
    b = tiny_report["benchmarks"]
    tiny = gpu_bench.TINY
    assert b["gemm"]["size"] == tiny["gemm_size"]
    assert b["bandwidth"]["bytes"] == tiny["bandwidth_mib"] * 1024 * 1024
    assert (b["resnet50"]["batch_size"], b["resnet50"]["image_size"]) == (2, 64)
    assert (b["bert"]["layers"], b["bert"]["hidden"], b["bert"]["seq_len"]) == (2, 64, 16)
    assert b["resnet50"]["precision"] == b["bert"]["precision"] == "fp32"


def test_cpu_report_has_the_schema_of_the_real_h200_report(tiny_report):
    """CI can only run the CPU path: it must produce what a GPU run produces, key for key."""
    h200 = json.loads(H200_REPORT.read_text())
    assert set(h200) == set(tiny_report) == TOP_KEYS
    assert set(h200["config"]) == set(tiny_report["config"])
    assert set(h200["power"]) - {"idle_w"} == set(tiny_report["power"])
    for bench in gpu_bench.BENCHMARKS:
        gpu, cpu = h200["benchmarks"][bench], tiny_report["benchmarks"][bench]
        assert set(gpu) == set(cpu) - {"note"}, bench
    for dtype, result in tiny_report["benchmarks"]["gemm"]["results"].items():
        assert set(result) == set(h200["benchmarks"]["gemm"]["results"][dtype])
    assert set(tiny_report["figures"]) <= set(h200["figures"])
    assert h200["benchmarks"]["bert"]["parameters"] == 109514298


def test_resnet50_is_resnet50():
    """torchvision's resnet50() has 25,557,032 parameters; this plain-torch one must match it."""
    model = gpu_bench.build_resnet50(torch)
    assert sum(p.numel() for p in model.parameters()) == 25557032
    assert model(torch.randn(1, 3, 64, 64)).shape == (1, 1000)


def test_bert_base_has_bert_base_parameters():
    """BertForMaskedLM (bert-base-uncased) has 109,514,298 parameters: embeddings, 12 layers, tied MLM head."""
    sizes = gpu_bench.BERT_BASE
    model = gpu_bench.build_bert(torch, sizes["bert_vocab"], sizes["bert_hidden"], sizes["bert_layers"],
                                 sizes["bert_heads"], sizes["bert_ffn"])
    assert sum(p.numel() for p in model.parameters()) == 109514298
    logits = model(torch.randint(0, 30522, (1, 8)))
    assert logits.shape == (1, 8, 30522)


@pytest.mark.parametrize("name, parser, expected", [
    ("nvidia-smi/query-power-draw-csv-noheader-nounits-h200-driver580.159.04.txt",
     gpu_bench.parse_nvidia_smi_power, [79.14]),
    ("rocm-smi/json-raw-oneline-showtemp-showuse-showpower-meminfo-vram-rx7900xtx.json",
     gpu_bench.parse_rocm_smi_power, [19.0]),
    # "Max Graphics Package Power (W)" 211.0 comes first in this file: the average is the reading
    ("rocm-smi/json-telegraf-flags-rx6700xt-rocm6.1.2.json", gpu_bench.parse_rocm_smi_power, [6.0]),
    # warning line before the JSON, no card
    ("rocm-smi/json-a-no-gpus-warning-driver-6.3.6.txt", gpu_bench.parse_rocm_smi_power, []),
    # a full `amd-smi metric --json`: --power prints the same "power" object alone
    ("amd-smi/metric-json-rx6600-navi23-proxmox-bare-array.json", gpu_bench.parse_amd_smi_power, [6.0]),
])
def test_power_parsers_read_real_outputs(name, parser, expected):
    assert parser((FIXTURES / name).read_text()) == expected


def test_amd_smi_rocm7_wrapper():
    """ROCm 7's amd-smi wraps the array in {"gpu_data": [...]} (fixtures NOTES): the same data wrapped."""
    array = json.loads((FIXTURES / "amd-smi/metric-json-rx6600-navi23-proxmox-bare-array.json").read_text())
    assert gpu_bench.parse_amd_smi_power(json.dumps({"gpu_data": array})) == [6.0]


def test_power_parsers_reject_garbage():
    with pytest.raises(ValueError):
        gpu_bench.parse_rocm_smi_power("ERROR:root:Driver not initialized (amdgpu not found in modules)\n")
    assert gpu_bench.parse_nvidia_smi_power("[N/A]\n") == [None]


def fake_tool(tmp_path, name, fixture):
    """An executable named like the vendor tool that prints a real captured output (a stand-in: no GPU here)."""
    tool = tmp_path / name
    # PATH holds only the fake tools in these tests, so cat is named by its full path
    tool.write_text("#!/bin/sh\nexec '%s' '%s'\n" % (shutil.which("cat"), FIXTURES / fixture))
    tool.chmod(0o755)
    return tool


def test_power_sampler_averages_the_window(tmp_path, monkeypatch):
    fake_tool(tmp_path, "nvidia-smi", "nvidia-smi/query-power-draw-csv-noheader-nounits-h200-driver580.159.04.txt")
    monkeypatch.setenv("PATH", str(tmp_path))
    tool = gpu_bench.find_power_tool("cuda")
    assert tool is not None and tool[0] == "nvidia-smi"
    assert gpu_bench.find_power_tool("hip") is None  # an AMD host never reads nvidia-smi
    sampler = gpu_bench.PowerSampler(tool, 0, 0.05)
    start = time.monotonic()
    sampler.start()
    time.sleep(0.5)
    sampler.stop()
    window = sampler.window(start, time.monotonic())
    assert window["power_samples"] >= 2
    assert window["power_avg_w"] == window["power_max_w"] == 79.1
    assert sampler.window(0.0, 1.0)["power_samples"] == 0


def test_power_sampler_reports_a_gpu_the_tool_does_not_list(tmp_path, monkeypatch):
    fake_tool(tmp_path, "rocm-smi", "rocm-smi/json-a-no-gpus-warning-driver-6.3.6.txt")
    monkeypatch.setenv("PATH", str(tmp_path))
    sampler = gpu_bench.PowerSampler(gpu_bench.find_power_tool("hip"), 0, 0.1)
    with pytest.raises(ValueError, match="rocm-smi reported no power for GPU 0"):
        sampler.read_once()


def test_no_gpu_gives_a_clear_message(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    proc = run_script("--device", "cuda", "--output", str(tmp_path / "r.json"))
    assert proc.returncode == 2
    assert "sees no GPU" in proc.stderr and "--device cpu" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "r.json").exists()


def test_no_torch_gives_a_clear_message(tmp_path):
    # -S: no site-packages, so no torch: what a host without PyTorch sees
    proc = run_script("--device", "cpu", "--tiny", "--output", str(tmp_path / "r.json"),
                      python=(sys.executable, "-S"))
    assert proc.returncode == 2
    assert "cannot import torch" in proc.stderr and "rocm_validate_install_pytorch" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--benchmarks", "gemm,linpack"], "unknown linpack"),
    (["--gemm-dtypes", "fp8"], "unknown fp8"),
    (["--gemm-size", "0"], "must be > 0"),
    (["--precision", "int8"], "invalid choice"),
])
def test_bad_arguments_are_refused(tmp_path, args, message):
    proc = run_script("--device", "cpu", "--output", str(tmp_path / "r.json"), *args)
    assert proc.returncode == 2
    assert message in proc.stderr and "Traceback" not in proc.stderr


def test_a_broken_benchmark_is_recorded_and_the_others_still_run(tmp_path, tiny_report):
    """One benchmark failing (here BERT with a sequence longer than its 512 positions) must not lose the rest."""
    # Unpatched, the same tiny BERT runs without error (the module's tiny run): only the patch below breaks it.
    assert tiny_report["errors"] == {} and "bert_samples_per_s" in tiny_report["figures"]
    out = tmp_path / "r.json"
    env = dict(os.environ)
    # the tiny preset fixes the sequence length; patch it through the module to force a real failure
    code = ("import runpy,sys; sys.argv=[%r,'--device','cpu','--tiny','--benchmarks','gemm,bert','-o',%r];"
            "g=runpy.run_path(%r); g['TINY']['bert_seq_len']=600; sys.exit(g['main']())"
            % (str(SCRIPT), str(out), str(SCRIPT)))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(out.read_text())
    # --benchmarks gemm,bert ran those two and no other: gemm measured, bert recorded as broken
    assert report["config"]["benchmarks"] == ["gemm", "bert"] and set(report["benchmarks"]) == {"gemm"}
    assert set(report["errors"]) == {"bert"} and "IndexError" in report["errors"]["bert"]
    assert "gemm_fp32_tflops_median" in report["figures"] and "bert_samples_per_s" not in report["figures"]
    assert "ERROR bert:" in proc.stderr
