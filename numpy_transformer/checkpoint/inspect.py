"""Looking at a checkpoint's zip directory and array headers before reading any data.

A crafted `.npz` can claim a member of terabytes, or hold a small compressed
member that inflates to gigabytes (a zip bomb), or an array header whose shape
asks NumPy to allocate far more than the file holds. `inspect_archive` reads
only the zip directory and the few bytes of each array's header, and refuses
the file unless every member is stored uncompressed (as `np.savez` writes it)
and holds exactly the bytes its array header announces. After that, loading
the arrays takes no more memory than the file's size on disk.
"""

import os
import zipfile

import numpy as np

from ..errors import InputError

MAX_HEADER_BYTES = 64 * 2**20       # the JSON header: configuration, optimizer state, metadata


def _array_header(archive, info):
    """(shape, dtype, offset of the data) of one .npy member, reading only its header."""
    with archive.open(info) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, _, dtype = np.lib.format.read_array_header_2_0(f)
        return shape, dtype, f.tell()


def inspect_archive(path):
    """InputError unless the zip at `path` is a plain archive of .npy arrays of honest sizes."""
    size = os.path.getsize(path)
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            total = 0
            for info in infos:
                where = f"checkpoint {path}: member {info.filename!r}"
                if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size:
                    raise InputError(f"{where}: expected an uncompressed member (as "
                                     f"save_checkpoint writes), got a compressed one")
                total += info.file_size
                if total > size:
                    raise InputError(f"{where}: expected members that fit in the file's "
                                     f"{size} bytes, got a directory claiming {total} bytes")
                shape, dtype, offset = _array_header(archive, info)
                if dtype.hasobject:
                    raise InputError(f"{where} holds a pickled object; refusing to load it "
                                     f"(checkpoints hold plain arrays only)")
                nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
                if nbytes != info.file_size - offset:
                    raise InputError(f"{where}: expected an array of {info.file_size - offset} "
                                     f"bytes (the member's size), got a header claiming shape "
                                     f"{shape} ({nbytes} bytes)")
                if info.filename == "__header__.npy" and nbytes > MAX_HEADER_BYTES:
                    raise InputError(f"{where}: expected a header of at most "
                                     f"{MAX_HEADER_BYTES} bytes, got {nbytes}")
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as err:
        raise InputError(f"checkpoint {path} is corrupted or truncated: {err}") from None
    except ValueError as err:
        if isinstance(err, InputError):
            raise
        raise InputError(f"checkpoint {path} has a corrupted array header: {err}") from None
