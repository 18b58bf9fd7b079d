"""How much memory a model, a training run or a beam search needs, checked before allocating.

A model whose weights cannot fit (say d_model=100000, or a crafted checkpoint
whose configuration claims ten million layers) should be refused with an
estimate, not end in a MemoryError half-way through building it:

    check_fits(training_bytes(config, batch_size=64, seq_len=32), "the model",
               "choose a smaller d_model, d_ff or num_layers")

The estimates are lower bounds built from the big matrices only (embeddings,
attention's W_q and W_o, the feed-forward pair), so they never refuse a model
that would fit: `matrix_parameters(config) <= model.num_parameters()`.
"""

import os

from ..errors import InputError


def matrix_parameters(config):
    """A lower bound on the parameter count of a Transformer or GPT configuration."""
    D, F = int(config.d_model), int(config.d_ff)
    block = 2 * D * F + 2 * D * D                           # feed-forward + W_q, W_o
    if hasattr(config, "vocab_size"):                       # GPTConfig
        return int(config.vocab_size) * D + int(config.num_layers) * block
    embeddings = (int(config.src_vocab_size) + int(config.tgt_vocab_size)) * D
    if getattr(config, "share_embeddings", False):          # one matrix for both
        embeddings = int(config.src_vocab_size) * D
    return embeddings + int(config.num_encoder_layers) * block \
        + int(config.num_decoder_layers) * (block + 2 * D * D)   # + cross-attention


def model_bytes(config, itemsize=4):
    """Weights and their gradients, plus the positional tables (max_len x D each)."""
    tables = 1 if hasattr(config, "vocab_size") else 2
    return itemsize * (2 * matrix_parameters(config)
                       + tables * int(config.max_len) * int(config.d_model))


def training_bytes(config, batch_size, seq_len, itemsize=4):
    """Weights, gradients, Adam's two moments, and the activations of one batch."""
    layers = int(getattr(config, "num_layers", 0)) or \
        int(config.num_encoder_layers) + int(config.num_decoder_layers)
    vocab = int(getattr(config, "vocab_size", 0)) or int(config.tgt_vocab_size)
    tokens = int(batch_size) * int(seq_len)
    activations = tokens * (layers * (8 * int(config.d_model) + 2 * int(config.d_ff))
                            + 3 * vocab)
    return model_bytes(config, itemsize) + itemsize * (2 * matrix_parameters(config)
                                                       + activations)


def available_memory():
    """Bytes of memory available now (Linux: MemAvailable), else the machine's total, else None;
    less where this process runs under a limit: `ulimit -v` (the address space left) or its
    cgroup's memory.max (what the group has not used)."""
    machine = _meminfo_kib("/proc/meminfo", "MemAvailable")
    if machine is None:
        try:
            machine = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            machine = None
    limits = [n for n in (machine, _address_space_left(), _cgroup_left()) if n is not None]
    return max(min(limits), 0) if limits else None


def _meminfo_kib(path, field):
    """Bytes of a "Field: N kB" line of a /proc file, or None."""
    try:
        with open(path, encoding="ascii") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _address_space_left():
    """RLIMIT_AS (`ulimit -v`) less the address space already mapped, or None (no limit)."""
    try:
        import resource
        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError, AttributeError):
        return None
    if soft == resource.RLIM_INFINITY:
        return None
    return soft - (_meminfo_kib("/proc/self/status", "VmSize") or 0)


def _cgroup_left():
    """A cgroup v2 memory.max less its memory.current, or None (no limit, or not Linux)."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as f:
            path = next(line.strip()[3:] for line in f if line.startswith("0::"))
        folder = os.path.join("/sys/fs/cgroup", path.lstrip("/"))
        with open(os.path.join(folder, "memory.max"), encoding="ascii") as f:
            limit = f.read().strip()
        with open(os.path.join(folder, "memory.current"), encoding="ascii") as f:
            current = int(f.read().strip())
    except (OSError, ValueError, StopIteration):
        return None
    return None if limit == "max" else int(limit) - current


def format_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} PiB"


def check_fits(nbytes, what, hint):
    """InputError when `nbytes` is more than the memory available now."""
    available = available_memory()
    if available is not None and nbytes > available:
        raise InputError(f"{what}: expected something that fits in memory, got an estimate of "
                         f"{format_bytes(nbytes)} (available: {format_bytes(available)}); {hint}")
