"""Downloading the public data sets of datasets.py: a download that resumes, verifies each
file's SHA-256 and never half-writes a file.

    from numpy_transformer.data.download import fetch
    paths = fetch("shakespeare", "data")     # {'tinyshakespeare.txt': 'data/tinyshakespeare.txt'}

Each file goes first to `NAME.part` (`NAME.gz.part` for a gzipped source). A rerun asks the
server only for the missing bytes (an HTTP Range request) and appends them. A finished download
is checked against its SHA-256 (for a .gz, the digest of the decompressed text) and only then
renamed to its final name; a wrong one is deleted. A file already under its final name is
checked, not downloaded again.

Errors: `DownloadError` (an OSError) when the server cannot be reached, answers with an HTTP
error or closes early; `InputError` for a digest that differs, a damaged .gz or a bad manifest.
"""

import gzip
import hashlib
import http.client
import json
import os
import urllib.error
import urllib.request
import zlib

from ..version import __version__
from ..validation import message
from ..errors import InputError
from ..system.files import (atomic_write, check_regular_file, check_writable_folder,
                            file_sha256, read_regular, refuse_special)
from .datasets import DATASETS, GITHUB

CHUNK = 1 << 16           # bytes read at a time
TIMEOUT = 60              # seconds a silent server is waited for


class DownloadError(OSError):
    """The server could not be reached, answered with an error, or stopped sending."""


def read_manifest(path, dataset):
    """{path under out: sha256} from a mirror's JSON manifest, checked against the table."""
    try:
        table = json.loads(read_regular(path, "manifest").decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(message("manifest", "a JSON file", f"{path!r} ({err})")) from None
    known = {f.path for f in DATASETS[dataset].files}
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise InputError(message("manifest", 'a JSON object {"file": "sha256", ...}',
                                 repr(path)))
    unknown = sorted(set(table) - known)
    if unknown:
        raise InputError(message("manifest", f"files of {dataset} ({', '.join(sorted(known))})",
                                 f"{unknown[0]!r}"))
    return {name: digest.lower() for name, digest in table.items()}


def check_out(dataset, out):
    """InputError naming `out` unless each file of `dataset` not yet under it can be written
    there: checked before any download, so that a file, a dangling symbolic link or a link
    loop given as `out` (or a folder without write permission) costs no download."""
    if not isinstance(out, (str, os.PathLike)) or not str(out).strip():
        raise InputError(message("out", "a folder name", repr(out)))
    for remote in DATASETS[dataset].files:
        final = os.path.join(out, remote.path)
        if not os.path.lexists(final):
            check_writable_folder(os.path.dirname(final), "out", out)


def fetch(dataset, out, *, base_url=GITHUB, manifest=None, log=print, progress=None):
    """Download (or find) every file of `dataset` under `out`; {path under out: saved path}.

    manifest: {path under out: sha256} replacing the package's digests (for mirrors).
    log(line) reports each file; progress(name, total, done) -> an object with update(n) and
    close() shows a download's progress (None: no progress).
    """
    check_out(dataset, out)
    saved = {}
    for remote in DATASETS[dataset].files:
        final = os.path.join(out, remote.path)
        expected = (manifest or {}).get(remote.path, remote.sha256)
        if os.path.lexists(final):
            _check_existing(final, expected)
            log(f"  {final}: already there, sha256 ok")
        else:
            url = f"{base_url.rstrip('/')}/{remote.source}"
            part = final + (".gz" if remote.gzipped else "") + ".part"
            if os.path.lexists(part):             # appended to: a FIFO there would hang
                check_regular_file(part, part)
            resume = f" (resuming after {os.path.getsize(part):,} bytes)" \
                if os.path.exists(part) else ""
            log(f"  {final}: downloading {url}{resume}")
            download(url, part, progress)
            _install(part, final, expected, remote.gzipped, url)
            log(f"  {final}: {os.path.getsize(final):,} bytes, sha256 ok")
        saved[remote.path] = final
    return saved


def download(url, part, progress=None):
    """Fetch `url` into the file `part`, continuing from its bytes if it exists."""
    os.makedirs(os.path.dirname(os.path.abspath(part)), exist_ok=True)
    have = os.path.getsize(part) if os.path.exists(part) else 0
    response = _open(url, have)
    if response is None:              # 416: the .part does not fit this file; start over
        os.remove(part)
        have, response = 0, _open(url, 0)
    if have and _range_start(response) != have:
        if response.status == 206:        # not the range we asked for: ask for the whole file
            response.close()
            response = _open(url, 0)
        have = 0                          # (a 200 answer ignored the Range: the whole file)
    with response:
        length = response.headers.get("Content-Length")
        total = have + int(length) if length and length.isdigit() else None
        bar = progress(os.path.basename(part).removesuffix(".part"), total, have) if progress \
            else None
        got = _copy(response, part, have, bar, url)
    if total is not None and got < total:
        raise DownloadError(f"{url}: the connection closed after {got:,} of {total:,} bytes; "
                            f"run the command again to resume from {part}")


def _open(url, have):
    """The server's response from byte `have` on; None when it refuses that range (416)."""
    headers = {"User-Agent": f"numpy_transformer/{__version__}"}
    if have:
        headers["Range"] = f"bytes={have}-"
    try:
        return urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                      timeout=TIMEOUT)
    except urllib.error.HTTPError as err:
        if err.code == 416 and have:
            return None
        raise DownloadError(f"{url}: HTTP {err.code} {err.reason}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as err:
        reason = getattr(err, "reason", None) or err
        raise DownloadError(f"cannot download {url}: {reason}; check the connection, or give "
                            "a mirror as `base_url`") from None


def _range_start(response):
    """The first byte a 206 answer holds ('Content-Range: bytes START-END/TOTAL'), else 0."""
    if response.status != 206:
        return 0
    value = response.headers.get("Content-Range", "")
    first = value.removeprefix("bytes ").split("-")[0]
    return int(first) if first.isdigit() else -1


def _copy(response, part, have, bar, url):
    """Append (or, from byte 0, write) the response's body to `part`; the bytes it then holds."""
    got = have
    try:
        with open(part, "ab" if have else "wb") as f:
            while chunk := _read(response, got, part, url):
                f.write(chunk)
                got += len(chunk)
                if bar:
                    bar.update(len(chunk))
            f.flush()
            os.fsync(f.fileno())
    finally:
        if bar:
            bar.close()
    return got


def _read(response, got, part, url):
    """The next chunk of the body (b'' at its end); a network error becomes a DownloadError."""
    try:
        return response.read(CHUNK)
    except (OSError, http.client.HTTPException) as err:
        raise DownloadError(f"{url}: the download stopped after {got:,} bytes ({err}); run "
                            f"the command again to resume from {part}") from None


def _install(part, final, expected, gzipped, url):
    """Check the finished download and give it its final name; delete it if it is wrong."""
    try:
        if gzipped:          # the digest is of the text, so decompress into a temporary file
            with atomic_write(final) as out, gzip.open(part, "rb") as f:
                _verify(final, expected, _sha256(f, out), url)
            os.remove(part)
        else:
            with open(part, "rb") as f:
                _verify(final, expected, _sha256(f), url)
            refuse_special(final)                     # never renamed over a FIFO or a link
            os.replace(part, final)
    except (gzip.BadGzipFile, EOFError, zlib.error) as err:
        os.remove(part)
        raise InputError(message(final, f"a gzip file from {url}",
                                 f"a damaged one ({err}); the download was deleted")) from None
    except InputError:
        os.remove(part)
        raise


def _check_existing(final, expected):
    actual = file_sha256(final, final)
    if actual != expected:
        raise InputError(message(final, f"sha256 {expected}", f"{actual}; it is not the file "
                                 "this command downloads: move it away and run again"))


def _verify(final, expected, actual, url):
    if actual != expected:
        raise InputError(message(final, f"sha256 {expected}", f"{actual}; the download from "
                                 f"{url} was deleted (a mirror with other files: see `manifest`)"))


def _sha256(f, copy_to=None):
    """Hex SHA-256 of a binary file's remaining bytes, also written to `copy_to` if given."""
    digest = hashlib.sha256()
    while chunk := f.read(CHUNK):
        digest.update(chunk)
        if copy_to is not None:
            copy_to.write(chunk)
    return digest.hexdigest()
