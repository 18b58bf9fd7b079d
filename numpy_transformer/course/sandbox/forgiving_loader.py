"""A student file that does not compile loses only the solution region holding the error.

Without this, a SyntaxError in one region (say GELU's backward, in activations.py) would
stop the whole file from importing, and with it the package and every part. The worker
loads the student's modules with `RepairingLoader`: a file that does not compile is
compiled again with the body of the region holding the error replaced by

    raise SyntaxError("numpy_transformer/layers/activations.py, line 58: invalid syntax ...")

(blank lines pad it, so line numbers stay), so calling that function fails its part's
checks with the compiler's message, and the rest of the file works. An error outside
every region, or one that replacing regions does not cure, is raised as it was.

Harness code: imports nothing but the standard library (the worker loads it by path).
"""

import importlib.machinery
import importlib.util
import os
import re
import stat

BEGIN = re.compile(r"^(?P<indent>[ \t]*)# BEGIN SOLUTION(?: \w+)?[ \t]*$")
END = re.compile(r"^[ \t]*# END SOLUTION(?: \w+)?[ \t]*$")
MAX_REGIONS = 20          # regions replaced in one file at most


def regions(lines):
    """[(begin, end, indent)]: 0-based line indexes of each region's two marker lines."""
    found, opened = [], None
    for i, line in enumerate(lines):
        begin = BEGIN.match(line)
        if begin:
            opened = (i, begin["indent"])
        elif END.match(line) and opened is not None:
            found.append((opened[0], i, opened[1]))
            opened = None
    return found


def blamed(found, lineno):
    """The region whose body holds 1-based line `lineno`, else the last one opened above it
    (an unclosed bracket or string is reported below the region that opened it)."""
    above = [r for r in found if r[0] < lineno - 1 and r[1] > r[0] + 1]
    inside = [r for r in above if lineno - 1 < r[1]]
    return (inside or above[-1:] or [None])[0]


def repaired(source, path):
    """`source` compiled, with broken regions replaced; SyntaxError when that does not help."""
    lines, done, first = source.split("\n"), set(), None
    for _ in range(MAX_REGIONS + 1):
        try:
            return compile("\n".join(lines), path, "exec", dont_inherit=True)
        except SyntaxError as error:
            first = first or error
            region = blamed(regions(lines), error.lineno or 0)
            if region is None or region in done:
                raise first from None
            done.add(region)
            begin, end, indent = region
            where = os.path.relpath(path) if os.path.isabs(path) else path
            message = f"{where}, line {error.lineno}: {error.msg} (this region did not compile)"
            lines[begin + 1:end] = ([f"{indent}raise SyntaxError({message!r})"]
                                    + [""] * (end - begin - 2))
    raise first


class RepairingLoader(importlib.machinery.SourceFileLoader):
    """SourceFileLoader whose broken files lose their broken regions only (see above), and
    that reads regular files only: a FIFO named like a module fails its import at once
    instead of blocking the worker until its time limit."""

    def get_data(self, path):
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as file:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ImportError(f"{path} is not a regular file (a FIFO or a device?)")
            return file.read()

    def source_to_code(self, data, path, *, _optimize=-1):
        try:
            return super().source_to_code(data, path, _optimize=_optimize)
        except SyntaxError:
            return repaired(importlib.util.decode_source(data), path)
