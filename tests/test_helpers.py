"""tinylab.helpers.Timing against tinygrad's meaning: prints `prefix` and the block's milliseconds,
appends on_exit(elapsed_ns), prints nothing when disabled, and works as a decorator."""
import re
import time

from tinylab.helpers import Context, GlobalCounters, Timing


def test_timing_prints_prefix_and_milliseconds(capsys):
    with Timing("step ") as timer:
        time.sleep(0.01)
    line = capsys.readouterr().out.strip()
    match = re.fullmatch(r"step +(\d+\.\d\d) ms", line)
    assert match, line
    assert float(match.group(1)) >= 10.0
    assert abs(float(match.group(1)) - timer.et * 1e-6) < 0.01  # the printed figure is .et


def test_timing_on_exit_gets_nanoseconds_and_appends_its_text(capsys):
    seen = []

    def on_exit(elapsed_ns):
        seen.append(elapsed_ns)
        return f" ({elapsed_ns} ns)"
    with Timing(on_exit=on_exit):
        time.sleep(0.002)
    line = capsys.readouterr().out.strip()
    assert seen and seen[0] >= 2_000_000
    assert line.endswith(f" ms ({seen[0]} ns)")


def test_timing_disabled_prints_nothing_but_still_measures(capsys):
    with Timing("quiet ", enabled=False) as timer:
        time.sleep(0.001)
    assert capsys.readouterr().out == ""
    assert timer.elapsed_ns >= 1_000_000


def test_timing_as_a_decorator_times_each_call(capsys):
    @Timing("call ")
    def work(x):
        return x + 1
    assert work(1) == 2 and work(2) == 3
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("call ") for line in lines)


def test_helpers_reexport_tinygrad_names():
    import tinylab
    assert Context is tinylab.Context and GlobalCounters is tinylab.GlobalCounters
