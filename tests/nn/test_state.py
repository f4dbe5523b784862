"""nn.state: naming a model's tensors by walking its attributes, and strict loading with errors
that list every missing, unexpected and mis-shaped key."""
from collections import namedtuple

import numpy as np
import pytest

from tinylab import Tensor, nn
from tinylab.nn.state import (StateDictError, get_parameters, get_state_dict, load_state_dict,
                              safe_load, safe_save)


class Block:
    def __init__(self):
        self.conv = nn.Conv2d(2, 3, 3)
        self.norm = nn.BatchNorm2d(3)
        self.parent = self  # a reference cycle must not hang the walk


class Model:
    def __init__(self):
        self.blocks = [Block(), Block()]
        self.heads = {"class": nn.Linear(3, 4)}
        self.shared = self.heads["class"].weight  # the same tensor under a second name
        self.config = {"depth": 2, "name": "model"}


def test_state_dict_names_follow_attributes_lists_and_dicts():
    model = Model()
    names = list(get_state_dict(model))
    assert names[:5] == ["blocks.0.conv.weight", "blocks.0.conv.bias", "blocks.0.norm.weight",
                         "blocks.0.norm.bias", "blocks.0.norm.running_mean"]
    assert "blocks.1.norm.num_batches_tracked" in names
    assert names[-3:] == ["heads.class.weight", "heads.class.bias", "shared"]
    assert get_state_dict(model)["shared"] is model.heads["class"].weight


def test_get_parameters_lists_each_tensor_once_and_walks_namedtuples():
    model = Model()
    params = get_parameters(model)
    assert len(params) == len(get_state_dict(model)) - 1  # "shared" is heads.class.weight
    assert len({id(p) for p in params}) == len(params)
    Pair = namedtuple("Pair", "left right")
    pair = Pair(Tensor([1.0]), [Tensor([2.0])])
    assert list(get_state_dict(pair)) == ["left", "right.0"]


def _numpy_state(model) -> dict:
    return {k: v.numpy() for k, v in get_state_dict(model).items()}


def test_load_state_dict_copies_values_and_casts_dtypes():
    source, target = nn.Linear(3, 2), nn.Linear(3, 2)
    state = {k: v.astype(np.float64) for k, v in _numpy_state(source).items()}
    load_state_dict(target, state)
    for name, value in get_state_dict(target).items():
        assert value.dtype.name == "float32"
        np.testing.assert_array_equal(value.numpy(), state[name].astype(np.float32))


def test_strict_errors_list_missing_unexpected_and_misshaped_keys_and_load_nothing():
    model = nn.Linear(3, 2)
    before = _numpy_state(model)
    bad = {"weight": np.zeros((3, 2), np.float32), "extra": np.zeros(1, np.float32)}
    with pytest.raises(StateDictError) as caught:
        load_state_dict(model, bad)
    message = str(caught.value)
    assert "missing keys" in message and "'bias'" in message
    assert "unexpected keys" in message and "'extra'" in message
    assert "'weight' has shape (3, 2) in the state dict but (2, 3) in the model" in message
    assert isinstance(caught.value, KeyError) and isinstance(caught.value, ValueError)
    for name, value in get_state_dict(model).items():
        np.testing.assert_array_equal(value.numpy(), before[name])


def test_non_strict_loads_what_fits_but_still_rejects_wrong_shapes():
    model = nn.BatchNorm(2)
    load_state_dict(model, {"running_mean": np.array([1.0, 2.0], np.float32), "other": 1},
                    strict=False)
    np.testing.assert_array_equal(model.running_mean.numpy(), [1.0, 2.0])
    with pytest.raises(ValueError, match="running_var"):
        load_state_dict(model, {"running_var": np.ones(3, np.float32)}, strict=False)


def test_consume_empties_the_state_dict_and_bad_values_are_named():
    model = nn.LayerNorm(2)
    state = _numpy_state(nn.LayerNorm(2))
    load_state_dict(model, state, consume=True)
    assert state == {}
    with pytest.raises(StateDictError, match="'weight' is a list"):
        load_state_dict(model, {"weight": [1.0, 2.0], "bias": np.zeros(2, np.float32)})
    with pytest.raises(TypeError, match="state_dict must be a dict"):
        load_state_dict(model, [("weight", 1)])


def test_safetensors_round_trip_restores_a_model(tmp_path):
    Tensor.manual_seed(3)
    source = Model()
    Tensor.manual_seed(4)
    target = Model()
    path = tmp_path / "model.safetensors"
    safe_save(get_state_dict(source), path)
    load_state_dict(target, safe_load(path))
    x = Tensor(np.random.default_rng(0).standard_normal((1, 2, 5, 5)).astype(np.float32))
    np.testing.assert_array_equal(target.blocks[1].conv(x).numpy(),
                                  source.blocks[1].conv(x).numpy())
    for name, value in get_state_dict(source).items():
        np.testing.assert_array_equal(get_state_dict(target)[name].numpy(), value.numpy())
