"""Layers: each a Module with an explicit forward and backward."""

from .activations import GELU, ReLU
from .attention import MultiHeadAttention
from .dropout import Dropout
from .embedding import Embedding
from .feedforward import FeedForward
from .latent_attention import MultiHeadLatentAttention
from .linear import Linear, TiedLinear
from .normalization import LayerNorm
from .positional import PositionalEncoding
from .residual import SublayerConnection
from .softmax import LogSoftmax, Softmax, log_softmax, log_softmax_backward, softmax, softmax_backward
