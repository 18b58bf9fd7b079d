"""The paper's beam search (section 6.1): beam 4, length penalty ((5 + |Y|) / 6)^alpha with
alpha = 0.6, at most input length + 50 tokens, early stopping once every hypothesis has its
EOS; the same output with and without the KV cache; `--alpha` on translate and evaluate."""

import math

import numpy as np
import pytest
from doors import error, nt, ok
from test_decoding import EOS, TableModel, source, transformer

from numpy_transformer.backend import xp
from numpy_transformer.decoding import beam_search, gnmt_length_penalty, greedy_decode
from numpy_transformer.decoding import strip_special


def test_the_length_penalty_is_gnmts():
    assert gnmt_length_penalty(1, 0.6) == 1.0                   # (5 + 1) / 6 = 1
    assert gnmt_length_penalty(7, 0.6) == pytest.approx(2 ** 0.6)
    assert gnmt_length_penalty(19, 1.0) == pytest.approx(4.0)
    assert gnmt_length_penalty(30, 0.0) == 1.0                  # alpha 0: raw log P
    lengths = np.arange(1, 9)
    assert np.all(np.diff(gnmt_length_penalty(lengths, 0.6)) > 0)


# [EOS] has P = 0.35; [4, 5, EOS] has P = 0.65 * 0.7 * 0.7 = 0.3185, a little less, but
# three tokens: log P / lp is -1.050 / 1 against -1.144 / (8/6)^0.6 = -0.963.
TABLE = {(): {EOS: 0.35, 4: 0.65},
         (4,): {5: 0.7, EOS: 0.2, 4: 0.1},
         (4, 5): {EOS: 0.7, 4: 0.3}}


def test_alpha_decides_between_a_short_likely_and_a_long_output():
    model, src = TableModel(TABLE), xp.asarray([[3, 3]])
    short, long = math.log(0.35), math.log(0.65 * 0.7 * 0.7)
    assert short > long                                         # raw log P prefers [EOS]
    assert long / gnmt_length_penalty(3, 0.6) > short / gnmt_length_penalty(1, 0.6)
    assert beam_search(model, src, 2, length_penalty=0.0, use_cache=False) == [[]]
    assert beam_search(model, src, 2, length_penalty=0.6, use_cache=False) == [[4, 5]]
    assert beam_search(model, src, 2, use_cache=False) == [[4, 5]]      # 0.6 is the default


class CountingModel(TableModel):
    """TableModel counting its decoder calls (one per step without a cache)."""

    calls = 0

    def decode(self, *args):
        self.calls += 1
        return super().decode(*args)


def test_beam_search_allows_input_length_plus_50_and_stops_once_all_beams_end():
    never = xp.asarray([[90, 9]])                   # a row that ends after 90 tokens: never
    model = CountingModel(max_len=100)
    assert [len(r) for r in beam_search(model, never, 2, use_cache=False)] == [2 + 50]
    assert greedy_decode(model, never, use_cache=False).shape == (1, 2 + 10)
    assert [len(r) for r in beam_search(CountingModel(max_len=30), never, 2,
                                        use_cache=False)] == [30]     # capped by the model
    model = CountingModel(max_len=100)
    out = beam_search(model, xp.asarray([[3, 9], [1, 9]]), 3, use_cache=False)
    assert out == [[4, 5, 4], [4]]
    assert model.calls == 4                         # not 52: every hypothesis ended by then


@pytest.mark.parametrize("attention,norm_first", [("mha", False), ("mla", True)])
def test_cached_and_uncached_decoding_agree_with_the_papers_settings(float64, attention,
                                                                     norm_first):
    model = transformer(attention, norm_first, perturb=False, seed=5, max_len=40)
    src = source(B=3, S=7)
    greedy = greedy_decode(model, src)                          # S + 10 = 17 tokens at most
    np.testing.assert_array_equal(greedy, greedy_decode(model, src, use_cache=False))
    assert len(np.unique(greedy)) >= 4                          # not a trivial output
    beams = beam_search(model, src, 4)                          # alpha 0.6, up to 40 tokens
    assert beams == beam_search(model, src, 4, use_cache=False)
    assert max(map(len, beams)) == 40 and beams != strip_special(greedy)   # S + 50, capped


# The command line: --alpha (also spelled --length-penalty) on translate and evaluate.

@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    work = tmp_path_factory.mktemp("beam")
    ok(nt("train", "--task", "reverse", "--quick", "--steps", "8", "--no-figures",
          "--no-progress", "--out", "r", cwd=work))
    return work / "r" / "best.npz"


def test_alpha_on_translate_and_evaluate(checkpoint, tmp_path):
    out = ok(nt("translate", "--checkpoint", checkpoint, "--beam", "4", "--alpha", "1.0",
                "abc", "hello"))
    assert len(out.splitlines()) == 2
    out = ok(nt("evaluate", "--checkpoint", checkpoint, "--examples", "10", "--beam", "2",
                "--length-penalty", "0", "--json", tmp_path / "s.json"))
    assert "exact_match" in out and '"alpha": 0.0' in (tmp_path / "s.json").read_text()
    out = ok(nt("evaluate", "--checkpoint", checkpoint, "--examples", "10", "--alpha", "1"))
    assert out.startswith("note: --alpha only changes beam search (give --beam 2 or more)")
    error(nt("translate", "--checkpoint", checkpoint, "--alpha", "-1", "abc"), 2, "--alpha",
          "a number >= 0", "'-1'")
