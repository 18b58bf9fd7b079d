"""Models built from the layers: encoder and decoder stacks, the Transformer, a GPT."""

from .decoder import Decoder, DecoderBlock
from .encoder import Encoder, EncoderBlock
from .gpt import GPT, GPTConfig
from .transformer import Transformer, TransformerConfig, build_transformer, xavier_uniform_
