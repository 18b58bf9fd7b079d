"""The public data sets behind the README's two headline results: which files, from where,
with which SHA-256, and a download that resumes, verifies and never half-writes a file.

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
from dataclasses import dataclass

from ..version import __version__
from ..validation import message
from ..errors import InputError
from ..system.files import atomic_write, check_regular_file, file_sha256, read_regular

GITHUB = "https://raw.githubusercontent.com"        # the default --base-url
CHAR_RNN = "karpathy/char-rnn/master/data/tinyshakespeare"
# Pinned to the commit that PROVENANCE names, so that the files (and digests) cannot move.
MULTI30K = "multi30k/dataset/a3d2e0d26b56f3846f66a952536ffed4e401d05a/data/task1"
CHUNK = 1 << 16           # bytes read at a time
TIMEOUT = 60              # seconds a silent server is waited for


class DownloadError(OSError):
    """The server could not be reached, answered with an error, or stopped sending."""


@dataclass(frozen=True)
class RemoteFile:
    """One file of a data set.

    path: where it lands under the --out folder; source: its path under the base URL (a .gz
    is decompressed on arrival); sha256: the digest of the file as saved.
    """

    path: str
    source: str
    sha256: str

    @property
    def gzipped(self):
        return self.source.endswith(".gz")


@dataclass(frozen=True)
class Dataset:
    """A data set: its files, and the commands (given the saved paths) that use them."""

    title: str
    files: tuple
    commands: object      # callable: {path under --out: shell-quoted saved path} -> [lines]


# Digests: tinyshakespeare.txt and the tok/ files as listed in shared/data/PROVENANCE.md; the
# raw files as computed from the gunzipped copies under shared/data/multi30k/ (PROVENANCE
# names their origin but lists no digest for them), so they are checked after decompression.
TOK = {
    "train.lc.norm.tok.de": "cb5a23529b65ec2061f1dc446192a9c37382b63cc75f81a0be59d34894b3a505",
    "train.lc.norm.tok.en": "08925f8e0572bcd5a006702fc5fe20e2d77c6917d4eebd576fc20de6693c2119",
    "val.lc.norm.tok.de": "97232bd273eceb7207f689527386a97e4be2616b18ada47576bdaf96c8ae1f00",
    "val.lc.norm.tok.en": "46573ce391ae227f1c72f873392436a20ef18e0a6d518098cfbd70b77c8572ec",
    "test_2016_flickr.lc.norm.tok.de":
        "c6a33d39d48f9f510de147651316cd9d918e09ad0219df734a2f16b6baccacc4",
    "test_2016_flickr.lc.norm.tok.en":
        "5b7f32627cf99eced828311b955dae9800bb52bc8b91cf8b6526829e605b29d2",
    "test_2017_flickr.lc.norm.tok.de":
        "02067e4a9402786a4fcb8c1b6f4307e4a5073ced64800abead5273b54f5f31f6",
    "test_2017_flickr.lc.norm.tok.en":
        "c9d1dfd7a26add989382e534af235af9f0f658b2a30e7eb0efdaf142496ee54f",
    "test_2017_mscoco.lc.norm.tok.de":
        "e2825990b8a4e5289d2cdba801d57c187810bab9b4f5d87a30c35800a0d871b6",
    "test_2017_mscoco.lc.norm.tok.en":
        "fe69ae004d71c42ead0301e70c57de5b1b6b5fb7f52210d42b22801e98e656f3",
}
RAW = {
    "train.de": "2c2b73fd2b548fbcde3a875e0a78d6ee94d498bfdee6bd3eae3945779e9ddf72",
    "train.en": "460a15fbd157e34a7a9957ee388c1ca247fe47af3ef25fb50442af6c274e0fc6",
    "val.de": "660e09eb7e1da2f856ea13ee5ad3cf6d36b3d5b0b733c857e94c5747a3dfc660",
    "val.en": "1f2a23d992769b5b3d209b0a10dd0b77c08cceb1f20dfb97ed0aafa49d107227",
    "test_2016_flickr.de": "4be6b5b3236b79c25475c6bb829800a7ce559e9ba7a1f6c2394fe4d40be46d16",
    "test_2016_flickr.en": "399a4382932c1aadd3ceb9bef1008d388a64c76d4ae4e9d4728c6f4301cac182",
}


def _shakespeare_commands(p):
    text = p["tinyshakespeare.txt"]
    return [f"python -m numpy_transformer train-lm --text {text} --steps 4000",
            f"python -m numpy_transformer train-lm --text {text} --d-model 128 --num-layers 4 "
            "--num-heads 4 --d-ff 512 --dropout 0.05 --lr 3e-3 --warmup 200 --batch-size 32 "
            "--max-len 128 --steps 6000 --out runs/lm_big",
            'python -m numpy_transformer generate --checkpoint runs/lm/best.npz --prompt "ROMEO:"']


MULTI30K_TESTS = ("test_2016_flickr", "test_2017_flickr", "test_2017_mscoco")
# The paper's recipe (docs/multi30k_recipe.md): BPE over a joint vocabulary, one shared
# embedding matrix, 2000-token batches, 2 MPI ranks (one per core), the last 6 checkpoints kept.
RECIPE = ("--bleu-tokenize none --bpe 8000 --joint-vocab --share-embeddings --d-model 256 "
          "--num-heads 4 --d-ff 1024 --num-layers 3 --dropout 0.15 --schedule noam --lr 1.5e-3 "
          "--warmup 400 --batch-tokens 2000 --steps 3800 --eval-every 950 "
          "--checkpoint-every 200 --keep-last 6")


def multi30k_runs(p):
    """{run folder under runs/: the commands that make it}, for the README's Multi30k results,
    given {path under --out: saved path}."""
    tok = {split: {lang: p[f"multi30k/tok/{split}.lc.norm.tok.{lang}"] for lang in ("de", "en")}
           for split in ("train", "val") + MULTI30K_TESTS}
    test = tok["test_2016_flickr"]

    def evaluate(checkpoint, split, src, tgt, beam, name):
        return (f"python -m numpy_transformer evaluate --checkpoint {checkpoint} "
                f"--src {tok[split][src]} --tgt {tok[split][tgt]} --bleu-tokenize none "
                f"{beam}--json {os.path.dirname(checkpoint)}/{name}.json")

    def recipe(src, tgt, folder):
        data = " ".join(f"--{prefix}src {tok[split][src]} --{prefix}tgt {tok[split][tgt]}"
                        for prefix, split in (("", "train"), ("val-", "val"),
                                              ("test-", "test_2016_flickr")))
        avg = f"runs/{folder}/avg.npz"
        return [f"mpiexec -n 2 python -m numpy_transformer train {data} {RECIPE} "
                f"--out runs/{folder}",
                f"python -m numpy_transformer average runs/{folder}/step-*.npz --out {avg}"] + [
                evaluate(avg, split, src, tgt, beam, f"{split}_{name}")
                for split, beam, name in (("test_2016_flickr", "", "greedy"),) + tuple(
                    (split, "--beam 4 ", "beam4") for split in MULTI30K_TESTS)]

    return {
        "translation": [
            f"python -m numpy_transformer train --src {tok['train']['de']} "
            f"--tgt {tok['train']['en']} --val-src {tok['val']['de']} --val-tgt {tok['val']['en']} "
            f"--test-src {test['de']} --test-tgt {test['en']} --min-freq 2 --d-model 256 "
            "--num-heads 4 --d-ff 1024 --num-layers 3 --dropout 0.1 --schedule noam --lr 1e-3 "
            "--warmup 400 --batch-size 64 --steps 3600"] + [
            evaluate("runs/translation/best.npz", "test_2016_flickr", "de", "en", beam, name)
            for beam, name in (("", "greedy"), ("--beam 4 ", "beam4"))],
        "m30k": recipe("de", "en", "m30k"),
        "m30k_en_de": recipe("en", "de", "m30k_en_de"),
    }


def _multi30k_commands(p):
    return [line for commands in multi30k_runs(p).values() for line in commands]


DATASETS = {
    "shakespeare": Dataset(
        "tiny Shakespeare (karpathy/char-rnn)",
        (RemoteFile("tinyshakespeare.txt", f"{CHAR_RNN}/input.txt",
                    "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"),),
        _shakespeare_commands),
    "multi30k": Dataset(
        "Multi30k task 1, German-English (multi30k/dataset)",
        tuple(RemoteFile(f"multi30k/tok/{name}", f"{MULTI30K}/tok/{name}", digest)
              for name, digest in TOK.items())
        + tuple(RemoteFile(f"multi30k/{name}", f"{MULTI30K}/raw/{name}.gz", digest)
                for name, digest in RAW.items()),
        _multi30k_commands),
}


def read_manifest(path, dataset):
    """{path under --out: sha256} from a mirror's JSON manifest, checked against the table."""
    try:
        table = json.loads(read_regular(path, "--manifest").decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(message("--manifest", "a JSON file", f"{path!r} ({err})")) from None
    known = {f.path for f in DATASETS[dataset].files}
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise InputError(message("--manifest", 'a JSON object {"file": "sha256", ...}',
                                 repr(path)))
    unknown = sorted(set(table) - known)
    if unknown:
        raise InputError(message("--manifest", f"files of {dataset} ({', '.join(sorted(known))})",
                                 f"{unknown[0]!r}"))
    return {name: digest.lower() for name, digest in table.items()}


def fetch(dataset, out, *, base_url=GITHUB, manifest=None, log=print, progress=None):
    """Download (or find) every file of `dataset` under `out`; {path under out: saved path}.

    manifest: {path under out: sha256} replacing the package's digests (for mirrors).
    log(line) reports each file; progress(name, total, done) -> an object with update(n) and
    close() shows a download's progress (None: no progress).
    """
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
                            "a mirror with --base-url") from None


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
                                 f"{url} was deleted (a mirror with other files: see --manifest)"))


def _sha256(f, copy_to=None):
    """Hex SHA-256 of a binary file's remaining bytes, also written to `copy_to` if given."""
    digest = hashlib.sha256()
    while chunk := f.read(CHUNK):
        digest.update(chunk)
        if copy_to is not None:
            copy_to.write(chunk)
    return digest.hexdigest()
