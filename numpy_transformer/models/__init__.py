"""Models built from the layers: encoder and decoder stacks, the Transformer."""

from .decoder import Decoder, DecoderBlock
from .encoder import Encoder, EncoderBlock
from .transformer import Transformer, TransformerConfig, build_transformer, xavier_uniform_
