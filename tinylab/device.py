"""`python -m tinylab.device`: list every backend, whether it works here, and if not, why, and the
CPU target the C backend plans and compiles for, with what its calibration measured.
`from tinylab.device import Device` is the same registry as `tinylab.Device`."""
from __future__ import annotations

import dataclasses

from .engine.devices import Device

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
    try:
        runs, renders = Device["CPU"].target, Device["NULL:C"].target
    except Exception as exc:  # noqa: BLE001 - an unknown CPU_TARGET names the presets
        print(f"CPU target: none ({exc})")
        return
    print(f"CPU target: {runs.describe()}")
    if not runs.measured:
        print("calibration: off (TINYLAB_CALIBRATE=0): the model plans every kernel")
    if renders.key != dataclasses.replace(runs, micro_kernel=(), measured="").key:
        print(f"NULL:C target: {renders.describe()} (rendered only: this CPU cannot run it)")


if __name__ == "__main__":
    main()
