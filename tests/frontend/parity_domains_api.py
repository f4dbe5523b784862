"""Input domains for the API parity rows (test_tensor_parity_api*.py), registered in the
harness's DOMAINS under names starting with "api_" so they never replace another file's."""
import numpy as np

from parity_harness import DOMAINS

SPECIAL_VALUES = np.array([-np.inf, np.inf, np.nan, 0.0, -0.0, 1.0, -1.0, 2.5, 1e30, -1e-30],
                          np.float32)


def _special(rng, shape):
    """Half ±inf, NaN, ±0, huge and tiny values (repeated: ties), half standard normal."""
    return np.where(rng.random(shape) < 0.5, rng.choice(SPECIAL_VALUES, shape),
                    rng.standard_normal(shape)).astype(np.float32)


def _positions6(rng, shape):
    """0..5 over the last two dims (3, 2): distinct flat indices in each plane."""
    return np.broadcast_to(np.arange(6, dtype=np.int32).reshape(3, 2), shape).copy()


DOMAINS.update({
    "api_special": _special,
    "api_sparse": lambda rng, shape: rng.choice(np.array([0, 0, 0, 1.5, -2], np.float32), shape),
    "api_ties": lambda rng, shape: rng.integers(-2, 3, shape).astype(np.float32),
    "api_very_negative": lambda rng, shape: rng.uniform(-300, -50, shape).astype(np.float32),
    "api_mixed_scale": lambda rng, shape: (rng.standard_normal(shape) * rng.choice(
        [1, 30, 200], shape)).astype(np.float32),
    "api_label4": lambda rng, shape: rng.integers(0, 4, shape).astype(np.int32),
    "api_label4_ignored": lambda rng, shape: rng.choice(np.array([-100, 0, 1, 2, 3], np.int32),
                                                        shape),
    "api_binary": lambda rng, shape: (rng.random(shape) < 0.5).astype(np.float32),
    "api_positions6": _positions6,
})
