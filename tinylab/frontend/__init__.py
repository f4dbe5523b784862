"""The user-facing Tensor (tensor.py) and the method families mixed into it."""
