# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure OpenPGP helpers for apt signing keys: decide whether a downloaded key file may become an apt keyring.

Only what an apt keyring needs (RFC 4880 / RFC 9580 ASCII armor, packet framing and v4/v5/v6 fingerprints); no
crypto is verified here: apt (gpgv or sqv) verifies signatures, we only decide *which* keys it may use.

The entry point is trusted_keyring(data, fingerprints): a key file is accepted only when it holds exactly trusted
public keys with their own subkeys, signatures, user ids and user attributes, and nothing else. Everything a
verifier could pick up as an extra signing key (a secret key, an untrusted public key, packets of a message) is
refused with the packet's number, byte offset and tag, and the fix.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import binascii
import hashlib
import re

ARMOR_PUBLIC = 'PGP PUBLIC KEY BLOCK'
ARMOR_BEGIN = '-----BEGIN %s-----' % ARMOR_PUBLIC
ARMOR_END = '-----END %s-----' % ARMOR_PUBLIC

TAG_SIGNATURE = 2
TAG_SECRET_KEY = 5
TAG_PUBLIC_KEY = 6
TAG_SECRET_SUBKEY = 7
TAG_USER_ID = 13
TAG_PUBLIC_SUBKEY = 14
TAG_USER_ATTRIBUTE = 17
TAG_PADDING = 21

TAG_NAMES = {
    0: 'Reserved',
    1: 'Public-Key Encrypted Session Key',
    2: 'Signature',
    3: 'Symmetric-Key Encrypted Session Key',
    4: 'One-Pass Signature',
    5: 'Secret-Key',
    6: 'Public-Key',
    7: 'Secret-Subkey',
    8: 'Compressed Data',
    9: 'Symmetrically Encrypted Data',
    10: 'Marker',
    11: 'Literal Data',
    12: 'Trust',
    13: 'User ID',
    14: 'Public-Subkey',
    17: 'User Attribute',
    18: 'Symmetrically Encrypted and Integrity Protected Data',
    19: 'Modification Detection Code',
    20: 'AEAD Encrypted Data',
    21: 'Padding',
}

# Packets that belong to a transferable public key after its primary key (RFC 9580 10.1).
_KEY_PARTS = (TAG_SIGNATURE, TAG_USER_ID, TAG_PUBLIC_SUBKEY, TAG_USER_ATTRIBUTE)

_EXPORT_HINT = 'use a file with only the vendor\'s public key (what `gpg --armor --export FINGERPRINT` writes)'

_BEGIN_RE = re.compile(r'^-----BEGIN (PGP [A-Z0-9 ,/]+)-----$')
_END_RE = re.compile(r'^-----END (PGP [A-Z0-9 ,/]+)-----$')
_HEADER_RE = re.compile(r'^[\x21-\x39\x3b-\x7e]+: ?.*$')  # Key: Value (RFC 9580 6.2.2)
_CHECKSUM_RE = re.compile(r'^=([A-Za-z0-9+/]{4})$')
_BASE64_LINE_RE = re.compile(r'^[A-Za-z0-9+/]*={0,2}$')


class KeyRefused(ValueError):
    """A key file that must not become a keyring. str() is the reason with the fix; fingerprints lists the primary
    keys found before the refusal (possibly empty)."""

    def __init__(self, reason, fingerprints=None):
        super(KeyRefused, self).__init__(reason)
        self.fingerprints = list(fingerprints or [])


def tag_name(tag):
    return '%s, %s' % (tag, TAG_NAMES.get(tag, 'unknown packet type'))


def crc24(data):
    """The CRC-24 of RFC 4880 6.1 / RFC 9580 6.1 (the armor checksum)."""
    crc = 0xB704CE
    for byte in bytearray(data):
        crc ^= byte << 16
        for _bit in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def _as_bytes(data):
    if isinstance(data, str):
        data = data.encode('utf-8')
    if data is None:
        data = b''
    return bytes(data)


def _is_binary(data):
    return bool(data) and bool(bytearray(data[:1])[0] & 0x80)


def _armor_blocks(text):
    """Decode every armored block of text, in order: [(line number of BEGIN, bytes)].

    Headers (Version:, Comment:, Hash: ... up to a blank line), CRLF line ends and the optional =XXXX CRC-24 line
    are accepted; a CRC that does not match, a block that is not a public key block, a block without its END line
    and any text outside the blocks are refused.
    """
    lines = text.replace('\r\n', '\n').replace('\r', '\n').split('\n')
    blocks = []
    index, count = 0, len(lines)
    while index < count:
        line = lines[index].strip()
        number = index + 1
        index += 1
        if not line:
            continue
        begin = _BEGIN_RE.match(line)
        if not begin:
            if not blocks:
                if ARMOR_BEGIN not in text:
                    raise KeyRefused('not an OpenPGP public key: neither "%s" nor binary key packets (line %d '
                                     'starts with %r); the URL probably points at an error page or another file'
                                     % (ARMOR_BEGIN, number, _shorten(line, 40)))
                raise KeyRefused('line %d, before the armored key, is text that is not part of it (%r): a key '
                                 'file holds only the armored key; %s' % (number, _shorten(line, 40), _EXPORT_HINT))
            raise KeyRefused('line %d, after armored key block %d, is text that is not part of a key (%r; trailing '
                             'garbage): the file was altered or is not a key file; %s'
                             % (number, len(blocks), _shorten(line, 40), _EXPORT_HINT))
        kind = begin.group(1)
        if kind != ARMOR_PUBLIC:
            raise KeyRefused('armored block %d (line %d) is a "%s", not a "%s": a key file for apt holds public keys '
                             'only, and a private key or a message in it is refused; %s'
                             % (len(blocks) + 1, number, kind, ARMOR_PUBLIC, _EXPORT_HINT))
        # Armor headers, up to the blank line that ends them (tolerated when missing: base64 never has ': ').
        while index < count and _HEADER_RE.match(lines[index].strip()):
            index += 1
        payload, checksum, end_seen = [], None, False
        while index < count:
            body_line = lines[index].strip()
            index += 1
            if not body_line:
                continue
            end = _END_RE.match(body_line)
            if end:
                if end.group(1) != kind:
                    raise KeyRefused('armored block %d (line %d) ends with "-----END %s-----" instead of "%s"'
                                     % (len(blocks) + 1, number, end.group(1), ARMOR_END))
                end_seen = True
                break
            if checksum is not None:
                raise KeyRefused('armored block %d (line %d) goes on after its checksum line: "%s" is missing '
                                 'after the =XXXX line' % (len(blocks) + 1, number, ARMOR_END))
            crc = _CHECKSUM_RE.match(body_line)
            if crc:
                checksum = crc.group(1)
                continue
            if not _BASE64_LINE_RE.match(body_line):
                raise KeyRefused('armored block %d holds characters that are not base64 at line %d (%r): the file '
                                 'is damaged; download it again' % (len(blocks) + 1, index, _shorten(body_line, 40)))
            payload.append(body_line)
        if not end_seen:
            raise KeyRefused('armored key is truncated: "%s" is missing after line %d (the download was cut short; '
                             'run again)' % (ARMOR_END, number))
        joined = ''.join(payload)
        if not joined:
            raise KeyRefused('armored block %d (line %d) holds no data' % (len(blocks) + 1, number))
        if '=' in joined.rstrip('=') or len(joined) % 4:
            raise KeyRefused('armored block %d (line %d) is not valid base64 (padding inside the data or a length '
                             'that is not a multiple of 4): the file is damaged; download it again'
                             % (len(blocks) + 1, number))
        try:
            decoded = base64.b64decode(joined, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise KeyRefused('armored block %d (line %d) is not valid base64: %s' % (len(blocks) + 1, number, exc))
        if checksum is not None:
            expected = bytearray(base64.b64decode(checksum))
            wanted = (expected[0] << 16) | (expected[1] << 8) | expected[2]
            if crc24(decoded) != wanted:
                raise KeyRefused('armored block %d (line %d) fails its CRC-24 checksum (=%s, computed =%s): the '
                                 'file was damaged or altered after it was armored; download it again'
                                 % (len(blocks) + 1, number, checksum,
                                    base64.b64encode(crc24(decoded).to_bytes(3, 'big')).decode('ascii')))
        blocks.append((number, decoded))
    if not blocks:
        raise KeyRefused('the key is empty')
    return blocks


def dearmor(data):
    """Return the binary packets of an armored or binary OpenPGP public key, as `gpg --dearmor` would.

    Armored input may hold several public key blocks (their packets are concatenated, in order). Raises ValueError
    (KeyRefused) with the reason when the data is not an armored or binary OpenPGP public key. It does not look at
    which packets there are: trusted_keyring() does.
    """
    data = _as_bytes(data)
    if data.startswith(b'\xef\xbb\xbf'):  # a UTF-8 byte order mark before the armor
        data = data[3:]
    if not data.strip():
        raise KeyRefused('the key is empty')
    if _is_binary(data):
        return data
    try:
        text = data.decode('ascii')
    except UnicodeDecodeError as exc:
        if ARMOR_BEGIN.encode('ascii') not in data:
            raise KeyRefused('not an OpenPGP public key: neither "%s" nor binary key packets (the URL probably '
                             'points at an error page or another file)' % ARMOR_BEGIN)
        raise KeyRefused('the armored key holds a byte that is not ASCII at byte %d: the file is damaged or is not '
                         'a key file' % exc.start)
    return b''.join(block for _line, block in _armor_blocks(text))


def _frames(packets):
    """Yield (tag, start, body_start, end) for each packet of binary OpenPGP data. Raises KeyRefused on broken
    framing (truncated data, trailing garbage, lengths a key never uses)."""
    packets = bytearray(packets)
    pos, size, number = 0, len(packets), 0
    while pos < size:
        number += 1
        head = packets[pos]
        if not head & 0x80:
            raise KeyRefused('byte %d is not the start of an OpenPGP packet (%s): the data after packet %d is '
                             'garbage; the file is damaged or something was appended to it; %s'
                             % (pos, 'trailing garbage' if number > 1 else 'not key data', number - 1, _EXPORT_HINT))
        if head & 0x40:  # new format
            tag = head & 0x3F
            if pos + 1 >= size:
                raise KeyRefused('truncated packet header at byte %d' % pos)
            first = packets[pos + 1]
            if first < 192:
                length, hdr = first, 2
            elif first < 224:
                if pos + 2 >= size:
                    raise KeyRefused('truncated packet header at byte %d' % pos)
                length, hdr = ((first - 192) << 8) + packets[pos + 2] + 192, 3
            elif first == 255:
                if pos + 6 > size:
                    raise KeyRefused('truncated packet header at byte %d' % pos)
                length, hdr = int.from_bytes(bytes(packets[pos + 2:pos + 6]), 'big'), 6
            else:
                raise KeyRefused('packet %d (tag %s) at byte %d uses partial body lengths, which a key never uses'
                                 % (number, tag_name(tag), pos))
        else:  # old format
            tag = (head >> 2) & 0x0F
            ltype = head & 0x03
            if ltype == 3:
                raise KeyRefused('packet %d (tag %s) at byte %d has an indeterminate length, which a key never uses'
                                 % (number, tag_name(tag), pos))
            nbytes = (1, 2, 4)[ltype]
            if pos + 1 + nbytes > size:
                raise KeyRefused('truncated packet header at byte %d' % pos)
            length, hdr = int.from_bytes(bytes(packets[pos + 1:pos + 1 + nbytes]), 'big'), 1 + nbytes
        end = pos + hdr + length
        if end > size:
            raise KeyRefused('truncated packet %d (tag %s) at byte %d: %d bytes announced, %d left (the download was '
                             'cut short; run again)' % (number, tag_name(tag), pos, length, size - pos - hdr))
        yield tag, pos, pos + hdr, end
        pos = end


def iter_packets(packets):
    """Yield (tag, body) for each packet of binary OpenPGP data. Raises ValueError on broken framing."""
    packets = bytes(packets)
    for tag, _pos, body_start, end in _frames(packets):
        yield tag, packets[body_start:end]


def fingerprint(body):
    """Fingerprint (upper-case hex) of one public-key packet body, per its key version."""
    body = bytes(body)
    version = bytearray(body[:1])[0] if body else 0
    if version == 4:
        return hashlib.sha1(b'\x99' + len(body).to_bytes(2, 'big') + body).hexdigest().upper()
    if version == 5:
        return hashlib.sha256(b'\x9a' + len(body).to_bytes(4, 'big') + body).hexdigest().upper()
    if version == 6:
        return hashlib.sha256(b'\x9b' + len(body).to_bytes(4, 'big') + body).hexdigest().upper()
    raise KeyRefused('unsupported OpenPGP key version %r (only v4, v5 and v6 keys have fingerprints that can be '
                     'checked)' % version)


def primary_fingerprints(packets):
    """Fingerprints of the primary keys (not subkeys) in binary key data, in file order."""
    found = [fingerprint(body) for tag, body in iter_packets(packets) if tag == TAG_PUBLIC_KEY]
    if not found:
        raise KeyRefused('the data holds no OpenPGP public key')
    return found


def normalize_fingerprint(value):
    """'CA8B B472 ...' or '0xca8b...' -> 'CA8BB472...'."""
    value = re.sub(r'\s+', '', str(value)).upper()
    return value[2:] if value.startswith('0X') else value


def trusted_fingerprints(fingerprints):
    """Normalised trusted fingerprints. Raises ValueError for an empty list or a value that is not a fingerprint."""
    trusted = []
    for value in fingerprints or []:
        fpr = normalize_fingerprint(value)
        if not re.match(r'^([0-9A-F]{40}|[0-9A-F]{64})$', fpr):
            raise ValueError('the trusted fingerprint %r is not a fingerprint: give the 40 (v4 key) or 64 (v5/v6 key) '
                             'hex digits `gpg --with-colons --fingerprint` prints on its fpr line; a short or long key '
                             'id is not enough' % str(value))
        if fpr not in trusted:
            trusted.append(fpr)
    if not trusted:
        raise ValueError('no trusted fingerprint given: the fingerprint list is empty; list the fingerprints of the '
                         'keys you trust')
    return trusted


def trusted_keyring(data, fingerprints):
    """Check a downloaded key file and return the binary keyring to write (what `gpg --dearmor` would write).

    data: the file's bytes (or str), armored (any number of PUBLIC KEY BLOCKs, with or without armor headers,
    CRLF line ends, an optional CRC-24 line) or binary. fingerprints: the trusted primary-key fingerprints (any
    spacing, optional 0x).

    The file must hold exactly trusted public keys, each followed only by its own signatures, user ids, user
    attributes and public subkeys. Padding packets (RFC 9580) after a key are dropped; everything else is refused.

    Raises KeyRefused (a ValueError) naming the problem, the packet (number, byte offset in the binary data, tag)
    and the fix: a secret key or secret subkey, a public key whose fingerprint is not trusted ("not in the trusted
    list"), any other packet type (literal, compressed or encrypted data, markers, trust packets...), a subkey,
    signature or user id before any primary key, trailing garbage, a truncated or damaged file, a bad armor CRC.
    Raises ValueError for a fingerprint list that is empty or holds something that is not a fingerprint.
    """
    trusted = trusted_fingerprints(fingerprints)
    packets = dearmor(data)
    kept, found, untrusted = [], [], []
    primary = None
    for number, (tag, start, body_start, end) in enumerate(_frames(packets), 1):
        where = 'packet %d (tag %s) at byte %d' % (number, tag_name(tag), start)
        if tag in (TAG_SECRET_KEY, TAG_SECRET_SUBKEY):
            raise KeyRefused('%s is secret key material: a key file for apt must hold public keys only, and a '
                             'secret key in it can add a signing key that a verifier may accept (someone put their '
                             'own key, or leaked a private key, in the file); %s' % (where, _EXPORT_HINT), found)
        if tag == TAG_PUBLIC_KEY:
            try:
                primary = fingerprint(packets[body_start:end])
            except ValueError as exc:
                raise KeyRefused('%s: %s' % (where, exc), found)
            found.append(primary)
            if primary not in trusted:
                untrusted.append((primary, where))
            kept.append(packets[start:end])
        elif tag in _KEY_PARTS or tag == TAG_PADDING:
            if primary is None:
                raise KeyRefused('%s comes before any primary key: a key file starts with a Public-Key packet, and '
                                 'a subkey, signature or user id that belongs to no key is refused; the file is '
                                 'damaged or was altered; %s' % (where, _EXPORT_HINT), found)
            if tag != TAG_PADDING:
                kept.append(packets[start:end])
        else:
            raise KeyRefused('%s has no place in a key file: it holds only public keys with their subkeys, '
                             'signatures and user ids (this looks like a message, a keyring database or an altered '
                             'file); %s' % (where, _EXPORT_HINT), found)
    if not found:
        raise KeyRefused('the data holds no OpenPGP public key')
    if untrusted:
        raise KeyRefused('the file holds the key %s, which is not in the trusted list (%s). If it is your lab '
                         'mirror\'s own key, add its fingerprint to the trusted list; otherwise the URL is wrong or '
                         'the download was tampered with'
                         % (', '.join('%s (%s)' % (fpr, where) for fpr, where in untrusted), ', '.join(trusted)),
                         found)
    return b''.join(kept)


def _shorten(text, limit):
    return text if len(text) <= limit else text[:limit - 3] + '...'


_SELF_CERTIFICATIONS = (0x10, 0x11, 0x12, 0x13, 0x1F)


def _subpackets(data):
    """(type, body) of each signature subpacket in data (RFC 9580 5.2.3.7); stops at a damaged length."""
    data, pos = bytearray(data), 0
    while pos < len(data):
        first = data[pos]
        if first < 192:
            length, pos = first, pos + 1
        elif first < 255 and pos + 1 < len(data):
            length, pos = ((first - 192) << 8) + data[pos + 1] + 192, pos + 2
        elif first == 255 and pos + 5 <= len(data):
            length, pos = int.from_bytes(bytes(data[pos + 1:pos + 5]), 'big'), pos + 5
        else:
            return
        if length < 1 or pos + length > len(data):
            return
        yield data[pos] & 0x7F, bytes(data[pos + 1:pos + length])
        pos += length


def _self_signature_times(body, key_id):
    """(created, key expiration seconds or None) of a v4/v6 signature whose issuer is key_id (or that names no
    issuer), from its hashed area; None for other signatures (v3, a third party's)."""
    body = bytearray(body)
    if len(body) < 6 or body[0] not in (4, 5, 6) or body[1] not in _SELF_CERTIFICATIONS:
        return None
    wide = body[0] != 4
    hashed_len = int.from_bytes(bytes(body[4:8] if wide else body[4:6]), 'big')
    start = 8 if wide else 6
    created, expires, issuers = None, None, []
    for kind, data in _subpackets(body[start:start + hashed_len]):
        if kind == 2 and len(data) == 4:
            created = int.from_bytes(data, 'big')
        elif kind == 9 and len(data) == 4:
            expires = int.from_bytes(data, 'big')
        elif kind == 33 and len(data) > 1:
            issuers.append(data[1:].hex().upper())
        elif kind == 16 and len(data) == 8:
            issuers.append(data.hex().upper())
    if issuers and not any(issuer.endswith(key_id) or key_id.endswith(issuer) for issuer in issuers):
        return None
    return (created or 0, expires)


def key_expiry(packets):
    """{primary fingerprint: when it expires (seconds since the epoch) or None (never)} of binary key data, from
    each primary key's newest self-certification (its key expiration time). Read only to decide whether to fetch
    the key again (apt reports EXPKEYSIG for an expired one): the signatures are not verified here."""
    result, primary, created, newest = {}, None, 0, None
    for tag, body in iter_packets(packets):
        if tag == TAG_PUBLIC_KEY:
            primary, newest = fingerprint(body), None
            created = int.from_bytes(bytes(body[1:5]), 'big') if len(body) >= 5 else 0
            result[primary] = None
        elif tag == TAG_PUBLIC_SUBKEY:
            primary = None
        elif tag == TAG_SIGNATURE and primary:
            times = _self_signature_times(body, primary[-16:] if len(primary) == 40 else primary)
            if times and (newest is None or times[0] >= newest):
                newest = times[0]
                result[primary] = created + times[1] if times[1] else None
    return result


def expired_keys(packets, now):
    """The primary fingerprints of binary key data whose self-signature says they expired before now."""
    return sorted(fpr for fpr, expires in key_expiry(packets).items() if expires is not None and expires <= now)
