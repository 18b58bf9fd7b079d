"""`data`: download the public data sets of the README's headline results, checked.

    python -m numpy_transformer data shakespeare --out data   # data/tinyshakespeare.txt
    python -m numpy_transformer data multi30k --out data      # data/multi30k/{tok/,}...

It resumes a partial download (rerun the same command), checks every file's SHA-256, leaves
files already there alone, and ends with the commands that reproduce the README's results.
"""

import os
import shlex
import urllib.parse

from ..errors import InputError
from ..validation import message
from ..data.download import DATASETS, GITHUB, check_out, fetch, read_manifest
from ..training.progress import progress_bar
from .options import add_common, raw_formatter

def add_parsers(commands):
    listing = "\n".join(f"  {name}, {d.title}:\n" + "\n".join(f"    {f.path}" for f in d.files)
                        for name, d in DATASETS.items())
    p = commands.add_parser(
        "data", help="download tiny Shakespeare or Multi30k, checked, for the README's results",
        description="Download a public data set into OUT, check every file's SHA-256, and "
        "print the commands that reproduce the README's result with it. Rerun the same "
        "command to resume an interrupted download; files already there are not fetched again.",
        epilog=f"files (under OUT):\n{listing}", formatter_class=raw_formatter())
    p.add_argument("dataset", choices=tuple(DATASETS), help="which data set")
    p.add_argument("--out", default="data", help="folder for the files (default data/)")
    p.add_argument("--base-url", "--mirror", default=GITHUB, metavar="URL",
                   help=f"where the files are (default {GITHUB}); a mirror keeps the same "
                   "paths below it")
    p.add_argument("--manifest", metavar="FILE", help="for mirrors serving other files: a "
                   'JSON object {"path under OUT": "sha256", ...} replacing the built-in '
                   "digests of the files it names")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_common(p, threads=False)              # downloads: no BLAS
    p.set_defaults(run=run_data)


def check_base_url(base_url):
    """InputError naming --base-url unless it is an http:// or https:// address with a host
    (urllib would fail on it only once the download starts)."""
    try:
        parts = urllib.parse.urlsplit(base_url)
    except ValueError:                            # e.g. an unclosed [IPv6 address
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise InputError(message("--base-url", "an http:// or https:// address with a host "
                                 "(a mirror keeping the same paths)", repr(base_url)[:200]))


def run_data(args):
    check_base_url(args.base_url)
    check_out(args.dataset, args.out)            # before any download: a file, a bad link
    dataset = DATASETS[args.dataset]
    manifest = read_manifest(args.manifest, args.dataset) if args.manifest else None
    count = len(dataset.files)
    print(f"{dataset.title} into {os.path.join(args.out, '')} ({count} file"
          f"{'s' if count > 1 else ''})")
    saved = fetch(args.dataset, args.out, base_url=args.base_url, manifest=manifest,
                  progress=None if args.no_progress else progress)
    from ..tools.recipes import printed_commands, run_times   # README bookkeeping: here
    print(f"\nReproduce {run_times(args.dataset)}:")
    for line in printed_commands(args.dataset, {k: shlex.quote(v) for k, v in saved.items()}):
        print(f"  {line}")
    return 0


def progress(name, total, done):
    """A tqdm byte bar on a terminal (or in Jupyter), else a line at each quarter of a file."""
    bar = progress_bar(total, done, desc=name, unit="B", unit_scale=True, unit_divisor=1024)
    return bar if bar is not None else QuarterLines(name, total, done)


class QuarterLines:
    """Plain progress: 'NAME: 50% (560,000 of 1,115,394 bytes)' as each quarter is reached
    (for files of 512 KiB or more: the others take a blink)."""

    def __init__(self, name, total, done):
        self.name, self.done = name, done
        self.total = total if total and total >= 512 * 1024 else None
        self.quarter = 4 * done // self.total if self.total else 0

    def update(self, n):
        self.done += n
        if self.total and 4 * self.done // self.total > self.quarter:
            self.quarter = 4 * self.done // self.total
            print(f"  {self.name}: {25 * self.quarter}% ({self.done:,} of {self.total:,} "
                  "bytes)", flush=True)

    def close(self):
        pass
