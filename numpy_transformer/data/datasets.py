"""The public data sets behind the README's two headline results: which files, from where,
with which SHA-256 (download.py fetches and checks them; tools/recipes.py holds the
commands that use them).

    DATASETS["shakespeare"].files[0]     # RemoteFile('tinyshakespeare.txt', ..., sha256)
"""

from dataclasses import dataclass

GITHUB = "https://raw.githubusercontent.com"        # the default base URL
CHAR_RNN = "karpathy/char-rnn/master/data/tinyshakespeare"
# Pinned to the commit that PROVENANCE names, so that the files (and digests) cannot move.
MULTI30K = "multi30k/dataset/a3d2e0d26b56f3846f66a952536ffed4e401d05a/data/task1"
MULTI30K_TESTS = ("test_2016_flickr", "test_2017_flickr", "test_2017_mscoco")


@dataclass(frozen=True)
class RemoteFile:
    """One file of a data set.

    path: where it lands under the output folder; source: its path under the base URL (a .gz
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
    """A data set: its title and its files."""

    title: str
    files: tuple


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


DATASETS = {
    "shakespeare": Dataset(
        "tiny Shakespeare (karpathy/char-rnn)",
        (RemoteFile("tinyshakespeare.txt", f"{CHAR_RNN}/input.txt",
                    "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"),)),
    "multi30k": Dataset(
        "Multi30k task 1, German-English (multi30k/dataset)",
        tuple(RemoteFile(f"multi30k/tok/{name}", f"{MULTI30K}/tok/{name}", digest)
              for name, digest in TOK.items())
        + tuple(RemoteFile(f"multi30k/{name}", f"{MULTI30K}/raw/{name}.gz", digest)
                for name, digest in RAW.items())),
}
