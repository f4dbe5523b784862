"""Benchmarks: tinylab beside numpy / PyTorch (and tinygrad when installed), same run, same
machine; medians and ratios. `python -m bench.run` (make bench) runs them all."""
