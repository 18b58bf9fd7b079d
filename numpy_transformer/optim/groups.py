"""Parameter groups: which parameters get weight decay (as torch.optim's param_groups).

    optimizer = AdamW(model, lr=3e-4, param_groups=decay_groups(model, weight_decay=0.1))

A group is a dict {"params": [...], "weight_decay": wd}: "params" lists parameters
by dotted name (as `model.named_parameters()` gives them) or by the array itself;
a group without "weight_decay" uses the optimizer's own `weight_decay`. Every
parameter belongs to exactly one group.

The practitioners' rule (nanoGPT's `configure_optimizers`, after Loshchilov &
Hutter): decay the matrices (ndim >= 2: the weights of Linear layers), never the
vectors (biases, LayerNorm gamma and beta). Shrinking a bias or a norm's gain
towards 0 is no regulariser: it only moves the layer's output away from where the
data put it. Embeddings are matrices but are looked up one row at a time, so rows
of rare tokens would shrink at every step and hardly ever grow back; nanoGPT
decays them, many recipes do not: `decay_embeddings` chooses. A tied embedding /
output matrix is one array, listed once, under the embedding's name: it is an
embedding here.
"""

from ..errors import InputTypeError
from ..layers.embedding import Embedding
from ..validation import message
from ..validation import check_nonnegative

def decay_groups(model, weight_decay, decay_embeddings=False):
    """[{"params": decayed names, "weight_decay": weight_decay},
        {"params": the other names, "weight_decay": 0.0}]

    Decayed: every parameter with ndim >= 2 (matrices), except the weights of
    Embedding layers unless `decay_embeddings`. Not decayed: vectors (ndim < 2:
    biases, LayerNorm gamma and beta). Each shared (tied) array is counted once.
    """
    check_nonnegative(weight_decay, "weight_decay")
    if not isinstance(decay_embeddings, bool):
        raise InputTypeError(message("decay_embeddings", "True or False", repr(decay_embeddings)))
    embeddings = {id(p) for _, module in model.named_modules() if isinstance(module, Embedding)
                  for p in module.params.values()}
    decay, keep = [], []
    for name, param, _ in model.named_parameters():
        is_matrix = param.ndim >= 2 and (decay_embeddings or id(param) not in embeddings)
        (decay if is_matrix else keep).append(name)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": keep, "weight_decay": 0.0}]
