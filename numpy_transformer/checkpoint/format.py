"""The checkpoint file: one `.npz` file of plain arrays plus a JSON header.

    save_checkpoint("run/last.npz", model, optimizer, step=1200, val_loss=0.31)
    ckpt = load_checkpoint("run/last.npz")
    ckpt.model, ckpt.optimizer_state, ckpt.metadata

Guarantees:
- Nothing is ever unpickled: files are read with `allow_pickle=False`, so a
  checkpoint can't run code; a file holding a pickled object is refused.
- The header stores a SHA-256 of every array (and of itself), so a truncated
  or corrupted file is detected and refused; then every field of the header and
  every array is checked (header.py): a crafted file is refused, naming the field.
- Saving writes a temporary file in the same folder and renames it over the
  old one (an atomic step), so a crash mid-save leaves the previous checkpoint intact.
- Nothing large is read before the zip directory and every array's header have
  been checked (inspect.py): the file must be a regular file, its members stored
  uncompressed (as `np.savez` writes them), each array exactly as large as its
  member, so reading a checkpoint never takes more memory than its size on disk.
"""

import hashlib
import json
import zipfile

import numpy as np

from ..backend import to_numpy
from ..errors import InputError, InputTypeError
from ..system.files import atomic_write, check_regular_file
from ..version import __version__
from .header import FORMAT, VERSION, check_arrays, check_header, parse_header
from .inspect import inspect_archive

_HEADER = "__header__"
_HEADER_DIGEST = "__header_sha256__"


def _digest(array):
    h = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode())
    h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()


def split_state(tree, prefix, arrays):
    """Move the arrays of a nested dict into `arrays`; return the JSON-able rest."""
    if isinstance(tree, dict):
        return {str(k): split_state(v, f"{prefix}/{k}", arrays) for k, v in tree.items()}
    if hasattr(tree, "shape") and hasattr(tree, "dtype"):
        arrays[prefix] = np.array(to_numpy(tree))
        return {"__array__": prefix}
    if isinstance(tree, (np.integer, np.floating)):
        return tree.item()
    if isinstance(tree, tuple):
        return list(tree)
    return tree


def join_state(tree, arrays):
    if isinstance(tree, dict):
        if set(tree) == {"__array__"}:
            if tree["__array__"] not in arrays:
                raise InputError(f"optimizer state: expected the array {tree['__array__']!r}, "
                                 f"got a checkpoint without it")
            return arrays[tree["__array__"]]
        return {k: join_state(v, arrays) for k, v in tree.items()}
    return tree


def save_checkpoint(path, model, optimizer=None, **metadata):
    """Write model weights (and optimizer state, and `metadata`) to `path` atomically."""
    arrays = {f"model/{k}": v for k, v in model.state_dict().items()}
    optim = None if optimizer is None else split_state(optimizer.state_dict(), "optim", arrays)
    header = {"format": FORMAT, "version": VERSION, "written_by": f"numpy_transformer "
              f"{__version__}", "model_class": type(model).__name__,
              "config": model.config.to_dict(), "optimizer": optim, "metadata": metadata,
              "checksums": {k: _digest(v) for k, v in arrays.items()}}
    try:
        text = json.dumps(header, sort_keys=True)
    except TypeError as err:
        raise InputTypeError(f"metadata must be JSON-serialisable: {err}") from err
    header_bytes = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    digest = np.frombuffer(hashlib.sha256(header_bytes).hexdigest().encode(), np.uint8)
    with atomic_write(path, "wb", suffix=".npz") as f:
        np.savez(f, **{_HEADER: header_bytes, _HEADER_DIGEST: digest}, **arrays)
    return path


def read_checkpoint_arrays(path):
    """(header dict, {name: array}) after checking the format and every checksum."""
    check_regular_file(path, "checkpoint")
    with open(path, "rb") as f:
        if f.read(4) != b"PK\x03\x04":                    # every .npz is a zip archive
            raise InputError(f"{path} is not a numpy_transformer checkpoint "
                             "(not an .npz archive)")
    inspect_archive(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except ValueError as err:
        if "allow_pickle" in str(err):
            raise InputError(f"checkpoint {path} holds a pickled object; refusing to load it "
                             "(checkpoints hold plain arrays only)") from err
        raise InputError(f"checkpoint {path} is corrupted or truncated: {err}") from err
    except (zipfile.BadZipFile, OSError, EOFError, KeyError) as err:
        raise InputError(f"checkpoint {path} is corrupted or truncated: {err}") from err
    if _HEADER not in arrays or _HEADER_DIGEST not in arrays:
        raise InputError(f"{path} is not a numpy_transformer checkpoint (no header)")
    header_bytes, digest = arrays.pop(_HEADER), arrays.pop(_HEADER_DIGEST)
    if hashlib.sha256(header_bytes.tobytes()).hexdigest().encode() != digest.tobytes():
        raise InputError(f"checkpoint {path} is corrupted: its header fails its checksum")
    header = parse_header(header_bytes.tobytes(), path)
    checksums = header.get("checksums")
    if not isinstance(checksums, dict) or set(checksums) != set(arrays):
        raise InputError(f"checkpoint {path} is corrupted: its arrays do not match its header")
    for name, array in arrays.items():
        if _digest(array) != checksums[name]:
            raise InputError(f"checkpoint {path} is corrupted: checksum mismatch in {name!r}")
    check_header(header, path)
    check_arrays(arrays, path)
    return header, arrays
