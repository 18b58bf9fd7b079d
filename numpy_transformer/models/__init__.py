"""Models built from the layers: encoder and decoder stacks, the Transformer, a GPT."""

from .config import BlockConfig, GPTConfig, TransformerConfig
from .decoder import Decoder, DecoderBlock
from .encoder import Encoder, EncoderBlock
from .gpt import GPT
from .transformer import Transformer, build_transformer, xavier_uniform_
