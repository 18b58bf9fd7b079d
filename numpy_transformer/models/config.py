"""The model configurations, TransformerConfig and GPTConfig, each checked field by field,
and BlockConfig, the settings of one block, which both hand to their blocks and stacks.

A configuration is validated once, when it is made (`__post_init__`), so a bad
value is refused where it is written, with a message naming the field, what it
must be and what it is, instead of failing later deep inside a layer:

    TransformerConfig(10, 10, pad_id=99)
    InputError: pad_id: expected a token id in [0, 10) (the smaller vocabulary), got 99

The blocks and stacks (encoder.py, decoder.py) are built from a BlockConfig
(`config.block_config()`, as the Annotated Transformer's `make_model` builds its
layers from one set of settings): they check nothing themselves.
"""

import numbers
from dataclasses import asdict, dataclass

from ..validation import (check_bool, check_choice, check_integer, check_unit_interval,
                          message)
from ..errors import InputError, InputTypeError

ATTENTION_KINDS = ("mha", "mla")


def check_int_in(value, name, low, high, what="an integer"):
    """value must be an int (not a bool) with low <= value < high (high None: no upper bound)."""
    expected = f"{what} in [{low}, {high})" if high is not None else f"{what} >= {low}"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputTypeError(message(name, expected, repr(value)))
    if value < low or (high is not None and value >= high):
        raise InputError(message(name, expected, value))


def validate_config(config, positive_ints, vocab_sizes):
    """Check every field of a model configuration (called from `__post_init__`); the
    block's fields by making its BlockConfig.

    positive_ints: the names of the size fields outside the block; vocab_sizes: the
    vocabularies that pad_id must be a token of.
    """
    for name in positive_ints:
        check_integer(getattr(config, name), name)
    config.block_config()
    check_bool(config.tie_embeddings, "tie_embeddings")
    smallest = min(getattr(config, name) for name in vocab_sizes)
    check_int_in(config.pad_id, "pad_id", 0, smallest,
                 "a token id" + (" (of every vocabulary)" if len(vocab_sizes) > 1 else ""))
    check_int_in(config.seed, "seed", 0, None)


@dataclass
class BlockConfig:
    """The settings of one encoder or decoder block: what its sublayers are built from."""
    d_model: int = 512               # D, width of every token vector
    num_heads: int = 8               # H; D must be divisible by H
    d_ff: int = 2048                 # F, hidden width of the feed-forward layer
    dropout: float = 0.0             # on sublayer outputs (the layers' default); by default also:
    attention_dropout: float = None  # on attention weights (None: dropout)
    activation_dropout: float = None  # on the feed-forward hidden layer (None: dropout)
    norm_first: bool = False         # False: post-norm as in the paper; True: pre-norm
    attention: str = "mha"           # "mha" multi-head, "mla" multi-head latent attention
    latent_dim: int = None           # L for MLA, 1..D (default D // 4); unused for MHA

    def __post_init__(self):
        for name in ("d_model", "num_heads", "d_ff"):
            check_integer(getattr(self, name), name)
        D, H = self.d_model, self.num_heads
        if D % H:
            raise InputError(message("d_model", f"a multiple of num_heads={H}",
                                     f"d_model={D}, which is not divisible by {H}"))
        check_unit_interval(self.dropout, "dropout")
        for name in ("attention_dropout", "activation_dropout"):
            if getattr(self, name) is not None:
                check_unit_interval(getattr(self, name), name)
        check_bool(self.norm_first, "norm_first")
        check_choice(self.attention, "attention", ATTENTION_KINDS)
        if self.latent_dim is not None:
            check_int_in(self.latent_dim, "latent_dim", 1, D + 1,
                         f"None or an integer (the latent size L <= d_model={D})")

    @property
    def attention_p(self):
        """p on the attention weights: attention_dropout, or dropout when None (the paper's
        one rate everywhere; fairseq's default is 0)."""
        return self.dropout if self.attention_dropout is None else self.attention_dropout

    @property
    def activation_p(self):
        """p on the feed-forward hidden layer: activation_dropout, or dropout when None."""
        return self.dropout if self.activation_dropout is None else self.activation_dropout


def block_config(config):
    """The BlockConfig of a TransformerConfig or GPTConfig: its block fields, checked."""
    return BlockConfig(config.d_model, config.num_heads, config.d_ff, config.dropout,
                       config.attention_dropout, config.activation_dropout, config.norm_first,
                       config.attention, config.latent_dim)


@dataclass
class TransformerConfig:
    src_vocab_size: int              # V_src, source vocabulary size (with special tokens)
    tgt_vocab_size: int              # V_tgt, target vocabulary size
    d_model: int = 512               # D, width of every token vector
    num_heads: int = 8               # H; D must be divisible by H
    d_ff: int = 2048                 # F, hidden width of the feed-forward layers
    num_encoder_layers: int = 6      # N encoder blocks
    num_decoder_layers: int = 6      # N decoder blocks
    dropout: float = 0.1             # on sublayer outputs and embeddings; by default also:
    attention_dropout: float = None  # on attention weights (None: dropout)
    activation_dropout: float = None  # on the feed-forward hidden layer (None: dropout)
    max_len: int = 5000              # longest sequence the positional table covers
    norm_first: bool = False         # False: post-norm as in the paper; True: pre-norm
    attention: str = "mha"           # "mha" multi-head, "mla" multi-head latent attention
    latent_dim: int = None           # L for MLA, 1..D (default D // 4); unused for MHA
    tie_embeddings: bool = False     # share the target embedding with the output projection
    share_embeddings: bool = False   # also share it with the source embedding: one matrix for
                                     # all three (needs tie_embeddings and one joint vocabulary)
    pad_id: int = 0                  # padding token id (masked out of attention)
    seed: int = 0                    # seed of the generator that draws the initial weights

    def __post_init__(self):
        validate_config(self, ("src_vocab_size", "tgt_vocab_size", "num_encoder_layers",
                               "num_decoder_layers", "max_len"),
                        ("src_vocab_size", "tgt_vocab_size"))
        check_bool(self.share_embeddings, "share_embeddings")
        if self.share_embeddings and not self.tie_embeddings:
            raise InputError(message("share_embeddings", "False when tie_embeddings is False "
                                     "(sharing all three matrices includes the output "
                                     "projection)", "True"))
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise InputError(message("share_embeddings", "one joint vocabulary (src_vocab_size "
                                     "== tgt_vocab_size)", f"True with src_vocab_size="
                                     f"{self.src_vocab_size}, tgt_vocab_size="
                                     f"{self.tgt_vocab_size}"))

    block_config = block_config      # the settings of its blocks (BlockConfig)

    def to_dict(self):
        return asdict(self)


@dataclass
class GPTConfig:
    vocab_size: int                  # V, vocabulary size (with special tokens)
    d_model: int = 256               # D, width of every token vector
    num_heads: int = 8               # H; D must be divisible by H
    d_ff: int = 1024                 # F, hidden width of the feed-forward layers
    num_layers: int = 4              # N blocks
    dropout: float = 0.1             # on sublayer outputs and embeddings; by default also:
    attention_dropout: float = None  # on attention weights (None: dropout)
    activation_dropout: float = None  # on the feed-forward hidden layer (None: dropout)
    max_len: int = 1024              # longest sequence (context) the positional table covers
    norm_first: bool = True          # True: pre-norm (GPT-2 style); False: post-norm
    attention: str = "mha"           # "mha" multi-head, "mla" multi-head latent attention
    latent_dim: int = None           # L for MLA, 1..D (default D // 4); unused for MHA
    tie_embeddings: bool = True      # share the token embedding with the output projection
    pad_id: int = 0                  # padding token id (for the loss; never sampled)
    seed: int = 0                    # seed of the generator that draws the initial weights

    def __post_init__(self):
        validate_config(self, ("vocab_size", "num_layers", "max_len"), ("vocab_size",))

    block_config = block_config      # the settings of its blocks (BlockConfig)

    def to_dict(self):
        return asdict(self)
