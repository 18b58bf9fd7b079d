"""Parameter groups: which parameters get weight decay (as torch.optim's param_groups).

    optimizer = AdamW(model, lr=3e-4, param_groups=decay_groups(model, weight_decay=0.1))

A group is a dict {"params": [...], "weight_decay": wd}: "params" lists parameters
by dotted name (as `model.named_parameters()` gives them) or by the array itself;
a group without "weight_decay" uses the optimizer's own `weight_decay`. Every
parameter belongs to exactly one group: `resolve_groups`, which the optimizer
calls, checks that and names the parameters.

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

import numbers

from ..errors import InputError, InputTypeError
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


GROUP_KEYS = ("params", "weight_decay")   # what a parameter group may set


def resolve_groups(param_groups, named):
    """The groups as [{"params": [names], maybe "weight_decay": wd}], checked.

    `named` is the model's [(name, param, grad)]. None gives one group of every
    parameter that uses the optimizer's weight_decay. Raises InputError for an
    unknown parameter, a parameter in two groups or in none, or an unknown key.
    """
    names = [name for name, _, _ in named]
    if param_groups is None:
        return [{"params": names}]
    if not isinstance(param_groups, (list, tuple)) or not param_groups:
        raise InputTypeError(message("param_groups", "a non-empty list of dicts",
                                     repr(param_groups)[:80]))
    by_id = {id(param): name for name, param, _ in named}
    groups, seen = [], set()
    for i, group in enumerate(param_groups):
        groups.append(_resolve_group(group, f"param_groups[{i}]", by_id, set(names), seen))
    missing = [name for name in names if name not in seen]
    if missing:
        raise InputError(message("param_groups", "every parameter of the model in one group",
                                 f"{len(missing)} in none: {missing[:5]}"))
    return groups


def _resolve_group(group, where, by_id, known, seen):
    """One group with its params as names; adds them to `seen` (each name only once)."""
    if not isinstance(group, dict) or "params" not in group:
        raise InputTypeError(message(where, "a dict with key 'params'", repr(group)[:80]))
    unknown_keys = sorted(set(group) - set(GROUP_KEYS))
    if unknown_keys:
        raise InputError(message(where, f"keys among {list(GROUP_KEYS)}", f"keys {unknown_keys}"))
    resolved = {"params": [_param_name(p, where, by_id, known) for p in group["params"]]}
    if "weight_decay" in group:
        wd = group["weight_decay"]
        check_nonnegative(wd, f"{where}['weight_decay']")
        resolved["weight_decay"] = float(wd) if isinstance(wd, numbers.Real) else wd
    for name in resolved["params"]:
        if name in seen:
            raise InputError(message(where, "parameters in no other group",
                                     f"{name!r} a second time"))
        seen.add(name)
    return resolved


def _param_name(p, where, by_id, known):
    """A parameter's dotted name, from its name or the array itself."""
    if isinstance(p, str):
        if p not in known:
            raise InputError(message(f"{where}['params']", "names of the model's parameters",
                                     repr(p)))
        return p
    if id(p) not in by_id:
        raise InputError(message(f"{where}['params']", "the model's parameter arrays or names",
                                 f"an unknown {type(p).__name__}"))
    return by_id[id(p)]
