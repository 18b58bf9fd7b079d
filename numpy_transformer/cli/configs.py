"""A run's typed configurations: built once from the options, saved in checkpoints, read back.

    model   TransformerConfig / GPTConfig   the checkpoint header's "config"
    train   TrainConfig                     metadata["train_config"] (the Trainer writes it)
    data    DataConfig                      metadata["data_config"]
    run     RunOptions                      metadata["run_config"]: where the run writes

The command line resolves its options (presets < --quick < the options given, run.py)
into one flat record named as these fields, then builds the dataclasses from it here;
`--resume` rebuilds them from the checkpoint (`saved_settings`), each validating its
fields, so a crafted checkpoint is refused naming the file, the configuration and the field.
"""

from dataclasses import asdict, dataclass, fields

from ..data import DataConfig
from ..errors import InputError
from ..training import TrainConfig
from ..validation import message

NOT_OPTIONS = ("src_vocab_size", "tgt_vocab_size", "vocab_size", "pad_id", "progress")


@dataclass
class RunOptions:
    out: str = None             # the run folder
    figures: str = None         # the figures' folder (None: OUT/figures)
    no_figures: bool = False    # draw no figures

    def __post_init__(self):
        for name in ("out", "figures"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise InputError(message(name, "a folder name or None", repr(value)[:80]))
        if not isinstance(self.no_figures, bool):
            raise InputError(message("no_figures", "True or False", repr(self.no_figures)))


def config_from(cls, settings, **extra):
    """cls(**the settings named as its fields, None left to the field's default)."""
    names = {f.name for f in fields(cls)}
    values = {k: v for k, v in settings.items() if k in names and v is not None}
    return cls(**{**values, **extra})


def metadata(kind, data, settings):
    """What a run's checkpoints carry besides the model and TrainConfig (one key per
    dataclass): its kind, its DataConfig `data` and its RunOptions (from `settings`)."""
    return {"kind": kind, "data_config": data.to_dict(),
            "run_config": asdict(config_from(RunOptions, settings))}


def _rebuilt(cls, fields_, path, key):
    """cls(**fields_) of a checkpoint; InputError naming the file and the key."""
    if not isinstance(fields_, dict):
        raise InputError(message(f"{path}: {key}", "the configuration a run saves (train or "
                                 "train-lm of this version)", type(fields_).__name__))
    try:
        return cls(**fields_)
    except TypeError as err:                              # an unknown or missing field
        raise InputError(f"{path}: {key}: {err}") from None
    except InputError as err:
        raise InputError(f"{path}: {key}: {err}") from None


def saved_configs(ckpt, path):
    """(model config, TrainConfig, DataConfig, RunOptions) saved in the Checkpoint `ckpt`."""
    meta = ckpt.metadata
    return (ckpt.model.config,
            _rebuilt(TrainConfig, meta.get("train_config"), path, "train_config"),
            _rebuilt(DataConfig, meta.get("data_config"), path, "data_config"),
            _rebuilt(RunOptions, meta.get("run_config"), path, "run_config"))


def saved_settings(ckpt, path):
    """The flat settings record (named as the fields) of a checkpoint's configurations."""
    settings = {}
    for config in saved_configs(ckpt, path):
        settings.update(asdict(config))
    for name in NOT_OPTIONS:
        settings.pop(name, None)
    return settings


def data_config(meta, path):
    """The DataConfig in a checkpoint's metadata, or None (a bare model's checkpoint)."""
    saved = meta.get("data_config")
    return None if saved is None else _rebuilt(DataConfig, saved, path, "data_config")
