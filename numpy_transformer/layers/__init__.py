"""Layers: each a Module with an explicit forward and backward."""

from .activations import GELU, ReLU
from .dropout import Dropout
from .linear import Linear
from .softmax import LogSoftmax, Softmax, log_softmax, log_softmax_backward, softmax, softmax_backward
