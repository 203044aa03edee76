#!/usr/bin/env python3
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark of the GPU facts: parse time of the largest captured output per parser, and module cost vs the tool.

Prints figures and asserts nothing; docs/performance-facts.md records them. Two measurements:

1. Parse: mean time of parse_rocminfo / parse_rocm_smi / parse_amd_smi over the largest captured output of each
   tool that lists GPUs, and of gather_pci over this machine's real /sys. Budget: 5 ms.
2. Module vs tool: the tool's own run (subprocess.run of every command the module runs) against one run of the
   module's main() executing the same tool (AnsibleModule set-up, argument checks, get_bin_path, run_command,
   parsing, the JSON result on stdout), and against ansible.builtin.command running the same commands, the floor
   for running a tool from Ansible at all. Each comparison runs in a fresh worker process that imports only
   what a module process imports (its size sets the fork cost of run_command), interleaving tool, module and
   command runs so that load hits all three alike. The Python start and AnsiballZ unpacking that Ansible pays
   for every module, ansible.builtin.command included, are outside all three; the last line measures them.
   Budget: module median <= 1.2 x tool median. Tools:
     - replay stubs: shell scripts that `cat` a capture, the cheapest possible tool, so module - tool is the
       module's fixed cost in ms;
     - the real binaries when --tools (or GPULAB_ROCM_TOOLS) names a folder with rocminfo, rocm-smi, amd-smi.

Usage: .venv/bin/python tests/bench/bench_facts.py [--runs N] [--tools DIR]
"""

from __future__ import absolute_import, division, print_function

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTIONS = os.path.join(ROOT, 'collections')
sys.path.insert(0, COLLECTIONS)
FIXTURES = os.path.join(COLLECTIONS, 'ansible_collections', 'gpulab', 'rocm', 'tests', 'unit', 'plugins',
                        'module_utils', 'fixtures')
MODULES = 'ansible_collections.gpulab.rocm.plugins.modules.'
PARSE_BUDGET_MS = 5.0
RATIO_BUDGET = 1.2


def read(name):
    with open(os.path.join(FIXTURES, name), 'rb') as handle:
        return handle.read().decode('utf-8')


def timings_ms(function, runs, warm_up=True):
    if warm_up:
        function()  # imports, regex compilation, page cache
    samples = []
    for _run in range(runs):
        start = time.perf_counter()
        function()
        samples.append((time.perf_counter() - start) * 1000.0)
    return samples


# --- worker: runs inside a fresh, module-sized Python process ---------------------------------------------------

def run_module(main, args):
    """One run of a module as AnsiballZ runs it once unpacked: exit_json/fail_json print JSON and exit."""
    from ansible.module_utils import basic
    try:
        from ansible.module_utils.testing import patch_module_args
        arguments = patch_module_args(args)
    except ImportError:  # ansible-core < 2.19
        arguments = _legacy_args(basic, args)
    out = io.StringIO()
    with arguments, contextlib.redirect_stdout(out):
        try:
            main()
        except SystemExit:
            pass
    return json.loads(out.getvalue())


@contextlib.contextmanager
def _legacy_args(basic, args):
    saved = basic._ANSIBLE_ARGS
    basic._ANSIBLE_ARGS = json.dumps({'ANSIBLE_MODULE_ARGS': args}).encode()
    try:
        yield
    finally:
        basic._ANSIBLE_ARGS = saved


def worker(module_name, args, argvs, runs):
    import importlib
    from ansible.modules import command
    main = importlib.import_module(MODULES + module_name).main
    first = run_module(main, args)

    def tool():
        for argv in argvs:
            subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)

    steps = (('tool', tool), ('module', lambda: run_module(main, args)),
             ('command', lambda: [run_module(command.main, {'argv': argv}) for argv in argvs]))
    samples = dict((name, []) for name, _step in steps)
    for name, step in steps:
        step()  # warm-up
    for _run in range(runs):
        for name, step in steps:
            samples[name].extend(timings_ms(step, 1, warm_up=False))
    json.dump({'samples': samples, 'result': first}, sys.stdout)


# --- parent -----------------------------------------------------------------------------------------------------

def replay_stub(folder, name, outputs):
    """A shell script that prints a capture; outputs maps the first argument ('*': any) to a capture."""
    path = os.path.join(folder, name)
    cases = ''.join('  {0}) exec cat {1!r} ;;\n'.format(key, os.path.join(FIXTURES, value))
                    for key, value in outputs.items())
    with open(path, 'w') as handle:
        handle.write('#!/bin/sh\ncase "$1" in\n{0}esac\n'.format(cases))
    os.chmod(path, 0o755)
    return path


def compare(label, module_name, args, argvs, runs):
    output = subprocess.run([sys.executable, __file__, '--worker', module_name, '--args', json.dumps(args),
                             '--argvs', json.dumps(argvs), '--runs', str(runs)],
                            stdout=subprocess.PIPE, check=True).stdout
    report = json.loads(output)
    samples = report['samples']
    tool, module, command = (statistics.median(samples[name]) for name in ('tool', 'module', 'command'))
    ratio = module / tool
    print('  {0:<50} {1:9.2f} {2:9.2f} {3:9.2f} {4:9.2f} {5:+9.2f} {6:6.2f}x {7:<4} {8:9.2f} {9:9.2f}'.format(
        label, tool, _p95(samples['tool']), module, _p95(samples['module']), module - tool, ratio,
        'ok' if ratio <= RATIO_BUDGET else 'over', command, _p95(samples['command'])))
    return report['result']


def _p95(samples):
    return sorted(samples)[int(len(samples) * 0.95)] if samples else float('nan')


def parse_figures(runs):
    from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.amd_smi import parse_amd_smi
    from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.pci import gather_pci
    from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.rocm_smi import parse_rocm_smi
    from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.rocminfo import parse_rocminfo

    print('\nParse time, mean of {0} runs (budget {1} ms):'.format(runs, PARSE_BUDGET_MS))
    print('  {0:<72} {1:>7} {2:>9} {3:>8}'.format('input', 'bytes', 'mean ms', 'stdev'))
    largest = {}
    for tool, parse in (('rocminfo', parse_rocminfo), ('rocm-smi', parse_rocm_smi), ('amd-smi', parse_amd_smi)):
        names = sorted(os.listdir(os.path.join(FIXTURES, tool)), reverse=True,
                       key=lambda name: os.path.getsize(os.path.join(FIXTURES, tool, name)))
        for name in names:
            text = read(os.path.join(tool, name))
            try:
                if parse(text)['gpu_count']:
                    break
            except ValueError:
                continue
        largest[tool] = os.path.join(tool, name)
        samples = timings_ms(lambda: parse(text), runs)
        mean = statistics.mean(samples)
        verdict = 'ok' if mean <= PARSE_BUDGET_MS else 'OVER'
        print('  {0:<72} {1:7d} {2:9.3f} {3:8.3f} {4}'.format(
            largest[tool], len(text.encode('utf-8')), mean, statistics.stdev(samples), verdict))
    static = read('amd-smi/static-json-rx6600-navi23-proxmox-bare-array.json')
    metric = read('amd-smi/metric-json-rx6600-navi23-proxmox-bare-array.json')
    samples = timings_ms(lambda: parse_amd_smi(static, metric), runs)
    print('  {0:<72} {1:7d} {2:9.3f} {3:8.3f}'.format('amd-smi static + metric JSON of one host, merged',
                                                      len(static) + len(metric), statistics.mean(samples),
                                                      statistics.stdev(samples)))
    if os.path.isdir('/sys/bus/pci/devices'):
        samples = timings_ms(gather_pci, runs)
        label = "gather_pci over this machine's /sys ({0} PCI functions)".format(
            len(os.listdir('/sys/bus/pci/devices')))
        print('  {0:<72} {1:>7} {2:9.3f} {3:8.3f}'.format(label, '-', statistics.mean(samples),
                                                          statistics.stdev(samples)))
    return largest


def module_figures(largest, runs, tools):
    from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.rocm_smi import JSON_ARGS

    amd_smi_calls = [['static', '--json'], ['metric', '--json'], ['list', '--json'], ['firmware']]
    print('\nModule run vs the tool\'s own run, {0} interleaved runs each, ms; ratio of medians (budget {1}x):'.format(
        runs, RATIO_BUDGET))
    print('  {0:<50} {1:>9} {2:>9} {3:>9} {4:>9} {5:>9} {6:>7} {7:<4} {8:>9} {9:>9}'.format(
        'tool', 'tool med', 'tool p95', 'mod med', 'mod p95', 'overhead', 'ratio', '', 'cmd med', 'cmd p95'))
    with tempfile.TemporaryDirectory() as stubs:
        stub = replay_stub(stubs, 'rocminfo', {'*': largest['rocminfo']})
        compare('replay stub rocminfo, ' + os.path.basename(largest['rocminfo'])[:26], 'rocminfo_facts',
                {'executable': stub}, [[stub]], runs)
        capture = 'rocm-smi/json-telegraf-flags-mi50-32gb-driver5.9.17-card0-only.json'  # the --json form it asks for
        stub = replay_stub(stubs, 'rocm-smi', {'*': capture})
        compare('replay stub rocm-smi, ' + os.path.basename(capture)[:26], 'rocm_smi_facts', {'executable': stub},
                [[stub] + JSON_ARGS], runs)
        # One host's static and metric JSON; `list` answers with the same host's topology JSON (gpu index + bdf).
        stub = replay_stub(stubs, 'amd-smi', {'static': 'amd-smi/static-json-rx6600-navi23-proxmox-bare-array.json',
                                              'metric': 'amd-smi/metric-json-rx6600-navi23-proxmox-bare-array.json',
                                              'list': 'amd-smi/topology-json-rx6600-single-gpu.json'})
        # firmware: false keeps the module to the three calls the baseline makes (no firmware capture of that host).
        compare('replay stub amd-smi, static+metric+list of an RX 6600', 'amd_smi_facts',
                {'executable': stub, 'firmware': False}, [[stub] + call for call in amd_smi_calls[:3]], runs)
    if not tools:
        print('  (no real tools: pass --tools DIR or set GPULAB_ROCM_TOOLS)')
        return
    for tool, module_name, calls in (('rocminfo', 'rocminfo_facts', [[]]),
                                     ('rocm-smi', 'rocm_smi_facts', [JSON_ARGS]),
                                     ('amd-smi', 'amd_smi_facts', amd_smi_calls)):
        path = os.path.join(tools, tool)
        if not os.path.exists(path):
            print('  {0:<50} not in {1}'.format('real ' + tool, tools))
            continue
        # With no GPU amd-smi_facts stops after the first call; the worker's first result tells.
        first = json.loads(subprocess.run([sys.executable, __file__, '--worker', module_name, '--args',
                                           json.dumps({'executable': path}), '--argvs', '[]', '--runs', '0'],
                                          stdout=subprocess.PIPE, check=True).stdout)['result']
        facts = first['ansible_facts'][tool.replace('-', '_')]
        if tool == 'amd-smi' and facts['error_kind']:
            calls = calls[:1]
        plural = '' if facts['gpu_count'] == 1 else 's'
        kind = ', ' + facts['error_kind'] if facts['error_kind'] else ''
        label = 'real {0} ({1} GPU{2}{3})'.format(tool, facts['gpu_count'], plural, kind)
        compare(label, module_name, {'executable': path}, [[path] + call for call in calls], runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--runs', type=int, default=200, help='runs per parse measurement (module runs: runs/4)')
    parser.add_argument('--tools', default=os.environ.get('GPULAB_ROCM_TOOLS'),
                        help='folder with real rocminfo / rocm-smi / amd-smi (default: $GPULAB_ROCM_TOOLS)')
    parser.add_argument('--worker', help=argparse.SUPPRESS)
    parser.add_argument('--args', help=argparse.SUPPRESS)
    parser.add_argument('--argvs', help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.worker:
        return worker(options.worker, json.loads(options.args), json.loads(options.argvs), options.runs)

    print('Python {0} on {1}, {2} CPUs'.format(sys.version.split()[0], os.uname().machine, os.cpu_count()))
    largest = parse_figures(options.runs)
    module_figures(largest, max(options.runs // 4, 5), options.tools)
    # Paid by every module Ansible runs (AnsiballZ starts a fresh Python), so it is outside the ratios above.
    start = statistics.median(timings_ms(lambda: subprocess.run(
        [sys.executable, '-c', 'import ansible.module_utils.basic'], check=True), 20))
    print('\nNot counted above, paid by every Ansible module run: a fresh Python importing AnsibleModule, '
          '{0:.1f} ms (median of 20)'.format(start))
    return None


if __name__ == '__main__':
    main()
