#!/usr/bin/env python3
"""Serve the fixture ROCm mirror read-only over HTTP on 127.0.0.1, with fault injection.

    python3 tests/harness/mirror/serve.py --root DIR --port-file FILE [--pid-file FILE] [--faults FILE]

Binds a free port (or --port), writes it to --port-file once listening, logs one short line per request to
stderr. Faults: the file --faults (default DIR/../faults) is read on every request; each line
"CODE PREFIX" (e.g. "503 /rocm/apt/6.2.4/" or "404 /rocm/apt/6.2.4/pool/main/r/rocblas/") answers CODE to
every path that starts with PREFIX; a line "delay SECONDS PREFIX" holds each such request that long before serving
it (a run killed mid-download). Blank lines and "#" comments are ignored; the first matching line wins.
Paths with a component starting with "." (the build stamp) are never served. The same tree is also served under
ALIAS (/lab_mirror~1), a prefix with characters apt quotes in its list-file names, for tests of that naming.
"""

import argparse
import functools
import http.server
import os
import signal
import sys
import time
import urllib.parse
from pathlib import Path


def read_faults(path):
    """[(code, prefix)] from the faults file; a missing file means no faults, a bad line is reported and skipped."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    except OSError as err:
        print(f"serve: cannot read faults file {path}: {err}", file=sys.stderr)
        return []
    faults = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) == 3 and parts[0] == "delay" and parts[1].isdigit() and parts[2].startswith("/"):
            faults.append(("delay", int(parts[1]), parts[2]))
            continue
        if len(parts) != 2 or not parts[0].isdigit() or not 400 <= int(parts[0]) <= 599 or not parts[1].startswith("/"):
            print(f"serve: {path}:{number}: ignored {line!r}; expected 'CODE /path/prefix' with CODE 400-599",
                  file=sys.stderr)
            continue
        faults.append((int(parts[0]), None, parts[1]))
    return faults


ALIAS = "/lab_mirror~1"


class MirrorHandler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: apt fetches many files per connection
    server_version = "gpulab-fixture-mirror"  # mirror.sh recognises its server by this Server header
    sys_version = ""

    def __init__(self, *args, faults_file, **kwargs):
        self.faults_file = faults_file
        super().__init__(*args, **kwargs)

    def refused(self):
        """Send the injected fault or the hidden-file 404 for this request; True when a response was sent."""
        path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)
        for code, seconds, prefix in read_faults(self.faults_file):
            if not path.startswith(prefix):
                continue
            if code == "delay":
                time.sleep(seconds)
                return False
            self.send_error(code, f"injected fault ({code} {prefix})")
            return True
        if any(part.startswith(".") for part in path.split("/")):
            self.send_error(404)
            return True
        return False

    def translate_path(self, path):
        if path.startswith(ALIAS + "/"):
            path = path[len(ALIAS):]
        return super().translate_path(path)

    def do_GET(self):
        if not self.refused():
            super().do_GET()

    def do_HEAD(self):
        if not self.refused():
            super().do_HEAD()

    def log_request(self, code="-", size="-"):
        code = getattr(code, "value", code)
        sys.stderr.write(f"serve: {code} {self.command} {self.path}\n")

    def log_message(self, format, *args):  # noqa: A002 - signature of the base class
        pass  # errors are already in log_request's line; the base class would repeat them verbosely


def stop(signum, frame):
    """SIGTERM (mirror.sh stop) ends serve_forever like Ctrl-C, so the port and pid files are removed."""
    raise KeyboardInterrupt


def write_atomic(path, text):
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    tmp.write_text(text)
    tmp.replace(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", required=True, type=Path, help="mirror directory (build_mirror.py --out)")
    parser.add_argument("--port-file", required=True, type=Path, help="file that receives the port number")
    parser.add_argument("--pid-file", type=Path, help="file that receives this server's process id")
    parser.add_argument("--faults", type=Path, help="fault file (default: ROOT/../faults)")
    parser.add_argument("--port", type=int, default=0, help="port to bind (default: a free one)")
    args = parser.parse_args()
    root = args.root.resolve()
    if not (root / "rocm").is_dir():
        print(f"serve: {root} holds no mirror (no rocm/ folder); build it first: "
              f"python3 tests/harness/mirror/build_mirror.py --out {args.root}", file=sys.stderr)
        return 2
    faults = args.faults.resolve() if args.faults else root.parent / "faults"
    handler = functools.partial(MirrorHandler, directory=str(root), faults_file=faults)
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler)
    except OSError as err:
        print(f"serve: cannot listen on 127.0.0.1:{args.port}: {err}", file=sys.stderr)
        return 2
    server.daemon_threads = True
    port = server.server_address[1]
    signal.signal(signal.SIGTERM, stop)
    if args.pid_file:
        write_atomic(args.pid_file, f"{os.getpid()}\n")
    write_atomic(args.port_file, f"{port}\n")  # the socket already listens: clients may connect now
    print(f"serve: serving {root} on http://127.0.0.1:{port}/ (faults file: {faults})", file=sys.stderr)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        for path in (args.port_file, args.pid_file):
            if path:
                try:
                    if path.read_text().strip() in (str(port), str(os.getpid())):
                        path.unlink()
                except OSError:
                    pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
