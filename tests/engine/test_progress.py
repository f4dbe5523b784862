"""Progress events (engine/progress.py) from real compiles: a schedule's compile task counts its
new kernels in order and finishes once; a TUNE or BEAM search nests in it and counts its
candidates; the terminal listener draws them on a terminal only, and a dataset download's bytes
in MB (with or without a known length). Counts and order, no timings."""
import dataclasses
import io

import numpy as np
import pytest

from tinylab import Context, Tensor
from tinylab.engine import progress
from tinylab.engine.realize import compile_schedule
from tinylab.schedule.schedule import schedule


def _fresh_outputs(count: int) -> list[Tensor]:
    """`count` independent kernels no other test compiled (their ASTs hold random constants)."""
    return [_fresh()[0] for _ in range(count)]


RNG = np.random.default_rng(14)  # one stream for the module: every test gets new constants


def _fresh() -> tuple[Tensor, np.ndarray]:
    """A kernel no other test compiled (its AST holds random constants) and its value."""
    x_np = RNG.random((37,), dtype=np.float32)
    scale, shift = np.float32(RNG.random() + 2.0), np.float32(RNG.random())
    return Tensor(x_np) * float(scale) + float(shift), x_np * scale + shift


def _by_task(events):
    tasks: dict = {}
    for event in events:
        tasks.setdefault(event.task_id, []).append(event)
    return list(tasks.values())


def _check_counts(events, total):
    """start at 0/total, then 1/total .. total/total in order, then one finish."""
    assert [(e.done, e.total, e.finished) for e in events] == \
        [(0, total, False)] + [(k, total, False) for k in range(1, total + 1)] + \
        [(total, total, True)]


@pytest.mark.parametrize("parallel", [0, 1])
def test_compile_task_counts_new_kernels_in_order(parallel):
    outputs, expected = zip(*[_fresh() for _ in range(5)])
    lazy = [o.node for o in outputs]
    events = []
    with Context(PARALLEL_COMPILE=parallel), progress.listening(events.append):
        Tensor.realize(*outputs)
    (compile_events,) = _by_task(events)
    _check_counts(compile_events, 5)
    assert {(e.kind, e.name, e.parent_id) for e in compile_events} == {("compile", "5 kernels",
                                                                        None)}
    for out, value in zip(outputs, expected):  # the kernels counted computed the values
        np.testing.assert_allclose(out.numpy(), value, rtol=1e-6)
    again = []
    with progress.listening(again.append):
        compile_schedule(schedule(lazy))
    assert again == []  # every kernel already compiled in this process: no task at all


def test_a_schedule_counts_only_kernels_not_yet_compiled():
    first, second = _fresh_outputs(2), _fresh_outputs(3)
    lazy = [o.node for o in first + second]
    Tensor.realize(*first)
    events = []
    with progress.listening(events.append):
        compile_schedule(schedule(lazy))
    (compile_events,) = _by_task(events)
    _check_counts(compile_events, 3)


def test_tune_search_nests_in_the_compile_task(tmp_path):
    rng = np.random.default_rng(7)
    a = Tensor(rng.random((256, 257), dtype=np.float32)).realize()  # 256*256*257 >= TUNE_WORK
    b = Tensor(rng.random((257, 256), dtype=np.float32)).realize()
    events = []
    with Context(TUNE=1, TINYLAB_CACHE=str(tmp_path)), progress.listening(events.append):
        out = (a @ b).numpy()
    np.testing.assert_allclose(out, a.numpy() @ b.numpy(), rtol=1e-4)
    compiles = [t for t in _by_task(events) if t[0].kind == "compile"]
    tunes = [t for t in _by_task(events) if t[0].kind == "tune"]
    assert len(tunes) == 1 and len(compiles) >= 1
    (tune,) = tunes
    parent = next(t for t in compiles if t[0].task_id == tune[0].parent_id)
    total = tune[-1].total
    assert total >= 2 and tune[0].total == 0  # the search knows its candidates once it starts
    assert [(e.done, e.finished) for e in tune] == \
        [(0, False)] + [(k, False) for k in range(1, total + 1)] + [(total, True)]
    order = [id(e) for e in events]  # the search runs between its compile's start and end
    assert order.index(id(parent[0])) < order.index(id(tune[0]))
    assert order.index(id(tune[-1])) < order.index(id(parent[-1]))


def test_beam_search_reports_each_candidate(tmp_path):
    x = Tensor(np.arange(12, dtype=np.float32).reshape(3, 4)).realize()
    events = []
    with Context(BEAM=1, TINYLAB_CACHE=str(tmp_path)), progress.listening(events.append):
        out = (x.exp2() * 3.5 - 1.25).numpy()
    np.testing.assert_allclose(out, np.exp2(np.arange(12).reshape(3, 4)) * 3.5 - 1.25, rtol=1e-6)
    (beam,) = [t for t in _by_task(events) if t[0].kind == "beam"]
    counts = [e.done for e in beam[1:-1]]
    assert counts == list(range(1, len(counts) + 1)) and counts  # one event per candidate
    assert all(e.done <= e.total for e in beam) and beam[-1].finished


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def _terminal_output(stream, count: int, **options) -> str:
    listener = progress.TerminalProgress(stream, **options)
    with progress.listening(listener):
        Tensor.realize(*_fresh_outputs(count))
    return stream.getvalue()


def test_terminal_line_counts_kernels_and_clears_itself():
    text = _terminal_output(FakeTerminal(), 4, delay_s=0, min_total=2, use_tqdm=False)
    lines = [line.strip() for line in text.split("\r") if line.strip()]
    assert lines[0] == "compiling 4 kernels: 0/4"
    assert lines[-1].startswith("compiling 4 kernels: 4/4")
    assert [line.split(": ")[1].split("/")[0] for line in lines] == ["0", "1", "2", "3", "4"]
    assert "left" in lines[1] and text.endswith("\r")  # time left; the line is wiped at the end


def test_terminal_bar_uses_tqdm_when_present():
    pytest.importorskip("tqdm")
    text = _terminal_output(FakeTerminal(), 4, delay_s=0, min_total=2)
    assert "compiling 4 kernels" in text and "/4" in text


def _download_events(total: int, chunks: int):
    step = total // chunks if total else 1 << 20
    done = [0] + [min((i + 1) * step, total or chunks * step) for i in range(chunks)]
    events = [progress.ProgressEvent(7, "download", "MNIST x.gz", d, total, 2.0 + i)
              for i, d in enumerate(done)]
    return events + [dataclasses.replace(events[-1], finished=True)]


@pytest.mark.parametrize("total", [2_000_000, 0])   # a length, or none from the server
def test_a_download_is_drawn_in_megabytes(total):
    stream = FakeTerminal()
    draw = progress.TerminalProgress(stream, delay_s=0, use_tqdm=False)
    for event in _download_events(total, 4):
        draw(event)
    lines = [line.strip() for line in stream.getvalue().split("\r") if line.strip()]
    assert lines[0] == "downloading MNIST x.gz: 0.0" + ("/2.0 MB" if total else " MB")
    assert lines[-1].startswith("downloading MNIST x.gz: 2.0" if total else
                                "downloading MNIST x.gz: 4.2 MB")
    assert ("left" in lines[1]) == bool(total)   # time left only where the length is known


def test_a_download_bar_counts_bytes_with_tqdm():
    pytest.importorskip("tqdm")
    stream = FakeTerminal()
    draw = progress.TerminalProgress(stream, delay_s=0)
    for event in _download_events(2_000_000, 4):
        draw(event)
    assert "downloading MNIST x.gz" in stream.getvalue() and "MB" in stream.getvalue()


@pytest.mark.parametrize("stream, options, settings", [
    (io.StringIO(), {"delay_s": 0, "min_total": 1}, {}),          # not a terminal
    (FakeTerminal(), {"delay_s": 3600, "min_total": 1}, {}),     # quick work
    (FakeTerminal(), {"delay_s": 0, "min_total": 5}, {}),         # a handful of kernels
    (FakeTerminal(), {"delay_s": 0, "min_total": 1}, {"PROGRESS": 0}),
])
def test_terminal_stays_silent(stream, options, settings):
    with Context(**settings):
        assert _terminal_output(stream, 4, use_tqdm=False, **options) == ""


def test_a_failing_listener_is_removed_and_the_compile_goes_on():
    def broken(event):
        raise ValueError("display gone")
    outputs, expected = zip(*[_fresh() for _ in range(2)])
    progress.add_listener(broken)
    with pytest.warns(RuntimeWarning, match="display gone"):
        Tensor.realize(*outputs)
    assert broken not in progress._LISTENERS
    for out, value in zip(outputs, expected):
        np.testing.assert_allclose(out.numpy(), value, rtol=1e-6)
