"""Learning-rate schedules: the Noam, warm-up + cosine and constant formulas, by hand."""

import math

import numpy as np
import pytest

from numpy_transformer.optim import ConstantSchedule, NoamSchedule, WarmupCosineSchedule


def test_noam_schedule():
    schedule = NoamSchedule(d_model=512, warmup_steps=4000, factor=2.0)
    assert schedule(1) == pytest.approx(2.0 * 512**-0.5 * 4000**-1.5, rel=1e-14)
    assert schedule(100) == pytest.approx(2.0 * 512**-0.5 * 100 * 4000**-1.5, rel=1e-14)
    assert schedule(10_000) == pytest.approx(2.0 * 512**-0.5 * 10_000**-0.5, rel=1e-14)
    rates = [schedule(s) for s in range(1, 8001)]
    assert int(np.argmax(rates)) + 1 == 4000
    assert max(rates) == pytest.approx(schedule.peak_lr, rel=1e-14)
    assert schedule.peak_lr == pytest.approx(2.0 * (512 * 4000) ** -0.5, rel=1e-14)


def test_warmup_cosine_and_constant_schedules():
    schedule = WarmupCosineSchedule(peak_lr=1e-3, total_steps=110, warmup_steps=10, min_lr=1e-5)
    assert schedule(5) == pytest.approx(5e-4)
    assert schedule(10) == pytest.approx(1e-3)
    assert schedule(60) == pytest.approx(1e-5 + (1e-3 - 1e-5) * 0.5)
    assert schedule(110) == pytest.approx(1e-5) and schedule(500) == pytest.approx(1e-5)
    assert WarmupCosineSchedule(peak_lr=1.0, total_steps=4)(1) == pytest.approx(
        0.5 * (1 + math.cos(math.pi / 4)))
    assert ConstantSchedule(lr=0.3)(1) == ConstantSchedule(lr=0.3)(99) == 0.3
