#!/usr/bin/env python3
"""Open the fleet report in headless Chromium (Debian's chromium package) and check what a reader sees.

    tests/report/check_report.py REPORT_DIR --expect-hosts h1,h2,... [--screenshot FILE]

REPORT_DIR holds fleet-report.html and fleet-report.json (roles/rocm_report). The expected hosts come from the
caller (the inventory), not from the report, so a host the report leaves out fails the check. Checks, on the DOM
that Chromium builds after running the page's script:
- every expected host has a row, the page's host count is theirs, and no other host shows up;
- each GPU that the JSON calls degraded has a cell marked degraded, and no other cell is marked;
- clicking a header sorts: the page sorts by the column named in #sort=N on load (the same code as a click), and
  the VRAM column then reads in ascending order with aria-sort="ascending";
- the page loads nothing from anywhere (no src= or href= to a URL, no <link> or external <script>).
Then it saves a screenshot. Chromium is installed with apt-get when it is missing (Debian, root).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser

CHROMIUM_FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
                  '--disable-background-networking', '--disable-component-update', '--disable-sync',
                  '--hide-scrollbars']
VRAM_COLUMN = 7  # 0-based index of the VRAM header in the template


class Rows(HTMLParser):
    """The body rows of table#fleet: per row, its data-host and per cell (class, data-sort, text)."""

    def __init__(self):
        super().__init__()
        self.rows, self.headers, self.external = [], [], []
        self._in_body = self._in_head = False
        self._cell = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name in ('src', 'href'):
            if attrs.get(name) and '://' in attrs[name]:
                self.external.append('%s %s=%s' % (tag, name, attrs[name]))
        if tag == 'link' or (tag == 'script' and attrs.get('src')):
            self.external.append(tag)
        if tag == 'tbody':
            self._in_body = True
        elif tag == 'thead':
            self._in_head = True
        elif tag == 'tr' and self._in_body:
            self.rows.append({'host': attrs.get('data-host'), 'cells': []})
        elif tag == 'th' and self._in_head:
            self.headers.append(attrs)
        elif tag == 'td' and self._in_body:
            self._cell = {'class': attrs.get('class') or '', 'sort': attrs.get('data-sort'), 'text': ''}
            self.rows[-1]['cells'].append(self._cell)

    def handle_endtag(self, tag):
        if tag == 'tbody':
            self._in_body = False
        elif tag == 'thead':
            self._in_head = False
        elif tag == 'td':
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell['text'] += data


def chromium():
    for name in ('chromium', 'chromium-browser'):
        if shutil.which(name):
            return shutil.which(name)
    print('check_report: installing chromium (apt-get)', file=sys.stderr)
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    subprocess.run(['apt-get', 'update', '-qq'], check=True, env=env)
    subprocess.run(['apt-get', 'install', '-y', '-qq', 'chromium'], check=True, env=env, stdout=subprocess.DEVNULL)
    return shutil.which('chromium')


def run_chromium(binary, profile_root, *args):
    # A new, empty profile per call: nothing from an earlier run can change what the page shows.
    profile = tempfile.mkdtemp(prefix='chromium-profile-', dir=profile_root)
    result = subprocess.run([binary] + CHROMIUM_FLAGS + ['--user-data-dir=' + profile] + list(args),
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise SystemExit('check_report: chromium failed (rc %d): %s' % (result.returncode, result.stderr[-2000:]))
    return result.stdout


def fail(problems):
    for problem in problems:
        print('check_report: FAIL: ' + problem, file=sys.stderr)
    raise SystemExit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('report_dir')
    parser.add_argument('--expect-hosts', required=True, help='comma-separated inventory host names')
    parser.add_argument('--screenshot', help='PNG to write (default: REPORT_DIR/fleet-report.png)')
    args = parser.parse_args()
    html_path = os.path.abspath(os.path.join(args.report_dir, 'fleet-report.html'))
    json_path = os.path.join(args.report_dir, 'fleet-report.json')
    for path in (html_path, json_path):
        if not os.path.isfile(path):
            raise SystemExit('check_report: %s is missing: run playbooks/facts.yml with rocm_report_dest=%s first'
                             % (path, args.report_dir))
    expected = sorted(set(host for host in args.expect_hosts.split(',') if host))
    with open(json_path) as handle:
        data = json.load(handle)
    binary = chromium()
    profile_root = tempfile.mkdtemp(prefix='gpulab-report-check-')
    problems = []
    try:
        rows = Rows()
        rows.feed(run_chromium(binary, profile_root, '--dump-dom', 'file://' + html_path))
        shown = sorted(set(row['host'] for row in rows.rows))
        if shown != expected:
            problems.append('hosts shown %s, expected %s (missing: %s, extra: %s)' % (
                shown, expected, sorted(set(expected) - set(shown)), sorted(set(shown) - set(expected))))
        if data['summary']['hosts'] != len(expected):
            problems.append('the summary counts %d hosts, expected %d' % (data['summary']['hosts'], len(expected)))
        degraded = sorted((host['name'], gpu['pci_bus']) for host in data['hosts'] for gpu in host['gpus']
                          if gpu['link']['degraded'])
        marked = sorted((row['host'], row['cells'][8]['text'].split()[0]) for row in rows.rows
                        if len(row['cells']) > 9 and 'degraded' in row['cells'][9]['class'].split())
        if marked != degraded:
            problems.append('degraded links marked %s, the JSON says %s' % (marked, degraded))
        if rows.external:
            problems.append('the page is not self-contained: %s' % rows.external)

        by_vram = Rows()
        by_vram.feed(run_chromium(binary, profile_root, '--dump-dom', 'file://%s#sort=%d' % (html_path, VRAM_COLUMN)))
        vram = [float(row['cells'][VRAM_COLUMN]['sort'] or 0) for row in by_vram.rows]
        if by_vram.headers[VRAM_COLUMN].get('aria-sort') != 'ascending' or vram != sorted(vram):
            problems.append('sorting by VRAM did not sort: aria-sort=%r, values %s' % (
                by_vram.headers[VRAM_COLUMN].get('aria-sort'), vram))
        if len(by_vram.rows) != len(rows.rows):
            problems.append('sorting changed the number of rows (%d -> %d)' % (len(rows.rows), len(by_vram.rows)))

        screenshot = os.path.abspath(args.screenshot or os.path.join(args.report_dir, 'fleet-report.png'))
        height = 320 + 200 * len(rows.rows)  # rows with problems wrap to several lines
        run_chromium(binary, profile_root, '--window-size=1600,%d' % min(height, 12000),
                     '--screenshot=' + screenshot, 'file://' + html_path)
        with open(screenshot, 'rb') as handle:
            if handle.read(8) != b'\x89PNG\r\n\x1a\n':
                problems.append('%s is not a PNG' % screenshot)
    finally:
        shutil.rmtree(profile_root, ignore_errors=True)
    if problems:
        fail(problems)
    print('check_report: OK: %d hosts, %d rows, %d degraded links marked, sorted by VRAM; screenshot %s'
          % (len(expected), len(rows.rows), len(degraded), screenshot))


if __name__ == '__main__':
    main()
