"""`python -m tinylab.device`: list every backend, whether it works here, and if not, why, how
each is spelled and what it writes (all read from the backend registry, engine/backends.py), and
the CPU target a C backend plans and compiles for, with what its calibration measured, and its
roofs (engine/peak.py: compute and a bandwidth per memory level, the figures every view shows).
`from tinylab.device import Device` is the same registry as `tinylab.Device`."""
from __future__ import annotations


from .engine.backends import BACKENDS
from .engine.devices import Device
from .engine.peak import device_peak
from .runtimes.cpu import thread_placement
from .target.threads import thread_count

__all__ = ["Device"]


def main() -> None:
    rows = Device.status()
    width = max(len(name) for name, _, _ in rows)
    try:
        default = Device.DEFAULT
    except Exception as exc:  # noqa: BLE001 - show why nothing works
        default = f"none ({exc})"
    for name, ok, reason in rows:
        mark = "yes" if ok else "no "
        print(f"{name:<{width}}  {mark}  {reason}")
    print(f"Device.DEFAULT = {default}")
    for row in BACKENDS.values():
        spellings = ", ".join(row.aliases + ((row.null_alias + " (render-only)",)
                                             if row.null_alias else ()))
        print(f"  {row.name}: writes {row.language}" + (f"; also {spellings}" if spellings else ""))
    for row in BACKENDS.values():
        if row.cpu_target:
            _cpu_target(row)


def _cpu_target(row) -> None:
    try:
        runs = Device[row.name].target
        renders = Device[row.null_alias].target if row.null_alias else runs
    except Exception as exc:  # noqa: BLE001 - an unknown CPU_TARGET names the presets
        print(f"CPU target: none ({exc})")
        return
    print(f"CPU target: {runs.describe()}")
    print(f"CPU threads: {thread_placement(runs.cores, thread_count().source)}")
    if not runs.measured:
        print("calibration: off (TINYLAB_CALIBRATE=0): the model plans every kernel")
    if renders.key != runs.machine_key:
        print(f"{row.null_alias} target: {renders.describe()} (rendered only: this CPU cannot "
              "run it)")
    peak = device_peak(row.name)
    print(f"{row.name} roofs: compute {peak.flops_per_s / 1e9:.0f} GFLOPS; memory "
          f"{peak.roofs_text()} (the best ever measured on this CPU, as the inspector and the "
          "notebooks show them)")


if __name__ == "__main__":
    main()
