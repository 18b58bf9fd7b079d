"""What the benchmark scripts share: the configurations, a batch, one training step of
ours and of the PyTorch reference (with phase timers), memory readings, the parity check.

Training setup (both sides): cross-entropy with label smoothing 0.1 and the padding id
ignored, Adam(lr=5e-4, betas=(0.9, 0.98), eps=1e-9) as in the paper, dropout 0 (so
both compute the very same function).
"""

import gc
import resource
import time
from dataclasses import dataclass

import numpy as np

# name: (d_model, heads, d_ff, encoder layers, decoder layers, batch, length, vocab)
CONFIGS = {
    "tiny": (64, 4, 256, 2, 2, 32, 16, 100),
    "small": (256, 8, 1024, 2, 2, 32, 32, 1000),
    "base": (512, 8, 2048, 6, 6, 16, 32, 8000),
}
PAD, BOS, EOS = 0, 1, 2
LABEL_SMOOTHING = 0.1
ADAM = dict(lr=5e-4, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.0)


@dataclass
class Setup:
    """One benchmark case: a model configuration and its batch shape."""

    name: str
    dtype: str = "float32"
    norm_first: bool = False
    attention: str = "mha"

    @property
    def sizes(self):
        return CONFIGS[self.name]

    @property
    def batch_size(self):
        return self.sizes[5]

    @property
    def length(self):
        return self.sizes[6]                   # source and target length (S = T)

    @property
    def tokens_per_step(self):
        return 2 * self.batch_size * self.length   # source + target tokens

    def config_fields(self):
        """The model's TransformerConfig fields, as a plain dict."""
        D, H, F, ne, nd, _, T, V = self.sizes
        return dict(src_vocab_size=V, tgt_vocab_size=V, d_model=D, num_heads=H, d_ff=F,
                    num_encoder_layers=ne, num_decoder_layers=nd, dropout=0.0,
                    max_len=max(64, 2 * T), norm_first=self.norm_first,
                    attention=self.attention, latent_dim=None, tie_embeddings=False,
                    pad_id=PAD, seed=0)

    def model_config(self):
        from numpy_transformer.models import TransformerConfig
        return TransformerConfig(**self.config_fields())

    def torch_model_config(self):
        """The same fields as a plain namespace, for the PyTorch reference.

        The PyTorch worker must not import numpy_transformer: importing it raises the C
        allocator's thresholds (`backend.keep_freed_memory`), which would speed PyTorch
        up too. Each worker runs its own library and nothing else.
        """
        from types import SimpleNamespace
        return SimpleNamespace(**self.config_fields())

    def label(self):
        norm = "pre-norm" if self.norm_first else "post-norm"
        return f"{self.name} {self.dtype} {norm} {self.attention}"


def make_batch(setup, seed=0):
    """(src (B, S), tgt_in (B, T), tgt_out (B, T)) int64 ids with padding at the ends.

    Lengths are drawn in [length/2, length]; ids avoid PAD/BOS/EOS. tgt_in starts
    with BOS, so no attention row is fully masked.
    """
    rng = np.random.default_rng(seed)
    B, T, V = setup.batch_size, setup.length, setup.sizes[7]
    src = rng.integers(3, V, (B, T))
    tgt = rng.integers(3, V, (B, T + 1))
    tgt[:, 0] = BOS
    for b in range(B):
        src[b, rng.integers(T // 2, T + 1):] = PAD
        n = rng.integers(T // 2, T + 1)                   # tokens after BOS, EOS included
        tgt[b, n] = EOS
        tgt[b, n + 1:] = PAD
    return src, tgt[:, :-1].copy(), tgt[:, 1:].copy()


def _status_mb(field):
    """A memory field of /proc/self/status (VmRSS, VmHWM, ...) in MiB, or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def rss_mb():
    """Current resident memory of this process, in MiB."""
    value = _status_mb("VmRSS")
    return value if value is not None else float("nan")


def peak_rss_mb():
    """Peak resident memory of this process so far, in MiB.

    VmHWM (the high-water mark of this process's own address space) where /proc has it:
    Linux carries `getrusage().ru_maxrss` over fork and exec, so a worker started from a
    big parent would report the parent's peak. Elsewhere, ru_maxrss (KiB on Linux).
    """
    value = _status_mb("VmHWM")
    if value is None:
        value = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return value


class TimedStep:
    """What both trainers share: `step()` runs `forward_backward()` (loss, seconds of the
    forward and of the backward), then the optimizer's update, timed."""

    def update(self):
        self.optimizer.step()
        self.optimizer.zero_grad()

    def step(self):
        loss, t_fwd, t_bwd = self.forward_backward()
        t0 = time.perf_counter()
        self.update()
        return loss, {"forward": t_fwd, "backward": t_bwd, "optimizer": time.perf_counter() - t0}


class NumpyTrainer(TimedStep):
    """Our model, loss and Adam; `step()` returns (loss, seconds per phase)."""

    library = "numpy_transformer"

    def __init__(self, setup, state=None, fast=True):
        """fast: Adam's `fast` argument (True, as the Trainer builds it; the GPU timing's
        old path passes "per-array", benchmarks/gpu_timing.py)."""
        from numpy_transformer.backend import on_device, set_default_dtype
        from numpy_transformer.losses import CrossEntropyLoss
        from numpy_transformer.models import build_transformer
        from numpy_transformer.optim import Adam
        set_default_dtype(setup.dtype)
        self.model = build_transformer(setup.model_config())
        if state is not None:
            self.model.load_state_dict(state)
        self.loss_fn = CrossEntropyLoss(ignore_index=PAD, label_smoothing=LABEL_SMOOTHING)
        self.optimizer = Adam(self.model, **ADAM, fast=fast)     # as the Trainer builds it
        # On the active device once, as the data pipeline would (NumPy: the same arrays).
        self.src, self.tgt_in, self.tgt_out = (on_device(a) for a in make_batch(setup))

    def forward_backward(self):
        t0 = time.perf_counter()
        logits = self.model.forward(self.src, self.tgt_in)
        # A Python float (on a device: copied back, a sync), as TorchTrainer's loss.item().
        loss = float(self.loss_fn.forward(logits, self.tgt_out))
        t1 = time.perf_counter()
        self.model.backward(self.loss_fn.backward())
        t2 = time.perf_counter()
        return loss, t1 - t0, t2 - t1


    def grads(self):
        """{dotted name: NumPy copy of the gradient} (copied to the host on a device)."""
        from numpy_transformer.backend import to_numpy
        return {name: to_numpy(g.copy()) for name, _, g in self.model.named_parameters()}



class TorchTrainer(TimedStep):
    """The PyTorch reference with the same weights, loss and Adam."""

    library = "pytorch"

    def __init__(self, setup, state, attention_impl="plain", adam_kwargs=None):
        import torch

        from .torch_reference import TorchTransformer, make_adam
        self.torch = torch
        self.model = TorchTransformer(setup.torch_model_config(), state,
                                      getattr(torch, setup.dtype), attention_impl)
        self.optimizer = make_adam(self.model, **ADAM, **(adam_kwargs or {}))
        src, tgt_in, tgt_out = make_batch(setup)
        self.src, self.tgt_in, self.tgt_out = (torch.from_numpy(a) for a in (src, tgt_in, tgt_out))

    def logits(self):
        """The reference model's logits (B, T, V) for the batch."""
        return self.model.forward(self.src, self.tgt_in)

    def forward_backward(self):
        from .torch_reference import cross_entropy
        t0 = time.perf_counter()
        logits = self.logits()
        loss = cross_entropy(logits, self.tgt_out, PAD, LABEL_SMOOTHING)
        value = loss.item()
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        return value, t1 - t0, t2 - t1


    def grads(self):
        return self.model.grads()



def relative_error(a, b, floor=0.0):
    """||a - b|| / max(||b||, floor) (0 when both are 0)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    den = max(float(np.linalg.norm(b)), floor)
    num = float(np.linalg.norm(a - b))
    return num / den if den else num


TOLERANCES = {  # (loss, step-2 loss, gradients) relative errors a correct pair stays under
    "float32": (1e-4, 1e-4, 1e-2),
    "float64": (1e-10, 1e-10, 1e-7),
}


def check_against_torch(setup, torch_kwargs=None, torch_trainer=None):
    """Build ours and the torch reference from the same weights; run two steps on each.

    torch_trainer: the reference's class (default TorchTrainer, on the CPU); called as
    torch_trainer(setup, state, **torch_kwargs). Ours runs on the active backend; its
    losses and gradients are brought to the host for the comparison.

    Returns a dict: the first-step losses and their relative difference, the same for
    the second step (after one Adam update), the largest per-parameter relative
    gradient error of step 1 and its parameter, and `ok` against TOLERANCES.
    """
    ours = NumpyTrainer(setup)
    theirs = (torch_trainer or TorchTrainer)(setup, ours.model.state_dict(),
                                             **(torch_kwargs or {}))
    loss_a, _, _ = ours.forward_backward()
    loss_b, _, _ = theirs.forward_backward()
    ga, gb = ours.grads(), theirs.grads()
    # Some gradients are exactly 0 in exact arithmetic (the key bias: softmax ignores a
    # constant added to a row), so both sides hold round-off there; relative to a floor
    # of 1e-4 x the largest gradient norm, such noise counts as what it is: tiny.
    floor = 1e-4 * max(float(np.linalg.norm(g)) for g in gb.values())
    errors = {name: relative_error(ga[name], gb[name], floor) for name in ga}
    worst = max(errors, key=errors.get)
    ours.update()
    theirs.update()
    loss2_a, _, _ = ours.forward_backward()
    loss2_b, _, _ = theirs.forward_backward()
    tol_loss, tol_loss2, tol_grad = TOLERANCES[setup.dtype]
    result = {
        "loss": loss_a, "torch_loss": loss_b, "loss_rel_diff": abs(loss_a - loss_b) / abs(loss_b),
        "loss2": loss2_a, "torch_loss2": loss2_b,
        "loss2_rel_diff": abs(loss2_a - loss2_b) / abs(loss2_b),
        "grad_max_rel_err": errors[worst], "grad_worst_param": worst,
        "num_params_compared": len(errors),
    }
    result["ok"] = bool(result["loss_rel_diff"] < tol_loss and result["loss2_rel_diff"] < tol_loss2
                        and result["grad_max_rel_err"] < tol_grad and set(ga) == set(gb))
    del ours, theirs
    gc.collect()
    return result
