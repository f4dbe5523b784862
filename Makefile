# tinylab: `make demo` trains the CNN on the CPU, `make test` runs every test, `make lab` opens
# the tutorials. Each target sets up what it needs from a fresh clone.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_WALL := /tmp/tinylab-demo-wall-$(shell id -u).txt

.PHONY: demo test presets lab notebooks bench fuzz asan system binder-check picture clean

# Debian packages the stack uses (C compiler, graphviz, chromium, Fashion-MNIST, Mesa's Vulkan
# drivers: lavapipe runs the WEBGPU device on the CPU; Debian's PoCL: the PoCL bundled with
# pyopencl's wheel links LLVM 14, which names a CPU newer than Zen 3 'generic' and then refuses
# to build for it), installed only when running as root and only if missing.
system:
	@if [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null; then \
	  need=""; \
	  command -v cc >/dev/null || need="$$need gcc libc6-dev"; \
	  command -v dot >/dev/null || need="$$need graphviz"; \
	  command -v chromium >/dev/null || need="$$need chromium"; \
	  dpkg -s mesa-vulkan-drivers >/dev/null 2>&1 || need="$$need mesa-vulkan-drivers"; \
	  dpkg -s pocl-opencl-icd >/dev/null 2>&1 || need="$$need pocl-opencl-icd"; \
	  [ -d /usr/share/dataset-fashion-mnist ] || dpkg -s dataset-fashion-mnist >/dev/null 2>&1 || need="$$need dataset-fashion-mnist"; \
	  if [ -n "$$need" ]; then echo "apt-get install$$need"; \
	    (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$need >/dev/null; fi; \
	fi

$(STAMP): pyproject.toml
	@$(MAKE) --no-print-directory system
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[lab,opencl,webgpu,test]"
	touch $(STAMP)

# 70 steps of batch 512 on Fashion-MNIST must reach 82% test accuracy (issue 14), or it fails
# then the same 70 steps in PyTorch (bench.demo --beside), its training wall beside the demo's
demo: $(STAMP)
	TARGET_EVAL_ACC_PCT=82 DEMO_WALL_FILE=$(DEMO_WALL) $(PY) -m tinylab.examples.beautiful_mnist
	$(PY) -m bench.demo --beside $(DEMO_WALL)

# --max-worker-restart=0: a worker that dies (a kernel's segfault) is named at the end and the
# other worker finishes the run; pytest-xdist 3.8's loadgroup scheduler can leave a replacement
# worker idle until CI's time runs out (pytest-xdist issues 1323/1327; our CI timed out so once)
test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadgroup --max-worker-restart=0 -rs tests

# the codegen, renderer and special-point tests on this CPU's target and under each x86-64 preset,
# PyTorch's matching kernels with it (ATEN_CPU_CAPABILITY: its AVX2 sinh is not its AVX-512 one);
# a preset this CPU cannot execute renders only and the tests run the detected target. Run it
# before every submission.
PRESET_TESTS := tests/codegen tests/renderers tests/frontend/test_tensor_parity_points.py
presets: $(STAMP)
	$(PY) -m pytest -q -n 2 --dist loadgroup -p no:cacheprovider $(PRESET_TESTS)
	CPU_TARGET=avx2 ATEN_CPU_CAPABILITY=avx2 $(PY) -m pytest -q -n 2 --dist loadgroup -p no:cacheprovider $(PRESET_TESTS)
	CPU_TARGET=sse4 ATEN_CPU_CAPABILITY=default $(PY) -m pytest -q -n 2 --dist loadgroup -p no:cacheprovider $(PRESET_TESTS)

# JupyterLab on the tutorials (each notebook runs %load_ext tinylab itself); as root (containers)
# Jupyter needs --allow-root
lab: $(STAMP)
	$(VENV)/bin/jupyter lab notebooks/ $$([ "$$(id -u)" = "0" ] && echo --allow-root)

# re-execute the tutorials from their jupytext twins (notebooks/py) and strip widget state;
# `make notebooks NAMES=02_laziness_and_fusion` rebuilds one
notebooks: $(STAMP)
	$(PY) notebooks/build.py $(NAMES)

# Binder's build without the container: apt.txt (as root), a fresh venv with runtime.txt's
# Python, requirements.txt, postBuild and every notebook under nbval as an unprivileged user
# (useradd as root); prints each step's time. Needs no .venv; make test runs it with two notebooks.
binder-check:
	$(PYTHON) binder/dry_run.py

bench: $(STAMP)
	TUNE=1 $(PY) -m bench.run

# docs/inspector.png, the README's picture: the inspector's standalone page in headless chromium
picture: $(STAMP)
	$(PY) docs/picture.py

fuzz: $(STAMP)
	FUZZ_EXAMPLES=2000 $(PY) -m pytest -q tests/reliability/test_fuzz.py tests/reliability/test_safe_load_fuzz.py \
		tests/reliability/test_write_fuzz.py \
		tests/ir/test_view.py
	FUZZ_EXAMPLES=2000 $(PY) -m pytest -q -n 2 tests/func/test_func_parity_columns.py  # every variant

# bounds sweep: CPU kernels built with AddressSanitizer and run in a python with libasan
# preloaded (host buffers' alignment slack poisoned, runtimes/buffer.py); a kernel that reads or
# writes past a buffer stops its worker with a report in test-artifacts/asan.PID. The GPU-language
# session checks are off (nvcc under libasan crashes). `make asan ASAN_TESTS=tests/frontend`
ASAN_TESTS ?= tests --ignore=tests/notebooks --ignore=tests/widgets
asan: $(STAMP)
	mkdir -p test-artifacts
	TINYLAB_CACHE=$${TINYLAB_CACHE:-$$HOME/.cache/tinylab-asan} CUDA_RENDER_CHECK=0 \
	  TINYLAB_CPU_CFLAGS="-fsanitize=address -fno-omit-frame-pointer" \
	  ASAN_OPTIONS=detect_leaks=0:alloc_dealloc_mismatch=0:log_path=$(CURDIR)/test-artifacts/asan \
	  LD_PRELOAD="$$($(CC) -print-file-name=libasan.so) $$($(CC) -print-file-name=libstdc++.so.6)" \
	  $(PY) -m pytest -n 2 --dist load --max-worker-restart=100 -p no:cacheprovider $(ASAN_TESTS)

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache
