# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure OpenPGP helpers for apt signing keys: dearmor a key file and compute its primary-key fingerprints.

Only what an apt keyring needs (RFC 4880 / RFC 9580 packet framing and v4/v5/v6 fingerprints); no crypto is
verified here: apt (gpgv) verifies signatures, we only decide *which* key is trusted, by fingerprint.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import hashlib
import re

ARMOR_BEGIN = '-----BEGIN PGP PUBLIC KEY BLOCK-----'
ARMOR_END = '-----END PGP PUBLIC KEY BLOCK-----'
TAG_PUBLIC_KEY = 6


def dearmor(data):
    """Return the binary key packets of an armored or binary OpenPGP public key, as `gpg --dearmor` would.

    Raises ValueError with the reason when the data is not an OpenPGP public key.
    """
    if isinstance(data, str):
        data = data.encode('utf-8')
    if not data:
        raise ValueError('the key is empty')
    text = data.decode('latin-1')
    if ARMOR_BEGIN not in text:
        if data[0] & 0x80:
            return bytes(data)
        raise ValueError('not an OpenPGP public key: neither "%s" nor binary key packets' % ARMOR_BEGIN)
    body = text.split(ARMOR_BEGIN, 1)[1]
    if ARMOR_END not in body:
        raise ValueError('armored key is truncated: "%s" is missing' % ARMOR_END)
    body = body.split(ARMOR_END, 1)[0]
    # Armor headers end at the first blank line; the checksum line starts with '='.
    lines = body.replace('\r', '').split('\n')
    if ':' in ''.join(lines[:3]):
        while lines and lines[0].strip():
            lines.pop(0)
    payload = ''.join(line.strip() for line in lines if line.strip() and not line.startswith('='))
    if not re.match(r'^[A-Za-z0-9+/=]+$', payload):
        raise ValueError('armored key holds characters that are not base64')
    try:
        packets = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError('armored key is not valid base64: %s' % exc)
    if not packets or not packets[0] & 0x80:
        raise ValueError('armored key does not hold OpenPGP packets')
    return packets


def iter_packets(packets):
    """Yield (tag, body) for each packet of binary OpenPGP data. Raises ValueError on broken framing."""
    pos, size = 0, len(packets)
    while pos < size:
        head = packets[pos]
        if not head & 0x80:
            raise ValueError('bad OpenPGP packet header at byte %d' % pos)
        if head & 0x40:  # new format
            tag = head & 0x3F
            if pos + 1 >= size:
                raise ValueError('truncated packet header at byte %d' % pos)
            first = packets[pos + 1]
            if first < 192:
                length, hdr = first, 2
            elif first < 224:
                if pos + 2 >= size:
                    raise ValueError('truncated packet header at byte %d' % pos)
                length, hdr = ((first - 192) << 8) + packets[pos + 2] + 192, 3
            elif first == 255:
                length, hdr = int.from_bytes(packets[pos + 2:pos + 6], 'big'), 6
            else:
                raise ValueError('partial body lengths are not allowed in a key (byte %d)' % pos)
        else:  # old format
            tag = (head >> 2) & 0x0F
            ltype = head & 0x03
            if ltype == 3:
                raise ValueError('indeterminate packet length is not allowed in a key (byte %d)' % pos)
            nbytes = (1, 2, 4)[ltype]
            length, hdr = int.from_bytes(packets[pos + 1:pos + 1 + nbytes], 'big'), 1 + nbytes
        end = pos + hdr + length
        if end > size:
            raise ValueError('truncated packet (tag %d) at byte %d' % (tag, pos))
        yield tag, packets[pos + hdr:end]
        pos = end


def fingerprint(body):
    """Fingerprint (upper-case hex) of one public-key packet body, per its key version."""
    version = body[0] if body else 0
    if version == 4:
        return hashlib.sha1(b'\x99' + len(body).to_bytes(2, 'big') + body).hexdigest().upper()
    if version == 5:
        return hashlib.sha256(b'\x9a' + len(body).to_bytes(4, 'big') + body).hexdigest().upper()
    if version == 6:
        return hashlib.sha256(b'\x9b' + len(body).to_bytes(4, 'big') + body).hexdigest().upper()
    raise ValueError('unsupported OpenPGP key version %r' % version)


def primary_fingerprints(packets):
    """Fingerprints of the primary keys (not subkeys) in binary key data, in file order."""
    found = [fingerprint(body) for tag, body in iter_packets(packets) if tag == TAG_PUBLIC_KEY]
    if not found:
        raise ValueError('the data holds no OpenPGP public key')
    return found


def normalize_fingerprint(value):
    """'CA8B B472 ...' or '0xca8b...' -> 'CA8BB472...'."""
    value = re.sub(r'\s+', '', str(value)).upper()
    return value[2:] if value.startswith('0X') else value
