# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The alert rules, the dashboard and the scrape configuration that rocm_metrics ships, checked by the real promtool
(Debian's prometheus package; tests/harness/host-setup.sh installs it: a missing promtool fails, never skips)."""

import json
import os
import re
import shutil
import subprocess

import yaml

from ansible_collections.gpulab.rocm.plugins.module_utils.node import metrics_textfile

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = os.path.join(HERE, '..', '..', 'roles', 'rocm_metrics', 'files')
RULES = os.path.join(FILES, 'gpulab-alerts.rules.yml')
RULE_TESTS = os.path.join(HERE, 'gpulab-alerts.test.yml')
DASHBOARD = os.path.join(FILES, 'gpulab-dashboard.json')
# Series node_exporter itself serves, which the dashboard may also name.
NODE_EXPORTER = ('up',)


def promtool(*args):
    path = shutil.which('promtool')
    assert path, "promtool is missing: install Debian's prometheus package (tests/harness/host-setup.sh does)"
    run = subprocess.run([path] + list(args), cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         check=False)
    return run.returncode, run.stdout.decode()


def alerts():
    with open(RULES) as handle:
        return [rule for group in yaml.safe_load(handle)['groups'] for rule in group['rules'] if 'alert' in rule]


def test_promtool_check_rules():
    rc, out = promtool('check', 'rules', RULES)
    assert rc == 0, out
    assert 'SUCCESS: %d rules found' % len(alerts()) in out


def test_promtool_test_rules():
    rc, out = promtool('test', 'rules', RULE_TESTS)
    assert rc == 0, out
    assert 'SUCCESS' in out


def test_every_alert_has_a_test_that_fires_it_beside_a_quiet_node():
    with open(RULE_TESTS) as handle:
        cases = yaml.safe_load(handle)['tests']
    fired = {}
    for case in cases:
        series = ' '.join(item['series'] for item in case['input_series'])
        instances = set(re.findall(r'instance="([^"]+)"', series))
        for check in case['alert_rule_test']:
            for alert in check.get('exp_alerts') or []:
                fired.setdefault(check['alertname'], set()).add(alert['exp_labels']['instance'])
                # exp_alerts is the whole list at that time: every other node of the case stays quiet.
                assert len(instances) > 1, case['name']
    names = [rule['alert'] for rule in alerts()]
    assert sorted(fired) == sorted(names)


def test_the_alerts_only_name_metrics_the_writer_writes():
    for rule in alerts():
        for name in re.findall(r'\b(gpulab_[a-z0-9_]+)', rule['expr']):
            assert name in metrics_textfile.METRICS, (rule['alert'], name)


def test_the_dashboard_is_json_and_queries_only_known_metrics():
    with open(DASHBOARD) as handle:
        dashboard = json.load(handle)
    queries = [target['expr'] for panel in dashboard['panels'] for target in panel.get('targets', [])]
    assert len(queries) >= len(dashboard['panels']) - 1
    for expr in queries:
        names = [name for name in re.findall(r'\b([a-z_:][a-z0-9_:]*)\s*(?:\{|\[|\)|$| )', expr)
                 if name.startswith('gpulab_') or name in NODE_EXPORTER]
        assert names, expr
        for name in names:
            assert name in metrics_textfile.METRICS or name in NODE_EXPORTER, (expr, name)


def test_the_scrape_config_with_generated_targets(tmp_path):
    """prometheus-scrape.yml with its two paths pointed at the shipped rules and at file_sd targets generated
    from hosts as the role's filter gets them: `promtool check config` accepts it, and the targets file too."""
    from ansible_collections.gpulab.rocm.plugins.filter.metrics_file_sd import metrics_file_sd
    targets = metrics_file_sd([
        {'inventory_hostname': 'mi300-01.lab.example', 'rocm_metrics_enabled': True,
         'rocm_metrics_node_class': 'mi300_nodes'},
        {'inventory_hostname': 'mi300-02.lab.example', 'rocm_metrics_enabled': True,
         'rocm_metrics_node_class': 'mi300_nodes'},
        {'inventory_hostname': 'ws-navi-01.lab.example', 'rocm_metrics_enabled': True,
         'rocm_metrics_listen_address': '127.0.0.1:9101', 'rocm_metrics_target_address': '127.0.0.1'},
        # A host with the role off is no target.
        {'inventory_hostname': 'build-01.lab.example', 'rocm_metrics_enabled': False},
    ])
    assert targets == [
        {'targets': ['127.0.0.1:9101'], 'labels': {}},
        {'targets': ['mi300-01.lab.example:9100', 'mi300-02.lab.example:9100'], 'labels': {'node_class': 'mi300_nodes'}},
    ]
    (tmp_path / 'gpulab.json').write_text(json.dumps(targets))
    with open(os.path.join(FILES, 'prometheus-scrape.yml')) as handle:
        text = handle.read()
    text = text.replace('/etc/prometheus/rules/gpulab-alerts.rules.yml', os.path.abspath(RULES))
    text = text.replace('/etc/prometheus/file_sd/gpulab.json', str(tmp_path / 'gpulab.json'))
    (tmp_path / 'prometheus.yml').write_text(text)
    rc, out = promtool('check', 'config', str(tmp_path / 'prometheus.yml'))
    assert rc == 0, out
    assert 'SUCCESS' in out and '13 rules found' in out
