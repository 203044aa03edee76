"""A stand-in for the get-pip.py bootstrap script that ansible-test downloads, for machines that cannot reach its host.

Why: `ansible-test sanity` creates each test's virtualenv without pip, then bootstraps pip by running
get-pip.py, which it downloads from a CI file host and caches at ~/.ansible/test/cache/get_pip_<version>.py
(ansible_test/_util/target/setup/requirements.py, `bootstrap()`). Our test machines reach the Python package
index but not that host. ansible-test's own error message for this case says the script can be saved at the cache
path by hand; tests/tools/sanity.sh copies this file there instead.

What it does, with the same arguments get-pip.py takes (pip install arguments plus --no-setuptools/--no-wheel):
  1. installs the pip that Python bundles (`python -m ensurepip`, no network),
  2. uses it to install the requested packages (ansible-test asks for `pip==<version>`) from the package index,
  3. removes setuptools again if ensurepip brought it (Python <= 3.11) and --no-setuptools was given, so the
     virtualenv holds what get-pip.py would have left.
It is not get-pip.py: it needs a Python with ensurepip (on Debian, the python3-venv package, which `python -m venv`
needs anyway).
"""

import importlib.util
import re
import subprocess
import sys

# Marks this file as ours, so tests/tools/sanity.sh replaces only its own copy in ansible-test's cache.
STANDIN_MARKER = 'gpulab-ansible-test-get-pip-standin'


def main(argv):
    """Bootstrap pip offline, then install the requested packages with it."""
    no_setuptools = '--no-setuptools' in argv
    pip_args = [arg for arg in argv if arg not in ('--no-setuptools', '--no-wheel')]
    had_setuptools = importlib.util.find_spec('setuptools') is not None

    subprocess.check_call([sys.executable, '-m', 'ensurepip', '--default-pip'])
    subprocess.check_call([sys.executable, '-m', 'pip', 'install'] + pip_args)

    requested = any(re.match(r'setuptools($|[^-_.a-zA-Z0-9])', arg) for arg in pip_args)
    if no_setuptools and not had_setuptools and not requested:
        subprocess.check_call([sys.executable, '-m', 'pip', 'uninstall', '--yes', '--disable-pip-version-check',
                               'setuptools'])


if __name__ == '__main__':
    main(sys.argv[1:])
