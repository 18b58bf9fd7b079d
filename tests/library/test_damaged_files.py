"""Nothing a user made is silently wrong (issue 26): a crafted or damaged checkpoint, run
folder or input is refused with an InputError naming it (`error: ...`, exit 2 at the
command line), never loaded half-checked and never reported as a bug."""

import copy
import hashlib
import json
import os

import numpy as np
import pytest
from doors import error, nt, raises_naming
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numpy_transformer.checkpoint import load_checkpoint, load_run, read_checkpoint_arrays
from numpy_transformer.checkpoint.average import average_checkpoints
from numpy_transformer.data import get_task
from numpy_transformer.errors import InputError
from numpy_transformer.models import TransformerConfig, build_transformer
from numpy_transformer.training import Checkpointer, PairStream, TrainConfig, Trainer

MODEL = dict(d_model=8, num_heads=2, d_ff=16, num_encoder_layers=1, num_decoder_layers=1,
             max_len=8, dropout=0.1)


def tiny_run(out, task="copy", steps=2):
    """A 2-step Trainer run of `task` in `out` (a real last.npz, history.json, config.json),
    returning (path of last.npz, the Trainer)."""
    task = get_task(task, max_len=4)
    tok = task.tokenizer()
    model = build_transformer(TransformerConfig(src_vocab_size=tok.vocab_size,
                                                tgt_vocab_size=tok.vocab_size, **MODEL))
    stream = PairStream.from_task(task, tok, batch_size=4, seed=0, pool_batches=2)
    config = TrainConfig(steps=steps, lr=1e-3, warmup=1, eval_every=0,
                         checkpoint_every=steps, progress=False)
    trainer = Trainer(model, stream, config, log=None, checkpointer=Checkpointer(
        str(out), tokenizers={"src": tok, "tgt": tok}, metadata={"kind": "seq2seq"}))
    trainer.fit()
    return os.path.join(str(out), "last.npz"), trainer


def fresh_trainer(steps=4):
    """A Trainer of the same model and data as tiny_run's, to resume into."""
    task = get_task("copy", max_len=4)
    tok = task.tokenizer()
    model = build_transformer(TransformerConfig(src_vocab_size=tok.vocab_size,
                                                tgt_vocab_size=tok.vocab_size, **MODEL))
    stream = PairStream.from_task(task, tok, batch_size=4, seed=0, pool_batches=2)
    return Trainer(model, stream, TrainConfig(steps=steps, warmup=1, progress=False), log=None)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(header, arrays) of a real checkpoint, and its folder."""
    path, _ = tiny_run(tmp_path_factory.mktemp("run") / "run")
    header, arrays = read_checkpoint_arrays(path)
    return header, arrays, os.path.dirname(path)


def _digest(array):
    h = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode())
    h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()


def craft(path, header, arrays, text=None):
    """Write a checkpoint as a forger would: any header (or header text) and any arrays,
    with checksums that match them, so only the checks of what they hold can refuse it."""
    if isinstance(header, dict) and text is None:
        header = {**header, "checksums": {k: _digest(v) for k, v in arrays.items()}}
    raw = (json.dumps(header) if text is None else text).encode("utf-8")
    header_bytes = np.frombuffer(raw, dtype=np.uint8)
    digest = np.frombuffer(hashlib.sha256(raw).hexdigest().encode(), np.uint8)
    with open(path, "wb") as f:
        np.savez(f, __header__=header_bytes, __header_sha256__=digest, **arrays)
    return str(path)


def edited(run, edit):
    """(header, arrays) of `run` after edit(header, arrays) on copies."""
    header, arrays = copy.deepcopy(run[0]), dict(run[1])
    edit(header, arrays)
    return header, arrays


def refused(call, *words):
    with pytest.raises(InputError) as caught:
        call()
    for word in words:
        assert word in str(caught.value), str(caught.value)
    return str(caught.value)


# 1. The whole header and every array are checked before use.

def test_a_tokenizer_that_does_not_fit_the_model_vocabulary_is_refused(run, tmp_path):
    def shrink(header, arrays):
        tokenizer = header["metadata"]["tokenizers"]["src"]
        tokenizer["symbols"] = tokenizer["symbols"][:5]
    path = craft(tmp_path / "c.npz", *edited(run, shrink))
    refused(lambda: load_run(path), path, "src tokenizer", "src_vocab_size", "5 tokens")


def test_weights_that_are_not_finite_are_refused(run, tmp_path):
    def poison(header, arrays):
        arrays["model/src_embed.weight"] = arrays["model/src_embed.weight"] * np.nan
    path = craft(tmp_path / "c.npz", *edited(run, poison))
    refused(lambda: load_checkpoint(path), path, "model/src_embed.weight", "finite")


def _set(keys, value):
    def edit(header, arrays):
        tree = header
        for key in keys[:-1]:
            tree = tree[key]
        tree[keys[-1]] = value
    return edit


def _retype(prefix, dtype):
    def edit(header, arrays):
        for name in [n for n in arrays if n.startswith(prefix)]:
            arrays[name] = arrays[name].astype(dtype)
    return edit


@pytest.mark.parametrize("edit, words", [
    (_set(["version"], 99), ["version", "99"]),
    (_set(["version"], "1"), ["version"]),
    (_set(["model_class"], ["GPT"]), ["model_class"]),
    (_set(["optimizer"], [1]), ["optimizer"]),
    (_set(["metadata", "step"], -3), ["metadata.step"]),
    (_set(["metadata", "step"], "7"), ["metadata.step"]),
    (_set(["metadata", "kind"], ["lm"]), ["metadata.kind"]),
    (_set(["metadata", "best"], []), ["metadata.best"]),
    (_set(["metadata", "best", "step"], "12"), ["metadata.best.step"]),
    (_set(["metadata", "training_seconds"], "x"), ["metadata.training_seconds"]),
    (_set(["metadata", "dropout_states"], 5), ["metadata.dropout_states"]),
    (_set(["metadata", "data_state"], [0, 2]), ["metadata.data_state"]),
    (_retype("model/", np.int32), ["model/", "floating-point"]),
    (_retype("model/decoder", np.float16), ["one dtype"]),
    (_retype("optim/", np.int8), ["optim/", "floating-point"]),
], ids=lambda x: "" if callable(x) else "-".join(x))
def test_every_header_field_and_array_is_checked_on_loading(run, tmp_path, edit, words):
    path = craft(tmp_path / "c.npz", *edited(run, edit))
    refused(lambda: load_checkpoint(path), path, *words)


@pytest.mark.parametrize("field, value", [
    ("data_state", {}), ("data_state", {"epoch": -1, "index": 0}),
    ("data_state", {"epoch": "0", "index": 0}), ("dropout_states", [{}]),
    ("dropout_states", [])])
def test_a_resume_state_a_trainer_cannot_take_is_refused_naming_it(run, tmp_path, field,
                                                                   value):
    path = craft(tmp_path / "c.npz", *edited(run, _set(["metadata", field], value)))
    refused(lambda: fresh_trainer().resume(path), path, f"metadata.{field}")


def test_an_optimizer_state_a_trainer_cannot_take_is_refused_naming_it(run, tmp_path):
    path = craft(tmp_path / "c.npz", *edited(run, _set(["optimizer"], {})))
    refused(lambda: fresh_trainer().resume(path), path, "optimizer")


def test_a_crafted_checkpoint_is_one_error_line_at_the_command_line(run, tmp_path):
    path = craft(tmp_path / "c.npz", *edited(run, _set(["metadata", "step"], -3)))
    error(nt("translate", "--checkpoint", path, "abc"), 2, "c.npz", "metadata.step")
    error(nt("train", "--resume", path, "--no-progress"), 2, "c.npz", "metadata.step")


# 2. A run carries an identity from its start; `average` compares it.

def test_average_refuses_two_runs_that_share_their_settings(tmp_path):
    copy_path, _ = tiny_run(tmp_path / "copy", "copy")
    reverse_path, _ = tiny_run(tmp_path / "reverse", "reverse")
    refused(lambda: average_checkpoints([copy_path, reverse_path]), reverse_path,
            "same run", "run id")


def test_a_resumed_run_keeps_its_run_id_and_averages_with_its_earlier_checkpoints(tmp_path):
    first, trainer = tiny_run(tmp_path / "r")
    run_id = read_checkpoint_arrays(first)[0]["metadata"]["run_id"]
    assert run_id == trainer.state.run_id and len(run_id) >= 16
    os.replace(first, tmp_path / "r" / "step-2.npz")
    resumed = fresh_trainer(steps=4)
    resumed.out = str(tmp_path / "r")
    resumed.resume(str(tmp_path / "r" / "step-2.npz"))
    resumed.fit()
    assert read_checkpoint_arrays(first)[0]["metadata"]["run_id"] == run_id
    with open(tmp_path / "r" / "config.json", encoding="utf-8") as f:
        assert json.load(f)["run_id"] == run_id
    average_checkpoints([tmp_path / "r" / "step-2.npz", first])


def test_checkpoints_older_than_run_ids_still_average(tmp_path):
    paths = [tiny_run(tmp_path / name, name)[0] for name in ("copy", "reverse")]
    for path in paths:
        header, arrays = read_checkpoint_arrays(path)
        del header["metadata"]["run_id"]
        craft(path, header, arrays)
    average_checkpoints(paths)                       # the checks of before run ids: they pass


# 3. Crafted or damaged files and inputs that used to end in "This is a bug".

@pytest.mark.parametrize("write", [
    lambda header: "[" * 100_000 + "]" * 100_000,                        # nested too deep
    lambda header: json.dumps(header).replace('"version": 2', '"version": ' + "9" * 5000),
    lambda header: json.dumps(header).replace('"step": 2', '"step": NaN'),
    lambda header: json.dumps(header).replace('"step": 2', '"step": -Infinity'),
    lambda header: "not JSON"])
def test_a_header_the_json_parser_chokes_on_is_refused_naming_the_file(run, tmp_path, write):
    path = craft(tmp_path / "c.npz", None, dict(run[1]), text=write(run[0]))
    refused(lambda: load_checkpoint(path), path)


@pytest.fixture
def run_folder(tmp_path):
    """A small run made by `train`, with a later session to resume into (step 4 of 8)."""
    done = nt("train", "--task", "copy", "--quick", "--no-figures", "--no-progress", "--steps",
              "4", "--out", "r", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return tmp_path


@pytest.mark.parametrize("where, setting, value", [
    (["metadata", "train_config"], "steps", "x"), (["metadata", "data_config"], "seed", -1),
    (["metadata", "data_config"], "task", ["copy"]), (["metadata", "data_config"], "max_len", None),
    (["metadata", "data_config"], "src", 5), (["config"], "norm_first", 1),
    (["metadata", "data_config"], "sha256", [1]), (["metadata", "run_config"], "figures", 3),
    (["metadata", "train_config"], "no_such_field", 1)])
def test_crafted_resume_configurations_are_one_error_line(run_folder, where, setting, value):
    header, arrays = read_checkpoint_arrays(run_folder / "r" / "last.npz")
    section = header
    for key in where:
        section = section[key]
    section[setting] = value
    os.mkdir(run_folder / "c")
    craft(run_folder / "c" / "last.npz", header, arrays)
    error(nt("train", "--resume", "c/last.npz", "--steps", "8", "--no-progress",
             cwd=run_folder), 2, "c/last.npz", where[-1], setting)


@pytest.mark.slow
@pytest.mark.parametrize("text", ["[" * 100_000, '{"train": [{"step": "x"}], "eval": []}',
                                  '{"train": [], "eval": 3}', '{"train": [{"step": 1}], '
                                  '"eval": []}', "[1]"])
def test_a_damaged_history_is_refused_by_figures_and_set_aside_at_resume(run_folder, text):
    """Issue 52: a resume names the damaged history.json, keeps a copy and goes on."""
    (run_folder / "r" / "history.json").write_text(text)
    error(nt("figures", "--run", "r", cwd=run_folder), 2, "history.json")
    done = nt("train", "--resume", "r/last.npz", "--steps", "8", "--no-progress",
              "--no-figures", cwd=run_folder)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    said = done.stdout + done.stderr
    assert "history.json cannot be read" in said and "history.json.damaged" in said, said
    assert "restarts at step 4" in said, said
    assert (run_folder / "r" / "history.json.damaged").read_text() == text
    json.loads((run_folder / "r" / "history.json").read_text())       # a new one


def test_a_deleted_history_is_said_at_resume(run_folder):
    (run_folder / "r" / "history.json").unlink()
    done = nt("train", "--resume", "r/last.npz", "--steps", "8", "--no-progress",
              "--no-figures", cwd=run_folder)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    said = done.stdout + done.stderr
    assert "history.json is missing" in said and "restarts at step 4" in said, said


@pytest.mark.slow
@pytest.mark.parametrize("text", ["[" * 100_000, "[1]", '{"kind": "seq2seq", "settings": []}',
                                  '{"kind": ["lm"], "settings": {}}',
                                  '{"kind": "seq2seq", "settings": {"label_smoothing": "x"}}'])
def test_a_damaged_config_json_is_refused_by_figures_and_ignored_at_resume(run_folder, text):
    (run_folder / "r" / "config.json").write_text(text)
    error(nt("figures", "--run", "r", cwd=run_folder), 2, "config.json")
    done = nt("train", "--resume", "r/last.npz", "--steps", "6", "--no-progress", "--no-figures",
              cwd=run_folder)                     # the trainer writes a new one
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_data_refuses_a_base_url_that_is_not_one(tmp_path):
    for url in ("not a url", "http://[::1", "ftp://example.org", "https://"):
        error(nt("data", "shakespeare", "--out", tmp_path / "d", "--base-url", url), 2,
              "--base-url")
    assert not (tmp_path / "d").exists() or not list((tmp_path / "d").iterdir())


@pytest.mark.parametrize("text", ['{"cells": {"a": 1}}', '{"cells": [1]}', "[1]",
                                  '{"cells": [{"source": [1]}]}', "{"])
def test_lessons_html_refuses_a_notebook_whose_cells_are_not_a_list_of_cells(tmp_path, text):
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "01_x.ipynb").write_text(text)
    error(nt("lessons", "--html", tmp_path / "site", "--from", tmp_path / "nb"), 2, "01_x.ipynb")


def test_the_python_api_names_its_bad_arguments():
    from numpy_transformer.decoding import greedy_decode
    from numpy_transformer.errors import InputTypeError
    with raises_naming(InputTypeError, "config", "TransformerConfig", "dict"):
        build_transformer({"src_vocab_size": 5, "tgt_vocab_size": 5})
    with pytest.raises(InputTypeError, match="build_transformer"):
        build_transformer(None)
    model = build_transformer(TransformerConfig(src_vocab_size=7, tgt_vocab_size=7, **MODEL))
    with raises_naming(InputError, "src"):
        greedy_decode(model, [[3, 4], [5]])
    for path in (None, b"last.npz", 3):
        with raises_naming(InputTypeError, "checkpoint"):
            load_checkpoint(path)


# 4. Fuzzing: whatever a header or a run folder's file holds, a correct load or an InputError.

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.sampled_from([0, 1, -1])
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=6)
    | st.sampled_from(["float32", "<f4", "GPT", "Transformer", "lm", "seq2seq"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner,
                                                                 max_size=3),
    max_leaves=6)


def mutate(data, tree):
    """Walk from the root of `tree` to a node drawn by `data`; drop it or replace it with a
    drawn JSON value (a huge or negative number, a string, a list, ...)."""
    node = tree
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            return
        key = data.draw(st.sampled_from(keys))
        if isinstance(node[key], (dict, list)) and node[key] and data.draw(st.booleans()):
            node = node[key]
            continue
        if isinstance(node, dict) and data.draw(st.booleans()):
            del node[key]
        else:
            node[key] = data.draw(JSON)
        return


def mutate_array(data, arrays):
    """Give one array another dtype or shape."""
    name = data.draw(st.sampled_from(sorted(arrays)))
    change = data.draw(st.sampled_from(["dtype", "flat", "cut"]))
    if change == "dtype":
        dtype = data.draw(st.sampled_from([np.float16, np.float64, np.int32, np.bool_,
                                           np.complex64, np.uint8]))
        arrays[name] = arrays[name].astype(dtype)
    elif change == "flat":
        arrays[name] = arrays[name].reshape(-1)
    else:
        arrays[name] = arrays[name].reshape(-1)[:-1]


FUZZ = settings(max_examples=60, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(data=st.data())
def test_any_crafted_header_loads_correctly_or_is_an_input_error(run, tmp_path_factory, data):
    header, arrays = copy.deepcopy(run[0]), dict(run[1])
    for _ in range(data.draw(st.integers(1, 3))):
        mutate(data, header)
    if data.draw(st.booleans()):
        mutate_array(data, arrays)
    path = craft(tmp_path_factory.getbasetemp() / "fuzzed.npz", header, arrays)
    try:
        model, tokenizers, _ = load_run(path)
        fresh_trainer().resume(path)
    except InputError as err:
        assert "fuzzed.npz" in str(err), str(err)     # named (the one place it comes from)
        return
    assert np.isfinite(model.forward(np.ones((1, 3), np.int64), np.ones((1, 2), np.int64))).all()


@FUZZ
@given(data=st.data())
def test_any_damaged_history_or_config_json_reads_correctly_or_is_an_input_error(
        run, tmp_path_factory, data):
    from numpy_transformer.tools.readme_runs import run_config
    from numpy_transformer.training.state import History
    folder = tmp_path_factory.getbasetemp() / "fuzzed_run"
    folder.mkdir(exist_ok=True)
    for name in ("history.json", "config.json"):
        with open(os.path.join(run[2], name), encoding="utf-8") as f:
            record = {"root": json.load(f)}
        for _ in range(data.draw(st.integers(1, 3))):
            mutate(data, record)
        (folder / name).write_text(json.dumps(record.get("root")))
    try:
        History.load(folder / "history.json").truncate(1)
    except InputError as err:
        assert "history.json" in str(err), str(err)
    try:
        run_config(str(folder))
    except InputError as err:
        assert "config.json" in str(err), str(err)


@pytest.mark.parametrize("edit", [_set(["version"], 3), _set(["metadata", "tokenizers"], 0),
                                  _retype("model/", np.float16), _set(["config"], [])])
@pytest.mark.parametrize("command", ["translate", "evaluate", "average", "generate"])
def test_a_crafted_checkpoint_is_one_error_line_for_every_command(run, tmp_path, edit,
                                                                  command):
    path = craft(tmp_path / "c.npz", *edited(run, edit))
    args = {"translate": ["--checkpoint", path, "abc"], "evaluate": ["--checkpoint", path],
            "generate": ["--checkpoint", path],
            "average": [path, os.path.join(run[2], "last.npz"), "--out", tmp_path / "a.npz"]}
    error(nt(command, *args[command]), 2, "c.npz")
