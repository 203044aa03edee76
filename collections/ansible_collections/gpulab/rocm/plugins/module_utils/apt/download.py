# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Size-limited downloads for modules: never hold more than a bounded number of bytes of what a server sends.

A key file or a small index is a few KiB; a wrong URL, an error page or a hostile server can send an endless
stream. bounded_download() reads at most limit + 1 bytes (an error body is never read at all) and fails the module
with a message that names the URL, the cause and the fix, having changed nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import http.client
import socket
import urllib.error

from ansible.module_utils.urls import open_url

DEFAULT_LIMIT = 1024 * 1024  # 1 MiB: a signing key is a few KiB
_CHUNK = 64 * 1024


def _fail(module, url, reason, status, what):
    module.fail_json(
        msg='Could not download %s from %s: %s (HTTP status %s). Nothing was changed. Check the URL variable and that '
            'this host can reach it (proxy, firewall, lab mirror).' % (what, url, reason, status),
        url=url, status=status)


def bounded_download(module, url, limit=DEFAULT_LIMIT, timeout=30, what='the signing key', limit_option='max_size'):
    """Download url (http, https, ftp or file) and return its bytes, at most `limit` of them.

    module: the AnsibleModule (its validate_certs parameter, when it has one, is used; fail_json reports errors).
    limit: the most bytes accepted; bigger content fails without reading more than limit + 1 bytes.
    timeout: seconds for the connection and for each read. what: the words the messages use for the file.
    limit_option: the module option that sets limit, named in the too-big message.

    Never returns on failure: module.fail_json is called with msg, url and status ('Could not download <what>
    from <url>: ... Nothing was changed.' for an unreachable server or an HTTP error, '<url> sends more than
    <limit> bytes ...' for content over the limit).
    """
    limit = int(limit)
    if limit < 1:
        module.fail_json(msg='The download limit %s must be at least 1 byte (%s).' % (limit, limit_option), url=url)
    try:
        response = open_url(url, timeout=timeout, validate_certs=module.params.get('validate_certs', True),
                            follow_redirects='urllib2')
    except urllib.error.HTTPError as exc:
        # Its body is an error page of any size: close it unread.
        try:
            exc.close()
        except Exception:  # pylint: disable=broad-except
            pass
        _fail(module, url, 'HTTP Error %s: %s' % (exc.code, exc.reason), exc.code, what)
    except urllib.error.URLError as exc:
        _fail(module, url, 'Request failed: %s' % exc.reason, int(getattr(exc, 'code', -1) or -1), what)
    except (http.client.HTTPException, socket.timeout, OSError, ValueError) as exc:
        _fail(module, url, 'Connection failure: %s' % exc, -1, what)

    status = getattr(response, 'code', None)
    try:
        if url.startswith(('http:', 'https:')) and status != 200:
            _fail(module, url, 'the server answered %s instead of 200 OK' % status, status, what)
        announced = (response.headers.get('Content-Length') or '').strip()
        if announced.isdigit() and int(announced) > limit:
            _too_big(module, url, limit, 'announces %s bytes' % announced, what, limit_option, status)
        chunks, total = [], 0
        while total <= limit:
            chunk = response.read(min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:
            _too_big(module, url, limit, 'sends more than %d bytes' % limit, what, limit_option, status)
    except (http.client.HTTPException, socket.timeout, OSError, ValueError) as exc:
        _fail(module, url, 'the transfer broke off: %s' % exc, status, what)
    finally:
        try:
            response.close()
        except Exception:  # pylint: disable=broad-except
            pass
    return b''.join(chunks)


def _too_big(module, url, limit, how, what, limit_option, status):
    module.fail_json(
        msg='Refused to download %s from %s: it %s, over the limit of %d bytes (%s). Nothing was changed. This is '
            'not the file you want: check the URL (an error page, a directory listing or an endless stream answers '
            'there), or raise %s if the file really is that big.' % (what, url, how, limit, limit_option, limit_option),
        url=url, status=status, limit=limit)
