# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel-log rules of the GPU health check: data, not code (docs/health.md, "The kernel log").

RULES is a tuple of dicts, one per kernel message form:

- code: the stable UPPER_SNAKE code a finding carries (docs/health.md's table, the Slurm reason, the metrics): never
  renamed. Several rules may share a code (the kernel spells one event several ways across versions).
- class: what kind of fault it is (probe, ras, reset, hang, smu, pcie): a grouping for people, not used to decide.
- severity: 'fatal' (the check fails, the node drains, the finding is held until acknowledged or aged out) or
  'warn' (reported, not unhealthy).
- pattern: a regular expression searched in one message, with its timestamp and syslog prefix already cut off.
- scope: 'gpu' when the line counts only if the PCI address it names is an AMD GPU of this node or a port above one
  (PCIe messages name any device); 'any' when the line is the GPU driver's own (amdgpu names only its GPUs).
- description: what the finding means, in the check's reason.
- source: where the message comes from, and the captures that prove the pattern
  (tests/unit/plugins/module_utils/fixtures/kernel-log/, SOURCES.md); 'kernel format only' where no public capture
  was found, and the pattern follows the kernel's format string.

DERIVED holds the codes computed from other findings (a reset loop). validate_extra() checks a site's own rules
(the data file's kernel_log_extra_rules, inventory variable rocm_health_kernel_log_extra_rules). Standard library
only: this runs on the node without Ansible.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

SEVERITIES = ('fatal', 'warn')
SCOPES = ('any', 'gpu')
MAX_EXTRA_RULES = 50
MAX_PATTERN = 500
MAX_TEXT = 200
_CODE = re.compile(r'^KLOG_[A-Z0-9]+(?:_[A-Z0-9]+)*$')
_MAX_CODE = 48

RULES = (
    # --- the GPU did not come up ------------------------------------------------------------------------------------
    {'code': 'KLOG_PROBE_FAILED', 'class': 'probe', 'severity': 'fatal', 'scope': 'any',
     'pattern': r'\bamdgpu: probe of \S+ failed with error -?\d+',
     'description': 'amdgpu failed to probe the GPU (it has no driver until a reboot)',
     'source': 'driver core (older kernels); dmesg-grep-amdgpu-2x-mi210-..., dmesg-mi300x-rocm6.2.0-...'},
    {'code': 'KLOG_PROBE_FAILED', 'class': 'probe', 'severity': 'fatal', 'scope': 'any',
     'pattern': r'\bprobe with driver amdgpu failed with error -?\d+',
     'description': 'amdgpu failed to probe the GPU (it has no driver until a reboot)',
     'source': 'driver core (kernel 6.x); dmesg-mi50-kernel6.12.1-...'},
    {'code': 'KLOG_PROBE_FAILED', 'class': 'probe', 'severity': 'fatal', 'scope': 'any',
     'pattern': r'\bFatal error during GPU init\b',
     'description': 'amdgpu failed to initialise the GPU',
     'source': 'amdgpu_device_init; dmesg-grep-amdgpu-2x-mi210-..., dmesg-mi300x-rocm6.2.0-..., dmesg-mi50-..., '
               'dmesg-rdna3-gfx11-dgpu-tigerlake-...'},
    # --- uncorrectable or deferred memory/fabric errors ---------------------------------------------------------------
    {'code': 'KLOG_RAS_UNCORRECTABLE', 'class': 'ras', 'severity': 'fatal', 'scope': 'any',
     'pattern': r'\buncorrectable hardware error\s*\(ERREVENT_ATHUB_INTERRUPT\) detected',
     'description': 'an uncorrectable hardware error (ATHUB interrupt, a RAS fatal error)',
     'source': 'amdgpu_ras_global_ras_isr; dmesg-8x-mi300x-rocm6.2.3-... (both), dmesg-T-mi50-athub-...'},
    {'code': 'KLOG_RAS_UNCORRECTABLE', 'class': 'ras', 'severity': 'fatal', 'scope': 'any',
     'pattern': r'\b[1-9]\d* (?:new )?uncorrectable hardware errors detected in (?!total\b)\w+ block',
     'description': 'uncorrectable ECC/RAS errors counted by amdgpu',
     'source': 'amdgpu_ras error logging, "%ld uncorrectable hardware errors detected in %s block" and the MI300 '
               '"socket: %d, die: %d, %u new ..." form; kernel format only (the real correctable twin of the '
               'same printk family, in dmesg-8x-mi300x-...-mode1, must not match)'},
    {'code': 'KLOG_RAS_UNCORRECTABLE', 'class': 'ras', 'severity': 'fatal', 'scope': 'any',
     'pattern': r'\b[1-9]\d* (?:new )?deferred hardware errors detected in (?!total\b)\w+ block',
     'description': 'deferred (poisoned) RAS errors counted by amdgpu',
     'source': 'amdgpu_ras error logging, "... deferred hardware errors detected in %s block"; kernel format only'},
    {'code': 'KLOG_RAS_UNCORRECTABLE', 'class': 'ras', 'severity': 'fatal', 'scope': 'any',
     'pattern': r'\bRAS poison consumption\b',
     'description': 'poisoned data was consumed (a RAS uncorrectable error reached a job)',
     'source': 'amdkfd event_interrupt_poison_consumption and amdgpu_ras ("RAS poison consumption, fall back to gpu '
               'reset flow", "GPU reset for %s RAS poison consumption is issued!"); kernel format only'},
    # --- resets ------------------------------------------------------------------------------------------------------
    {'code': 'KLOG_GPU_RESET', 'class': 'reset', 'severity': 'warn', 'scope': 'any',
     'pattern': r'\bGPU reset begin!',
     'description': 'the GPU was reset (its jobs were killed)',
     'source': 'amdgpu_device_gpu_recover; dmesg-8x-mi300x-..., dmesg-780m-... (both), dmesg-T-mi50-..., '
               'dmesg-rx5700xt-..., syslog-rdna2-..., dmesg-notime-ryzen-apu-..., journal-short-rx550-..., '
               'rsyslog-iso-gfx1103-..., journal-short-ryzen5-apu-..., journal-short-rx7900xtx-...'},
    {'code': 'KLOG_RESET_FAILED', 'class': 'reset', 'severity': 'fatal', 'scope': 'any',
     'pattern': r'\bGPU reset\(\d+\) failed\b',
     'description': 'a GPU reset failed (the GPU stays unusable until a reboot)',
     'source': 'amdgpu_device_gpu_recover; dmesg-rdna2-two-gpus-psp-resume-failed-gpu-reset-1-failed-...'},
    {'code': 'KLOG_RESET_FAILED', 'class': 'reset', 'severity': 'fatal', 'scope': 'any',
     'pattern': r'\bGPU (?:psp |smu )?mode[12] reset failed\b',
     'description': 'a GPU reset failed (the GPU stays unusable until a reboot)',
     'source': 'amdgpu_device_mode1_reset / mode2; dmesg-rdna-laptop-nixos-suspend-...-gpu-mode1-reset-failed-...'},
    {'code': 'KLOG_RESET_FAILED', 'class': 'reset', 'severity': 'fatal', 'scope': 'any',
     'pattern': r'\b(?:GPU Recovery Failed|ASIC reset failed with error)\b',
     'description': 'a GPU reset failed (the GPU stays unusable until a reboot)',
     'source': 'amdgpu_device_gpu_recover / amdgpu_do_asic_reset; kernel format only'},
    # --- hangs: ring, MES and scheduler-firmware timeouts ------------------------------------------------------------
    {'code': 'KLOG_RING_TIMEOUT', 'class': 'hang', 'severity': 'warn', 'scope': 'any',
     'pattern': r'\bring \S+ timeout, signaled seq=\d+, emitted seq=\d+',
     'description': 'a GPU ring stopped making progress (a hung job; the driver resets the ring or the GPU)',
     'source': 'amdgpu_job_timedout; dmesg-rx5700xt-..., dmesg-gfx11-apu-c5-..., syslog-rdna2-..., '
               'dmesg-notime-ryzen-apu-... (sdma0, no address), journal-short-rx550-... (old "ring gfx"), '
               'dmesg-rdna-0d-smu-...'},
    {'code': 'KLOG_RING_TIMEOUT', 'class': 'hang', 'severity': 'warn', 'scope': 'any',
     'pattern': r'\bMES failed to respon(?:d to msg=\w+|se msg=\d+)',
     'description': 'the micro engine scheduler (MES) firmware did not answer',
     'source': 'mes_v11/v12 submit_pkt_and_poll_completion; dmesg-780m-... (both), dmesg-gfx11-apu-c5-..., '
               'dmesg-strix-halo-..., journal-short-rx7900xtx-... (older "failed to response msg=3")'},
    {'code': 'KLOG_RING_TIMEOUT', 'class': 'hang', 'severity': 'warn', 'scope': 'any',
     'pattern': r'\bqcm fence wait loop timeout expired\b',
     'description': 'the hardware scheduler did not preempt the compute queues in time',
     'source': 'amdkfd unmap_queues_cpsch; journal-short-ryzen5-apu-..., dmesg-rdna2-two-gpus-...'},
    # --- the power-management firmware -------------------------------------------------------------------------------
    {'code': 'KLOG_SMU_FAILURE', 'class': 'smu', 'severity': 'warn', 'scope': 'any',
     'pattern': r"\bSMU: I'm not done with your (?:previous )?command",
     'description': 'the SMU (power-management firmware) stopped answering',
     'source': 'smu_cmn_send_smc_msg; dmesg-rdna-0d-smu-not-done-..., dmesg-T-rdna2-gfx10-nixos-...'},
    {'code': 'KLOG_SMU_FAILURE', 'class': 'smu', 'severity': 'warn', 'scope': 'any',
     'pattern': r'\bFailed to send message 0x[0-9a-fA-F]+, response 0x[0-9a-fA-F]+',
     'description': 'the SMU (power-management firmware) rejected or dropped a message',
     'source': 'smu9/vega20 powerplay messaging; dmesg-T-mi50-athub-...'},
    {'code': 'KLOG_SMU_FAILURE', 'class': 'smu', 'severity': 'warn', 'scope': 'any',
     'pattern': r'\b(?:Failed to disable (?:all )?smu features|Fail(?:ed)? to disable dpm features)\b',
     'description': 'the SMU (power-management firmware) could not stop its features',
     'source': 'smu_v11/v13 and powerplay; dmesg-T-mi50-..., dmesg-T-rdna2-gfx10-nixos-..., '
               'dmesg-rdna-laptop-nixos-suspend-...'},
    # --- the PCIe link -----------------------------------------------------------------------------------------------
    {'code': 'KLOG_PCIE_LINK_LIMITED', 'class': 'pcie', 'severity': 'warn', 'scope': 'gpu',
     'pattern': r'\bavailable PCIe bandwidth, limited by [\d.]+ GT/s PCIe x\d+ link at\b',
     'description': 'the PCI core found the GPU\'s bandwidth limited by a slower or narrower link',
     'source': 'pcie_report_downtraining; dmesg-rx6800-b450-..., dmesg-vega56-raspberry-pi-... (both name the '
               'switch port above the GPU); dmesg-non-gpu-devices-... must not count'},
    {'code': 'KLOG_PCIE_AER_CORRECTED', 'class': 'pcie', 'severity': 'warn', 'scope': 'gpu',
     'pattern': r'\bPCIe Bus Error: severity=Correct(?:ed|able)\b',
     'description': 'corrected PCIe errors (AER) on the GPU or a port above it',
     'source': 'aer_print_error; dmesg-rdna3-gfx11-dgpu-tigerlake-... (switch port and root port above the GPU); '
               'journal-short-nvidia-host-... must not count'},
    {'code': 'KLOG_PCIE_AER_UNCORRECTED', 'class': 'pcie', 'severity': 'fatal', 'scope': 'gpu',
     'pattern': r'\bPCIe Bus Error: severity=Uncorrect(?:ed|able) \((?:Non-)?Fatal\)',
     'description': 'an uncorrectable PCIe error (AER) on the GPU or a port above it',
     'source': 'aer_print_error; dmesg-fury-nano-rocm1.2-root-port-aer-uncorrected-fatal-...'},
)

# Codes that no pattern gives: computed from other findings (kernel_log.reset_loops).
DERIVED = (
    {'code': 'KLOG_RESET_LOOP', 'class': 'reset', 'severity': 'fatal', 'scope': 'any', 'from': 'KLOG_GPU_RESET',
     'description': 'the GPU reset kernel_log_reset_loop_count times within kernel_log_reset_loop_minutes',
     'source': 'KLOG_GPU_RESET lines and their times; dmesg-780m-7840hs-... (5 resets in 14 min), '
               'dmesg-780m-8845hs-... (5 resets in 25 min)'},
)

BUILTIN_CODES = tuple(sorted(set(rule['code'] for rule in RULES + DERIVED)))


def validate_extra(rules):
    """A site's rules (kernel_log_extra_rules) checked: a list of at most MAX_EXTRA_RULES dicts with code
    (KLOG_UPPER_SNAKE, not a built-in code), severity (fatal or warn), pattern (a regular expression that compiles, at
    most MAX_PATTERN characters), and optional description, class and scope. Returns them with defaults filled;
    ValueError names the rule and the fix."""
    if rules is None:
        return []
    if not isinstance(rules, list):
        raise ValueError('kernel_log_extra_rules must be a list of rules ({code, severity, pattern}), got %s'
                         % type(rules).__name__)
    if len(rules) > MAX_EXTRA_RULES:
        raise ValueError('kernel_log_extra_rules has %d rules; at most %d' % (len(rules), MAX_EXTRA_RULES))
    known = set(('code', 'severity', 'pattern', 'description', 'class', 'scope'))
    checked = []
    for number, rule in enumerate(rules):
        where = 'kernel_log_extra_rules[%d]' % number
        if not isinstance(rule, dict):
            raise ValueError('%s must be a mapping with code, severity and pattern' % where)
        unknown = sorted(set(rule) - known)
        if unknown:
            raise ValueError('%s has keys a rule cannot have: %s (it can have: %s)'
                             % (where, ', '.join(str(key) for key in unknown), ', '.join(sorted(known))))
        code = rule.get('code')
        if not isinstance(code, str) or len(code) > _MAX_CODE or not _CODE.match(code):
            raise ValueError('%s: code must be UPPER_SNAKE starting KLOG_ (at most %d characters), such as '
                             'KLOG_SITE_LINK_FLAP, got %r' % (where, _MAX_CODE, code))
        if code in BUILTIN_CODES:
            raise ValueError('%s: code %s is a built-in code; give the site rule a code of its own' % (where, code))
        if rule.get('severity') not in SEVERITIES:
            raise ValueError('%s: severity must be fatal or warn, got %r' % (where, rule.get('severity')))
        pattern = rule.get('pattern')
        if not isinstance(pattern, str) or not pattern or len(pattern) > MAX_PATTERN or '\n' in pattern:
            raise ValueError('%s: pattern must be a one-line regular expression of 1 to %d characters'
                             % (where, MAX_PATTERN))
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError('%s: pattern %r is not a regular expression Python can use: %s' % (where, pattern, exc))
        scope = rule.get('scope', 'any')
        if scope not in SCOPES:
            raise ValueError('%s: scope must be any or gpu, got %r' % (where, scope))
        texts = {}
        for key in ('description', 'class'):
            value = rule.get(key, '')
            if not isinstance(value, str) or len(value) > MAX_TEXT or '\n' in value:
                raise ValueError('%s: %s must be one line of at most %d characters' % (where, key, MAX_TEXT))
            texts[key] = value
        severities = set(item['severity'] for item in checked if item['code'] == code)
        if severities and rule['severity'] not in severities:
            raise ValueError('%s: code %s is given severity %s here and %s in another rule; one code has one '
                             'severity' % (where, code, rule['severity'], severities.pop()))
        checked.append({'code': code, 'class': texts['class'] or 'site', 'severity': rule['severity'],
                        'scope': scope, 'pattern': pattern,
                        'description': texts['description'] or 'a site rule matched', 'source': 'site rule'})
    return checked


def compiled(extra=()):
    """RULES and the site's checked extra rules, each with its pattern compiled (key 'regex')."""
    return [dict(rule, regex=re.compile(rule['pattern'])) for rule in tuple(RULES) + tuple(extra)]


def severities(extra=()):
    """{code: 'fatal'|'warn'} of every code a run can report (built-in, derived and the site's)."""
    return dict((rule['code'], rule['severity']) for rule in tuple(RULES) + tuple(DERIVED) + tuple(extra))
