"""A trained run, used from Python: load it once, then translate or generate.

    from numpy_transformer import load_trained
    run = load_trained("runs/reverse")          # the run folder (best.npz) or a .npz
    run.translate("a b c")                       # one text -> one output
    run.translate(["a b c", "d e"], beam=4)      # a list -> a list, batched
    lm = load_trained("runs/lm")
    lm.generate("ROMEO:", 200, temperature=0.8, top_k=10, seed=0)
    for piece in lm.generate("ROMEO:", 10**6, stream=True):   # as each character is drawn
        print(piece, end="", flush=True)

It does what `translate` and `generate` do on the command line, with the same
defaults, on `checkpoint.load_run` (the model, its tokenizers and what the run
recorded: `run.metadata`, e.g. run.metadata["train_config"]). As the commands do, it
warns (`warnings.warn`, once per call, naming them) of input symbols outside the model's
vocabulary: the model reads them as <unk>.
"""

import os
import warnings

from .checkpoint import KINDS, load_run
from .data.tokenizers import unknown_note
from .decoding import generate_text, stream_text
from .errors import InputError, InputTypeError
from .training.metrics import decode_batches
from .validation import message

CHECKPOINTS = ("best.npz", "last.npz")      # in a run folder, the first one found


def find_checkpoint(path):
    """The checkpoint of `path`: a .npz file, or a run folder's best.npz (else last.npz)."""
    if not isinstance(path, (str, os.PathLike)):
        raise InputTypeError(message("path", "a run folder or a .npz checkpoint (a str or a "
                                     "path)", type(path).__name__))
    path = os.fspath(path)
    if not isinstance(path, str):
        raise InputTypeError(message("path", "a str path", type(path).__name__))
    if not os.path.lexists(path):
        raise InputError(message("path", "an existing run folder or .npz checkpoint",
                                 repr(path)))
    if not os.path.isdir(path):
        return path                          # load_checkpoint checks it is a regular file
    for name in CHECKPOINTS:
        if os.path.isfile(os.path.join(path, name)):
            return os.path.join(path, name)
    raise InputError(message("path", "a run folder holding best.npz or last.npz, or a "
                             ".npz checkpoint", f"{path}, a folder without them"))


def load_trained(path):
    """A TrainedRun of the run folder (or checkpoint file) `path`."""
    checkpoint = find_checkpoint(path)
    model, tokenizers, metadata = load_run(checkpoint, option="path")
    if os.path.isdir(path) and os.path.basename(checkpoint) != CHECKPOINTS[0]:
        warnings.warn(f"path: {os.fspath(path)} holds no best.npz (no evaluation saved one); "
                      f"loaded {checkpoint} (step {metadata.get('step')})", stacklevel=2)
    return TrainedRun(model, tokenizers, metadata, checkpoint)


class TrainedRun:
    """A trained model with its tokenizers: `kind` is "seq2seq" (written by `train`:
    use `translate`) or "lm" (written by `train-lm`: use `generate`)."""

    def __init__(self, model, tokenizers, metadata, path=None):
        self.model, self.tokenizers, self.metadata = model, tokenizers, metadata
        self.kind, self.path = metadata["kind"], path
        model.eval()

    def __repr__(self):
        return f"TrainedRun({self.path!r}, kind={self.kind!r})"

    def _need(self, kind, method):
        if self.kind != kind:
            raise InputError(message(method, f"{KINDS[kind]} (this is {KINDS[self.kind]})",
                                     self.path))

    def translate(self, texts, *, beam=1, length_penalty=0.6, max_len=None):
        """The model's output for a text (a str), or for each of a list of texts (a list,
        in order). beam 1: greedy; beam K > 1: beam search ranked with the length penalty
        log P(Y) / ((5 + |Y|) / 6)^length_penalty. max_len None: input length + 10
        (+ 50 with a beam), at most the model's max_len."""
        self._need("seq2seq", "translate")
        one = isinstance(texts, str)
        if not one and (isinstance(texts, (bytes, bytearray)) or not hasattr(texts, "__iter__")):
            raise InputTypeError(message("texts", "a str or a list of str",
                                         type(texts).__name__))
        texts = [texts] if one else list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise InputTypeError(message(f"texts[{i}]", "a str", type(text).__name__))
        src, tgt = self.tokenizers["src"], self.tokenizers["tgt"]
        seqs = [src.encode(text) for text in texts]
        warn_unknown(src, texts, "texts")
        for i, (text, seq) in enumerate(zip(texts, seqs)):
            if not 0 < len(seq) <= self.model.config.max_len:
                raise InputError(message(f"texts[{i}]", f"1 to {self.model.config.max_len} "
                                         f"tokens (the model's max_len)",
                                         f"{len(seq)} tokens in {text!r}"))
        outputs = decode_batches(self.model, seqs, max_len=max_len, beam_size=beam,
                                 length_penalty=length_penalty)
        decoded = [tgt.decode(out) for out in outputs]
        return decoded[0] if one else decoded

    def generate(self, prompt="\n", max_new_tokens=300, *, temperature=0.8, top_k=None,
                 top_p=None, seed=0, stop_at_eos=False, stream=False):
        """The prompt followed by `max_new_tokens` sampled characters (`generate`'s
        defaults: temperature 0.8, every token drawable, seed 0; top_k keeps the K likeliest,
        top_p, 0 < p <= 1, the smallest set of the likeliest holding p of the probability,
        after top_k when both are given). stream=True: an iterator
        of the same text in pieces, each character as it is drawn (its memory does not grow
        with max_new_tokens). A text too long to hold in memory is refused, as the command's
        --max-new-tokens is, with an estimate."""
        self._need("lm", "generate")
        if not isinstance(stream, bool):
            raise InputTypeError(message("stream", "True or False", repr(stream)))
        tok = self.tokenizers["text"]
        settings = dict(temperature=temperature, top_k=top_k, top_p=top_p, seed=seed,
                        stop_at_eos=stop_at_eos)
        if stream:
            pieces = stream_text(self.model, tok, prompt, max_new_tokens, **settings)
        else:
            text = generate_text(self.model, tok, prompt, max_new_tokens, **settings)
        warn_unknown(tok, [prompt], "prompt")
        return pieces if stream else text


def warn_unknown(tokenizer, texts, name):
    """One warning naming the symbols of `texts` (parameter `name`) outside the vocabulary."""
    unknown = tokenizer.unknown_symbols(texts)
    if unknown:
        warnings.warn(f"{name}: {unknown_note(unknown)}", stacklevel=3)
