"""`python -m tinylab.device`: list every backend, whether it works here, and if not, why.
`from tinylab.device import Device` is the same registry as `tinylab.Device`."""
from __future__ import annotations

from .engine.device import Device

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


if __name__ == "__main__":
    main()
