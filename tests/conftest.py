"""Shared fixtures: gradient checks run in float64, and the dtype is restored after."""

import numpy as np
import pytest

from numpy_transformer.backend import get_default_dtype, set_default_dtype


@pytest.fixture
def float64():
    """Build modules in float64 for the duration of a test."""
    saved = get_default_dtype()
    set_default_dtype(np.float64)
    yield
    set_default_dtype(saved)


@pytest.fixture
def rng():
    return np.random.default_rng(0)
