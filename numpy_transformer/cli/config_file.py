"""`--config FILE`: a run's options from a file, for `train` and `train-lm`.

    python -m numpy_transformer train --config configs/multi30k.toml
    python -m numpy_transformer train --config configs/multi30k.toml --steps 100   # overrides
    python -m numpy_transformer train --config runs/m30k/config.json               # a run's own

A TOML file holds one key per option, named as its long option without the dashes in front
(`d-model = 256`, `bpe = 8000`, `joint-vocab = true`, `schedule = "noam"`), optionally in
[tables] of any name (one level: `[model]`, `[training]`, ... only group the keys). The
keys use dashes as the options do; `d_model` is refused, naming `d-model`.

A `.json` file is read as JSON: either the same flat keys, or the config.json a run writes
in its folder (its typed configurations, fields named with underscores), whose settings
are the run's options; the fields that are no option (vocabulary sizes, digests, ...) are
left out. JSON is read as it is, rather than converted to TOML first, because a run's own
config.json is then enough to start the run again. The name's suffix is read in any case
(`c.JSON` is JSON), and a UTF-8 byte-order mark at the start (Windows editors) is skipped.

The file's values are the options' values, checked as the command line checks them (the
same types, ranges and choices). An option given on the command line wins over the file,
before or after `--config`; paths in the file are relative to the current folder, as on
the command line. Reading TOML needs Python 3.11+ (tomllib) or, on 3.10, the tomli package.
"""

import argparse
import difflib
import json

from ..errors import InputError
from ..system.files import open_regular

NOT_IN_FILES = ("help", "config", "resume", "overwrite", "debug", "quick", "threads",
                "no_progress")
COMMANDS = {"seq2seq": "train", "lm": "train-lm"}
RUN_SECTIONS = ("model", "train", "data_config", "run_config")
MAX_DEPTH = 32           # levels of nested tables, arrays, objects: a run's config.json has 2


def toml_reader():
    """tomllib (Python 3.11+), else tomli; else a ValueError naming the fix."""
    try:
        import tomllib
    except ImportError:
        try:
            import tomli as tomllib
        except ImportError:
            raise ValueError("reading a TOML file needs Python 3.11+ or the tomli package: "
                             "pip install tomli (or give the settings as a .json file)") \
                from None
    return tomllib


def read_config(path):
    """The file's {key: value} as written (TOML, or JSON for a .json name in any case), one
    level of tables merged; ValueError naming the file when it cannot be read (a FIFO or a
    device is refused before reading: files.open_regular), holds a key twice, or nests more
    than MAX_DEPTH levels (the parsers recurse: 100,000 nested arrays are no RecursionError)."""
    too_deep = f"{path}: the file is nested too deeply (more than {MAX_DEPTH} levels)"
    try:
        with open_regular(path, str(path)) as f:
            text = f.read().decode("utf-8-sig")         # -sig: a byte-order mark skipped
        if str(path).lower().endswith(".json"):
            data = json.loads(text, object_pairs_hook=no_duplicates)
        else:
            data = toml_reader().loads(text)
    except InputError as err:                  # a FIFO, a device, a folder: never read
        raise ValueError(str(err)) from None
    except FileNotFoundError:
        raise ValueError(f"{path}: cannot read it (no such file)") from None
    except OSError as err:
        raise ValueError(f"{path}: cannot read it ({err.strerror})") from None
    except RecursionError:
        raise ValueError(too_deep) from None
    except ValueError as err:                  # JSON or TOML syntax, not UTF-8 (ValueErrors)
        raise ValueError(f"{path}: {err}") from None
    if depth(data) > MAX_DEPTH:
        raise ValueError(too_deep)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a table of settings, got {type(data).__name__}")
    if "model_class" in data and "train" in data:
        return data                            # a run's config.json: see run_settings
    return flattened(data, path)


def depth(value, limit=MAX_DEPTH):
    """How many levels of dicts and lists `value` nests (counted up to limit + 1 only)."""
    if not isinstance(value, (dict, list)) or limit < 0:
        return 0
    items = value.values() if isinstance(value, dict) else value
    return 1 + max((depth(item, limit - 1) for item in items), default=0)


def no_duplicates(pairs):
    """A JSON object's dict, refusing a key given twice (json keeps the last silently)."""
    found = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"{key} is given twice")
        found[key] = value
    return found


def flattened(data, path):
    flat = {}
    for key, value in data.items():
        inner = value.items() if isinstance(value, dict) else [(key, value)]
        for name, item in inner:
            if name in flat:
                raise ValueError(f"{path}: {name} is given twice")
            flat[name] = item
    return flat


def run_settings(data, path, command):
    """{option key: value} of a run's config.json (its typed configurations' fields)."""
    kind = COMMANDS.get(data.get("kind"))
    if kind != command:
        raise ValueError(f"{path}: the config.json of a `{kind}` run, not of `{command}`")
    flat = {}
    for section in RUN_SECTIONS:
        for name, value in (data.get(section) or {}).items():
            if value is not None:
                flat[name.replace("_", "-")] = value
    return flat


def file_options(parser):
    """{key: argparse action} of the options a file may set (every long spelling)."""
    found = {}
    for action in getattr(parser, "_actions", ()):
        if action.dest in NOT_IN_FILES:
            continue
        for option in action.option_strings:
            negative = isinstance(action, argparse.BooleanOptionalAction) and \
                option.startswith("--no-")
            if option.startswith("--") and not negative:
                found[option[2:]] = action
    return found


def unknown(key, path, known, parser):
    """The error for a key that sets no option: the spelling to use, or the nearest key."""
    dashed = key.replace("_", "-")
    if dashed in known:
        return f"{path}: {key}: write it {dashed} (keys are spelled as the options, with dashes)"
    if dashed.replace("-", "_") in NOT_IN_FILES:
        return f"{path}: {key}: not a setting of the run; give --{dashed} on the command line"
    near = difflib.get_close_matches(dashed, known, n=1)
    hint = f"; did you mean {near[0]}?" if near else f" (the keys: see {parser.prog} --help)"
    return f"{path}: unknown key {key!r}{hint}"


def checked(key, value, action, path):
    """The value as the option would hold it; ValueError naming the file, key, expected."""
    def refuse(expected):
        return ValueError(f"{path}: {key} = {value!r}: expected {expected}")
    if action.nargs == 0:                                   # a flag: true or false
        if not isinstance(value, bool):
            raise refuse("true or false")
        return value
    if action.choices is not None:
        if value not in action.choices:
            raise refuse("one of " + ", ".join(map(repr, action.choices)))
        return value
    if action.type is None:
        if not isinstance(value, str):
            raise refuse("a string (a file or folder name)")
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise refuse("a number")
    try:
        return action.type(str(value))
    except argparse.ArgumentTypeError as err:
        raise ValueError(f"{path}: {key} = {value!r}: {str(err).split(', got')[0]}") from None


def file_values(path, parser):
    """{dest: value} that the file sets for `parser`'s command (ValueError if wrong)."""
    data = read_config(path)
    command = parser.prog.split()[-1]
    known = file_options(parser)
    if "model_class" in data and "train" in data:
        data = {k: v for k, v in run_settings(data, path, command).items() if k in known}
    values, keys = {}, {}
    for key, value in data.items():
        if key not in known:
            raise ValueError(unknown(key, path, known, parser))
        action = known[key]
        if action.dest in keys:                             # `heads` and `num-heads`
            raise ValueError(f"{path}: {keys[action.dest]} and {key} both set "
                             f"{action.option_strings[0]}; keep one of them")
        keys[action.dest] = key
        value = checked(key, value, action, path)
        if action.nargs == 0 and not value and action.const is True and \
                not isinstance(action, argparse.BooleanOptionalAction):
            continue                                        # `flag = false`: not given
        values[action.dest] = value
    return values


def sources(args):
    """{dest: the --config file} of the options whose values came from that file (not
    typed on the command line, before or after --config)."""
    return {dest: path for dest, (path, value) in
            (getattr(args, "config_values", None) or {}).items()
            if getattr(args, dest, None) == value}


class ConfigFile(argparse.Action):
    """`--config FILE`: the file's settings, under every option given on the command line
    (an option before --config is already set; one after it is set later)."""

    def __call__(self, parser, namespace, path, option_string=None):
        first = getattr(namespace, self.dest, None)
        if first is not None:                   # two files: no silent merge of the two
            raise argparse.ArgumentError(self, f"given twice ({first}, then {path}); give "
                                         f"one file (options typed here override it)")
        try:
            values = file_values(path, parser)
        except ValueError as err:
            raise argparse.ArgumentError(self, str(err)) from None
        found = {}
        for dest, value in values.items():
            if getattr(namespace, dest, None) == parser.get_default(dest):   # not given
                setattr(namespace, dest, value)
                found[dest] = (path, value)     # where it came from: sources(args)
        namespace.config_values = found
        setattr(namespace, self.dest, path)
