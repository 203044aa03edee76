# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_containers changes: the container engines (installed from the distribution where none is present), the
CDI spec that names the node's GPUs (amd.com/gpu=0 ... and all), CDI in Docker's daemon.json (merged by keys) and
Docker's restart; and what the check at the end expects to see inside a container. Pure.

The GPUs come from the probe's sysfs facts: a GPU is listed when amdgpu drives it, the KFD (ROCm's kernel side) has
a node for it, and its render node is in /dev/dri; its index is its place among the KFD's GPU nodes, the order in
which rocminfo lists the agents and HIP numbers the devices.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import re
from collections import OrderedDict

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import gpu_support
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import json_too_deep
from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.gpu_partitions import same_gpu
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import (
    Plan, PlanError, file_matches, user_become_method,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.stack import USER_NAME_RE

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'containers',
    'role': 'rocm_containers',
    'changes_host': True,
    # Plus 'containers', read only where the role is enabled and an AMD GPU is there (plan_containers).
    'sections': ('os', 'packages', 'users', 'gpus'),
    'keys': {
        'install': 'Engine and check packages to install.',
        'subids': 'Per user without a range: the usermod argv that gives it subordinate ids.',
        'dirs': 'Folders of the CDI spec and daemon.json to make.',
        'spec': 'The CDI spec to write, path to content.',
        'spec_remove': 'CDI specs to remove.',
        'daemon_json': "Docker's merged daemon.json to write, path to content.",
        'daemon_json_mode': 'The mode daemon.json keeps.',
        'restart_docker': 'Whether dockerd is restarted to read the CDI setting.',
        'check': 'The container check: engines, users, cases, gids, image, busybox, become_method (sudo or su).',
        'remove': "Removed (state absent): files to remove (the role's CDI spec, a daemon.json that held only its key).",
    },
}


ENGINES = ('podman', 'docker')
KIND = 'amd.com/gpu'
# The image the check runs: built on the node from its busybox (no registry is needed, or used).
CHECK_IMAGE = 'localhost/gpulab-rocm-gpu-check:1'
BUSYBOX = '/bin/busybox'
# CDI spec versions: device names that start with a digit need 0.5.0, additionalGids 0.7.0 (the CDI SPEC.md's
# table of released versions). The spec carries the lowest version that holds what it says.
CDI_VERSION_NAMES = '0.5.0'
CDI_VERSION_GIDS = '0.7.0'
# Docker reads CDI specs from release 25 on (with "features": {"cdi": true} in daemon.json).
DOCKER_CDI_SINCE = (25, 0)
# What installs Docker from the distribution when rocm_containers_docker_packages is empty: Debian 13 ships the
# client (/usr/bin/docker) in a package of its own, which docker.io only recommends (the role installs without
# Recommends); elsewhere docker.io holds both.
DOCKER_PACKAGES = {'Debian 13': ['docker.io', 'docker-cli']}
DOCKER_PACKAGES_DEFAULT = ['docker.io']

_PACKAGE_RE = re.compile(r'^[a-z0-9][a-z0-9+.-]+\Z')
_SPEC_PATH_RE = re.compile(r'^(/etc/cdi|/var/run/cdi)/[A-Za-z0-9][A-Za-z0-9._-]*\.json\Z')
_DEVICE_PATH_RE = re.compile(r'^/dev/(kfd|dri/(card|renderD)\d{1,4})\Z')
_DEVICE_NAME_RE = re.compile(r'^(all|\d{1,3})\Z')
_ENV_RE = re.compile(r'^HSA_OVERRIDE_GFX_VERSION(_\d{1,4})?=\d{1,2}\.\d{1,2}\.\d{1,2}\Z')
_MAX_GID = 2 ** 31 - 1


def check(wanted, stack):
    """Every problem of the wanted state, as messages naming the variable."""
    problems = []
    engines = wanted.get('engines')
    if not isinstance(engines, list) or not engines or [e for e in engines if e not in ENGINES]:
        problems.append('rocm_containers_engines must be a non-empty list of %s, got %r'
                        % (' and '.join(ENGINES), engines))
    for key in ('podman_packages', 'docker_packages', 'check_packages'):
        names = wanted.get(key) or []
        bad = [name for name in names if not isinstance(name, str) or not _PACKAGE_RE.match(name)]
        if not isinstance(names, list) or bad:
            problems.append('rocm_containers_%s holds values that are not Debian package names: %s'
                            % (key, ', '.join(repr(name) for name in (bad or [names]))))
    spec = wanted.get('cdi_spec')
    if not isinstance(spec, str) or not _SPEC_PATH_RE.match(spec) or '/../' in spec + '/':
        problems.append('rocm_containers_cdi_spec must be a .json file directly in /etc/cdi or /var/run/cdi (where '
                        'the engines read specs), named with letters, digits and "._-"; got %r' % (spec,))
    count = wanted.get('subid_count', 65536)
    if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= 2 ** 24:
        problems.append('rocm_containers_subid_count must be a number of ids from 0 to 16777216, got %r' % (count,))
    users = wanted.get('check_users') or []
    bad = [user for user in users if not isinstance(user, str) or not USER_NAME_RE.match(user)]
    if not isinstance(users, list) or bad:
        problems.append('rocm_containers_check_users holds names that are not user names: %s'
                        % ', '.join(repr(user) for user in (bad or [users])))
    else:
        strangers = [user for user in users if user not in stack['gpu_users']]
        if strangers:
            problems.append('rocm_containers_check_users must be among the stack-wide rocm_gpu_users (%s): %s'
                            % (', '.join(stack['gpu_users']) or 'none', ', '.join(strangers)))
    return problems


def listed_gpus(node):
    """(gpus, warnings): the GPUs the spec lists, in KFD node order, and why any AMD GPU is left out.

    gpus: [{'index', 'bdf', 'name', 'kfd_node', 'gfx_target', 'render', 'card'}]; card is None when the host shows
    none for the GPU (or the device has several KFD nodes, a partitioned MI300, whose cards cannot be told apart).
    """
    pci = node.get('gpu_pci') or {}
    devices = (node.get('containers') or {}).get('devices') or {}
    amd = sorted(pci.get('amd') or [], key=lambda dev: dev.get('bdf') or '')
    kfd = sorted((n for n in pci.get('kfd_nodes') or [] if n.get('type') == 'gpu'), key=lambda n: n.get('node'))
    warnings = []
    by_bdf = {}
    for dev in amd:
        label = '%s (%s)' % (dev.get('bdf'), dev.get('name') or 'unknown AMD GPU')
        nodes = [n for n in kfd if same_gpu(n.get('bdf'), dev.get('bdf'))]
        if dev.get('driver') != 'amdgpu':
            warnings.append('%s is not bound to amdgpu (driver: %s): left out of the CDI spec' %
                            (label, dev.get('driver') or 'none'))
        elif not nodes:
            warnings.append('%s is bound to amdgpu, but ROCm does not see it (no KFD node%s): left out of the CDI '
                            'spec' % (label, '' if pci.get('kfd_present') else '; the KFD is not there'))
        else:
            by_bdf[dev.get('bdf')] = (dev, nodes)
    kfd_dev = devices.get('/dev/kfd') or {}
    if by_bdf and kfd_dev.get('type') != 'char':
        warnings.append('/dev/kfd is %s: no GPU can be used in a container, none is listed in the CDI spec'
                        % ('missing' if not kfd_dev.get('exists') else 'a %s, not a device' % kfd_dev.get('type')))
        return [], warnings
    gpus = []
    for kfd_node in kfd:
        owners = [bdf for bdf in by_bdf if same_gpu(kfd_node.get('bdf'), bdf)]
        if not owners:
            continue
        dev, nodes = by_bdf[owners[0]]
        label = '%s (%s, KFD node %s)' % (dev.get('bdf'), dev.get('name') or 'unknown AMD GPU', kfd_node.get('node'))
        minor = kfd_node.get('drm_render_minor')
        if not isinstance(minor, int) or minor < 128:
            warnings.append('%s has no render node in the KFD topology: left out of the CDI spec' % label)
            continue
        render = '/dev/dri/renderD%d' % minor
        present = devices.get(render) or {}
        if present.get('type') != 'char' or present.get('major') != ns.DRM_MAJOR or present.get('minor') != minor:
            warnings.append('%s: its render node %s is %s: left out of the CDI spec' % (
                label, render, 'missing' if not present.get('exists') else
                'not the DRM device %d:%d' % (ns.DRM_MAJOR, minor)))
            continue
        card = None
        cards = [name for name in dev.get('drm') or [] if name.startswith('card')]
        if len(nodes) == 1 and len(cards) == 1:
            path = '/dev/dri/' + cards[0]
            if (devices.get(path) or {}).get('type') == 'char':
                card = path
        gpus.append({'index': len(gpus), 'bdf': dev.get('bdf'), 'name': dev.get('name'), 'kfd_node': kfd_node.get('node'),
                     'gfx_target': kfd_node.get('gfx_target') or dev.get('gfx_target'), 'render': render, 'card': card})
    return gpus, warnings


def group_gids(node, wanted):
    """(gids of the host's video and render groups, notices) for the spec's additionalGids."""
    if not wanted.get('cdi_additional_gids', True):
        return [], []
    groups = node.get('groups') or {}
    gids, notices = [], []
    for name in ('video', 'render'):
        info = groups.get(name) or {}
        gid = info.get('gid')
        if info.get('exists') and isinstance(gid, int) and 0 < gid <= _MAX_GID:
            gids.append(gid)
        else:
            notices.append('the host has no %s group: its gid is not among the additional groups of the CDI spec'
                           % name)
    return sorted(set(gids)), notices


def spec_document(gpus, gids, env):
    """The CDI spec (an ordered dict, as it is written): one device per GPU by index, and all."""
    def nodes(gpu_list):
        paths = []
        for gpu in gpu_list:
            paths += [gpu['render']] + ([gpu['card']] if gpu['card'] else [])
        return [OrderedDict([('path', path)]) for path in paths]

    devices = [OrderedDict([('name', str(gpu['index'])),
                            ('containerEdits', OrderedDict([('deviceNodes', nodes([gpu]))]))]) for gpu in gpus]
    devices.append(OrderedDict([('name', 'all'), ('containerEdits', OrderedDict([('deviceNodes', nodes(gpus))]))]))
    edits = OrderedDict([('deviceNodes', [OrderedDict([('path', '/dev/kfd')])])])
    if gids:
        edits['additionalGids'] = list(gids)
    if env:
        edits['env'] = ['%s=%s' % (name, value) for name, value in sorted(env.items())]
    return OrderedDict([('cdiVersion', CDI_VERSION_GIDS if gids else CDI_VERSION_NAMES), ('kind', KIND),
                        ('devices', devices), ('containerEdits', edits)])


def validate_spec(spec):
    """Raise PlanError unless every value of the spec is one the role means to write (the last check before the
    text reaches a root-owned file that every engine on the node reads)."""
    problems = []
    if spec.get('kind') != KIND or spec.get('cdiVersion') not in (CDI_VERSION_NAMES, CDI_VERSION_GIDS):
        problems.append('kind or version %r/%r' % (spec.get('kind'), spec.get('cdiVersion')))
    names = [device.get('name') for device in spec.get('devices') or []]
    if len(names) != len(set(names)) or not all(_DEVICE_NAME_RE.match(str(name)) for name in names):
        problems.append('device names %r' % (names,))
    edits = [device.get('containerEdits') or {} for device in spec.get('devices') or []]
    edits.append(spec.get('containerEdits') or {})
    for edit in edits:
        for item in edit.get('deviceNodes') or []:
            if set(item) != {'path'} or not _DEVICE_PATH_RE.match(str(item['path'])):
                problems.append('device node %r' % (item,))
        for gid in edit.get('additionalGids') or []:
            if isinstance(gid, bool) or not isinstance(gid, int) or not 0 < gid <= _MAX_GID:
                problems.append('gid %r' % (gid,))
        for value in edit.get('env') or []:
            if not _ENV_RE.match(str(value)):
                problems.append('environment value %r' % (value,))
    if problems:
        raise PlanError('rocm_containers: the CDI spec would hold values the role does not write (%s); this is a '
                        'bug or a probe it cannot read.' % '; '.join(problems))


def spec_text(spec):
    validate_spec(spec)
    return json.dumps(spec, indent=2) + '\n'


def parse_daemon_json(path, info):
    """The lab's daemon.json as an ordered dict ({} when missing or blank); PlanError when it cannot be merged."""
    if not info or not info.get('exists'):
        return OrderedDict()
    if info.get('type') != 'file':
        raise PlanError('rocm_containers: %s is a %s, not a file: root does not follow or replace it. Make it a plain '
                        'file (or remove it).' % (path, info.get('type')))
    text = info.get('content')
    if text is None:
        raise PlanError('rocm_containers: %s is too large to merge (%s bytes).'
                        % (path, info.get('size')))
    if not text.strip():
        return OrderedDict()

    def pairs(items):
        keys = [key for key, _value in items]
        twice = sorted(set(key for key in keys if keys.count(key) > 1))
        if twice:
            raise ValueError('the key(s) %s appear twice in one object' % ', '.join(map(repr, twice)))
        return OrderedDict(items)

    def finite(number):
        value = float(number)
        if math.isinf(value):
            raise ValueError('the number %s is out of range (JSON has no infinity; Docker would not read it)' % number)
        return value

    def no_constant(name):
        raise ValueError('%s is not JSON (Python writes it; Docker does not read it)' % name)

    if json_too_deep(text, 64):
        raise PlanError('rocm_containers: %s nests more than 64 levels of objects or arrays: no Docker setting does; '
                        'it is damaged or not a daemon.json. Fix it, then run again. Nothing was changed.' % path)
    try:
        data = json.loads(text, object_pairs_hook=pairs, parse_float=finite, parse_constant=no_constant)
    except ValueError as exc:
        raise PlanError('rocm_containers: %s is not valid JSON (%s); Docker would not start with it either. Fix it, '
                        'then run again.' % (path, exc))
    if not isinstance(data, dict):
        raise PlanError('rocm_containers: %s holds a JSON %s, not an object of settings.'
                        % (path, type(data).__name__))
    if 'features' in data and not isinstance(data['features'], dict):
        raise PlanError('rocm_containers: "features" in %s is not an object (%r).'
                        % (path, data['features']))
    return data


def merged_daemon_json(data):
    """daemon.json with "features": {"cdi": true} merged in (every other key as it was), or None when it has it."""
    features = data.get('features') or OrderedDict()
    if features.get('cdi') is True:
        return None
    merged = OrderedDict(data)
    merged['features'] = OrderedDict(features)
    merged['features']['cdi'] = True
    return json.dumps(merged, indent=2) + '\n'


def engine_packages(node, wanted, engine):
    """The packages that install an engine: the variable's, or for Docker when it is empty the distribution's."""
    names = list(wanted.get('%s_packages' % engine) or [])
    if engine == 'docker' and not names:
        os_info = node.get('os') or {}
        names = list(DOCKER_PACKAGES.get('%s %s' % (os_info.get('distribution'), os_info.get('version')),
                                         DOCKER_PACKAGES_DEFAULT))
    return names


def _version(text):
    numbers = re.findall(r'\d+', text or '')
    return tuple(int(number) for number in numbers[:2]) if len(numbers) >= 2 else None


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: enabled, engines, podman_packages, docker_packages, check_packages, cdi_spec, cdi_additional_gids,
    hsa_override_enabled, docker_cdi, docker_restart_running, check, check_users, subid_count.

    Returns the Plan: skip (a reason, or None), install [packages], dirs [folders to make], spec {path: text},
    spec_remove [paths], daemon_json {path: text}, daemon_json_mode, restart_docker (bool), gpus, cdi (the spec),
    subids [{'user', 'subuids': 'FIRST-LAST' or None, 'subgids': ..., 'argv': the usermod command}],
    check: {'engines' (checked as root), 'users' (checked with rootless Podman), 'cases' {device name: paths},
    'gids' {engine: the groups its containers must have}, 'image', 'busybox'}.
    """
    result = Plan('containers')
    result.update(skip=None, install=[], dirs=[], spec={}, spec_remove=[], daemon_json={}, daemon_json_mode='0644',
                  restart_docker=False, gpus=[], cdi=None, subids=[],
                  check={'engines': [], 'users': [], 'cases': {}, 'gids': {}, 'image': CHECK_IMAGE, 'busybox': BUSYBOX,
                         'become_method': user_become_method(node)})
    if absent(wanted):
        return plan_absent(node, wanted, result)
    if not wanted.get('enabled'):
        result['skip'] = 'rocm_containers_enabled is false'
        return result
    # Bad settings are refused where the role is enabled, GPU or not (the plan pass lists them before any change).
    problems = check(wanted, stack)
    if problems:
        raise PlanError('rocm_containers: %s.' % '; '.join(problems))
    pci = node.get('gpu_pci') or {}
    if not pci.get('amd'):
        others = pci.get('nvidia_count') or 0
        result['skip'] = ('no AMD GPU on this host%s: rocm_containers changes nothing here'
                          % (' (%d NVIDIA GPU(s) only)' % others if others else ''))
        result.warn(result['skip'])
        return result

    state = node.get('containers') or {}
    engines = state.get('engines') or {}
    packages = node.get('packages') or {}

    def installed(name):
        return (packages.get(name) or ['  '])[0][1] == 'i'

    # Engines: one present (whatever installed it) is left as it is; a missing one comes from the distribution.
    install = []
    for engine in wanted['engines']:
        if not (engines.get(engine) or {}).get('path'):
            missing = [name for name in engine_packages(node, wanted, engine) if not installed(name)]
            if missing:
                install += missing
                result.change('install %s (%s)' % (engine, ', '.join(missing)), 'no %s on the host' % engine)
            else:
                result.warn('%s is not on the PATH although rocm_containers_%s_packages are installed: nothing is '
                            'installed; check the packages' % (engine, engine))
    if wanted.get('check', True):
        missing = [name for name in wanted.get('check_packages') or [] if not installed(name)]
        if missing:
            install += missing
            result.change('install %s' % ', '.join(missing), 'the check at the end runs its image from %s' % BUSYBOX)
    result['install'] = sorted(set(install), key=install.index)

    # The CDI spec.
    gpus, warnings = listed_gpus(node)
    for text in warnings:
        result.warn(text)
    result['gpus'] = gpus
    path = wanted['cdi_spec']
    specs = state.get('cdi_specs') or {}
    others = sorted(other for other, info in specs.items() if other != path and info.get('kind') == KIND)
    if others:
        raise PlanError('rocm_containers: another CDI spec declares %s: %s. Two specs of one kind make the engines '
                        'refuse the devices or pick one of them. Remove it, or set rocm_containers_cdi_spec to it so '
                        'that the role manages it.' % (KIND, ', '.join(others)))
    current = specs.get(path) or {}
    if current.get('exists') and current.get('type') != 'file':
        raise PlanError('rocm_containers: %s is a %s, not a file: root does not follow or replace it.'
                        % (path, current.get('type')))
    if gpus:
        gids, notices = group_gids(node, wanted)
        for text in notices:
            result.warn(text)
        env = {}
        if wanted.get('hsa_override_enabled', True):
            env, hsa_warnings = gpu_support.hsa_override_env(
                [{'gfx_target': gpu['gfx_target'], 'kfd_node': gpu['kfd_node']} for gpu in gpus], stack['version'])
            for text in hsa_warnings:
                result.warn(text)
        spec = spec_document(gpus, gids, env)
        text = spec_text(spec)
        result['cdi'] = spec
        if not file_matches(current, text):
            result['spec'][path] = text
            result.change('write %s' % path, 'missing' if not current.get('exists') else
                          'the GPUs or their settings changed' if current.get('sha1') else 'its owner or mode differs')
        folder = path.rsplit('/', 1)[0]
        if not ((state.get('cdi_dirs') or {}).get(folder) or {}).get('exists'):
            result['dirs'].append(folder)
        cases = dict((str(gpu['index']), ['/dev/kfd', gpu['render']] + ([gpu['card']] if gpu['card'] else []))
                     for gpu in gpus)
        cases['all'] = sorted(set(path for paths in cases.values() for path in paths))
        result['check']['cases'] = cases
        # Podman adds the spec's additionalGids to the container's groups. Docker 26 (Debian 13's, seen in the
        # containers scenario) drops them when it sets up the container's user; moby/moby#52579 fixes that: its
        # containers are not held to them.
        result['check']['gids'] = {'podman': gids, 'docker': []}
    elif current.get('exists'):
        result['spec_remove'].append(path)
        result.change('remove %s' % path, 'no GPU of this host can be used in a container (see the warnings)')

    if 'podman' in wanted['engines'] and wanted.get('subid_count', 65536):
        result['subids'] = subid_ranges(node, stack['gpu_users'], wanted.get('subid_count', 65536), result)
    docker_check = _docker(node, wanted, state, result)
    if wanted.get('check', True) and gpus:
        check_engines = (['podman'] if 'podman' in wanted['engines'] else []) + (['docker'] if docker_check else [])
        users = []
        if 'podman' in wanted['engines']:
            for user in wanted.get('check_users') or stack['gpu_users'][:1]:
                # check_users are among rocm_gpu_users: one that does not exist is preflight's problem (it stops
                # the host at the gate); planned alone, the check runs without them.
                if ((node.get('users') or {}).get(user) or {}).get('exists'):
                    users.append(user)
        result['check'].update(engines=check_engines, users=users)
    return result


def subid_ranges(node, users, count, result):
    """Subordinate uid and gid ranges for the GPU users who lack one (rootless Podman maps an image's other owners
    into them). A new range starts after every range either file holds, so none overlaps; the same range is given
    in both files."""
    state = node.get('containers') or {}
    files = state.get('subids') or {}
    local = state.get('local_users') or []
    known = node.get('users') or {}
    taken = [start + size for path in ns.SUBID_FILES for _owner, start, size in files.get(path) or []]
    following = max([100000] + taken)
    planned = []
    for user in users:
        info = known.get(user) or {}
        if not info.get('exists'):
            continue
        owners = (user, str(info.get('uid')))
        have = dict((path, any(owner in owners for owner, _start, _size in files.get(path) or []))
                    for path in ns.SUBID_FILES)
        if all(have.values()):
            continue
        if user not in local:
            result.warn('user %s has no subordinate ids and is not in /etc/passwd (a directory service\'s user): '
                        'rootless Podman runs only images whose files all belong to root for them; give them ranges '
                        'in the directory, or in /etc/subuid and /etc/subgid' % user)
            continue
        span = '%d-%d' % (following, following + count - 1)
        following += count
        entry = {'user': user, 'subuids': None if have['/etc/subuid'] else span,
                 'subgids': None if have['/etc/subgid'] else span}
        # The user name is checked (stack.USER_NAME_RE) and comes after '--': never read as an option.
        entry['argv'] = (['usermod'] + (['--add-subuids', span] if entry['subuids'] else [])
                         + (['--add-subgids', span] if entry['subgids'] else []) + ['--', user])
        planned.append(entry)
        result.change('give %s subordinate ids %s' % (user, span), 'rootless Podman maps the files of an image\'s '
                      'other owners into them; %s %s none for %s'
                      % (' and '.join(path for path in ns.SUBID_FILES if not have[path]),
                         'has' if any(have.values()) else 'have', user))
    return planned


def _docker(node, wanted, state, result):
    """Plan daemon.json and the restart; whether Docker is checked at the end."""
    if 'docker' not in wanted['engines'] or not wanted.get('docker_cdi', True):
        return False
    engine = (state.get('engines') or {}).get('docker') or {}
    version = _version(engine.get('version'))
    if engine.get('path') and version and version < DOCKER_CDI_SINCE:
        result.warn('Docker %s reads no CDI specs (Docker 25 and later do): %s is left as it is; use the classic '
                    '--device=/dev/kfd --device=/dev/dri line (docs/containers.md)'
                    % (engine.get('version'), ns.DOCKER_DAEMON_JSON))
        return False
    info = state.get('daemon_json') or {}
    data = parse_daemon_json(ns.DOCKER_DAEMON_JSON, info)
    text = merged_daemon_json(data)
    if text is not None:
        result['daemon_json'][ns.DOCKER_DAEMON_JSON] = text
        result['daemon_json_mode'] = info.get('mode') if info.get('exists') else '0644'
        result.change('enable CDI in %s' % ns.DOCKER_DAEMON_JSON,
                      'missing' if not info.get('exists') else 'features.cdi is not true (the other keys stay)')
        if not (state.get('docker_dir') or {}).get('exists'):
            result['dirs'].append('/etc/docker')
    daemon = state.get('docker_daemon') or {}
    if not daemon.get('running'):
        if engine.get('path'):
            result.warn('dockerd is not running: the CDI setting takes effect when it starts; Docker is not checked')
        return False
    started, mtime = daemon.get('started_at'), info.get('mtime')
    pending = text is None and started is not None and mtime is not None and mtime > started
    if text is None and not pending:
        return True
    why = ('%s changed' % ns.DOCKER_DAEMON_JSON if text is not None else
           '%s was changed after dockerd started, so the running daemon does not read CDI specs yet'
           % ns.DOCKER_DAEMON_JSON)
    running = daemon.get('containers_running')
    if running is None:
        result.warn('Docker is not restarted although %s: its running containers cannot be listed (%s); restart it '
                    'when none runs' % (why, daemon.get('error') or 'unknown error'))
        return False
    if running and not wanted.get('docker_restart_running'):
        result.warn('Docker is not restarted although %s: %d container(s) are running, and a restart stops them. '
                    'Restart Docker when they are done, or set rocm_containers_docker_restart_running: true'
                    % (why, running))
        return False
    result['restart_docker'] = True
    result.change('restart Docker', why + (' (%d running container(s) stop: rocm_containers_docker_restart_running '
                                           'is true)' % running if running else ''))
    return True


def has_work(plan, wanted):
    """The container check runs on every run where an engine is there."""
    return bool((plan.get('check') or {}).get('engines'))


def probe_needs(node, wanted, stack, fresh=()):
    """The containers section, read only when the role is enabled on a host with an AMD GPU (or whose GPUs are not
    read yet: they are read in the same probe); removed (state absent), wherever it is not read yet."""
    del stack
    sections = node.get('sections') or []
    if absent(wanted):
        return None if 'containers' in sections else {'sections': ['containers']}
    amd = (node.get('gpu_pci') or {}).get('amd') or 'gpus' not in sections
    if wanted.get('enabled') and amd and 'containers' not in sections:
        return {'sections': ['containers']}
    return None


def absent(wanted):
    """Whether the role removes what it changed (rocm_containers_state: absent)."""
    return wanted.get('state', 'present') == 'absent'


def without_our_key(data):
    """daemon.json without the key merged_daemon_json adds ("features": {"cdi": true}; "features" goes too where
    nothing else is in it): (the text to write, or None where it holds no key of ours; whether anything of the lab's
    is left)."""
    features = data.get('features')
    if not isinstance(features, dict) or features.get('cdi') is not True:
        return None, True
    kept = OrderedDict(data)
    rest = OrderedDict((key, value) for key, value in features.items() if key != 'cdi')
    if rest:
        kept['features'] = rest
    else:
        del kept['features']
    return json.dumps(kept, indent=2) + '\n', bool(kept)


def plan_absent(node, wanted, result):
    """Removed (rocm_containers_state: absent): the CDI spec the role manages (rocm_containers_cdi_spec, where it is
    a file of kind amd.com/gpu) and the key it added to Docker's daemon.json (features.cdi; the lab's keys stay, and
    a file that held only that key goes). The engines, the check's busybox and the users' subordinate ids stay: the
    lab and its users may run containers of their own (docs/containers.md). Docker is not restarted: the running
    daemon keeps CDI on, with no AMD spec left to read, until its next start."""
    result['remove'] = []
    spec = wanted.get('cdi_spec')
    if not isinstance(spec, str) or not _SPEC_PATH_RE.match(spec) or '/../' in spec + '/':
        raise PlanError('rocm_containers_cdi_spec must be a .json file directly in /etc/cdi or /var/run/cdi (the spec '
                        'the role removes), got %r. Nothing was changed.' % (spec,))
    state = node.get('containers') or {}
    current = (state.get('cdi_specs') or {}).get(spec) or {}
    if current.get('exists'):
        if current.get('type') == 'file' and current.get('kind') == KIND:
            result['remove'].append(spec)
            result.change('remove %s' % spec, 'rocm_containers_state is absent (the CDI spec of the node\'s GPUs)')
        else:
            result.warn('%s stays: it is a %s%s, not the spec the role writes' % (
                spec, current.get('type'), ' of kind %s' % current.get('kind') if current.get('type') == 'file' else ''))
    info = state.get('daemon_json') or {}
    if info.get('exists'):
        text, lab_keys = without_our_key(parse_daemon_json(ns.DOCKER_DAEMON_JSON, info))
        if text is not None and lab_keys:
            result['daemon_json'][ns.DOCKER_DAEMON_JSON] = text
            result['daemon_json_mode'] = info.get('mode') or '0644'
            result.change('take "features": {"cdi": true} out of %s' % ns.DOCKER_DAEMON_JSON,
                          'rocm_containers_state is absent (the lab\'s other keys stay)')
        elif text is not None:
            result['remove'].append(ns.DOCKER_DAEMON_JSON)
            result.change('remove %s' % ns.DOCKER_DAEMON_JSON, 'it holds only the key the role added '
                          '("features": {"cdi": true})')
        if text is not None and (state.get('docker_daemon') or {}).get('running'):
            result.warn('dockerd is not restarted: it keeps CDI on, with no AMD spec to read, until its next start')
    return result
