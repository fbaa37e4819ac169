"""The one choke point for NVML calls.

Every call goes through :func:`NvmlSession.call`, which returns the value or an
:class:`Unavailable` carrying a sentence that says why — never an exception. A missing driver is
a state, not an error. The ``pynvml`` module (from the ``nvidia-ml-py`` distribution) is passed
in, so tests substitute a scenario-driven fake at the binding boundary and the real mapping code
runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

T = TypeVar("T")

# NVML return codes (nvml.h); kept here so a fake module need not define them.
ERROR_UNINITIALIZED = 1
ERROR_INVALID_ARGUMENT = 2
ERROR_NOT_SUPPORTED = 3
ERROR_NO_PERMISSION = 4
ERROR_NOT_FOUND = 6
ERROR_INSUFFICIENT_POWER = 8
ERROR_DRIVER_NOT_LOADED = 9
ERROR_TIMEOUT = 10
ERROR_LIBRARY_NOT_FOUND = 12
ERROR_FUNCTION_NOT_FOUND = 13
ERROR_CORRUPTED_INFOROM = 14
ERROR_GPU_IS_LOST = 15
ERROR_RESET_REQUIRED = 16
ERROR_LIB_RM_VERSION_MISMATCH = 18
ERROR_NO_DATA = 21
ERROR_DEPRECATED = 26
ERROR_NOT_READY = 27
ERROR_UNKNOWN = 999

_REASONS: dict[int, str] = {
    ERROR_UNINITIALIZED: "NVML was not initialised",
    ERROR_INVALID_ARGUMENT: "NVML rejected the query as invalid for this device",
    ERROR_NOT_SUPPORTED: "not supported on this GPU or driver",
    ERROR_NO_PERMISSION: "no permission to query it (needs access to /dev/nvidia* or root)",
    ERROR_NOT_FOUND: "NVML found no such device",
    ERROR_INSUFFICIENT_POWER: "the GPU reports insufficient external power (check its power cables)",
    ERROR_DRIVER_NOT_LOADED: "the NVIDIA kernel driver is not loaded",
    ERROR_TIMEOUT: "the GPU did not answer in time",
    ERROR_LIBRARY_NOT_FOUND: "the NVIDIA driver library libnvidia-ml was not found (no NVIDIA driver installed)",
    ERROR_FUNCTION_NOT_FOUND: "the installed NVIDIA driver is too old to provide this query",
    ERROR_CORRUPTED_INFOROM: "the GPU's infoROM is corrupted",
    ERROR_GPU_IS_LOST: "the GPU is lost: it stopped answering (fallen off the bus)",
    ERROR_RESET_REQUIRED: "the GPU needs a reset",
    ERROR_LIB_RM_VERSION_MISMATCH: (
        "the NVML library and the loaded kernel driver have different versions (driver updated without a reboot?)"
    ),
    ERROR_NO_DATA: "NVML has no data for it yet",
    ERROR_DEPRECATED: "this query is deprecated in the installed driver",
    ERROR_NOT_READY: "the GPU is not ready",
    ERROR_UNKNOWN: "NVML reported an unknown error",
}


@dataclass(frozen=True)
class Unavailable:
    """Why a value could not be read. ``code`` is the NVML return code when there is one."""

    reason: str
    code: int | None = None

    @property
    def gpu_lost(self) -> bool:
        return self.code == ERROR_GPU_IS_LOST


def reason_for_code(code: int | None) -> str:
    if code is None:
        return "NVML failed"
    return _REASONS.get(code, f"NVML error code {code}")


def import_pynvml() -> ModuleType | Unavailable:
    try:
        import pynvml  # the nvidia-ml-py distribution
    except Exception as exc:  # noqa: BLE001 - any import failure is "unavailable"
        return Unavailable(f"the nvidia-ml-py package is not importable ({type(exc).__name__}: {exc})")
    module: ModuleType = pynvml
    return module


class NvmlSession:
    """Wraps an initialised (or failed) NVML binding; all calls go through :meth:`call`."""

    def __init__(self, nvml: Any) -> None:
        self.nvml = nvml
        self._error_class: type[BaseException] | None = getattr(nvml, "NVMLError", None)

    def _unavailable_from(self, exc: BaseException, fn_name: str) -> Unavailable:
        code = getattr(exc, "value", None)
        if isinstance(code, int):
            reason = reason_for_code(code)
            if code == ERROR_FUNCTION_NOT_FOUND:
                reason = f"the installed NVIDIA driver is too old to provide {fn_name}"
            return Unavailable(reason, code)
        return Unavailable(f"{fn_name} failed: {type(exc).__name__}: {exc}")

    def call(self, fn_name: str, *args: Any) -> Any:
        """``nvml.<fn_name>(*args)``, or an :class:`Unavailable` saying why not."""
        fn: Callable[..., Any] | None = getattr(self.nvml, fn_name, None)
        if fn is None:
            return Unavailable(f"the installed nvidia-ml-py has no {fn_name} (upgrade it)")
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - the choke point: nothing escapes
            return self._unavailable_from(exc, fn_name)

    def first(self, *attempts: tuple[str, tuple[Any, ...]]) -> Any:
        """The first attempt that yields a value: prefer current APIs, fall back to older ones.

        Returns the last :class:`Unavailable` when none works, unless an earlier one said the
        GPU is lost (that wins, since it explains all the rest).
        """
        result: Any = Unavailable("no query attempted")
        for fn_name, args in attempts:
            result = self.call(fn_name, *args)
            if not isinstance(result, Unavailable) or result.gpu_lost:
                return result
        return result


def text(value: Any) -> str:
    """NVML strings arrive as ``str`` or ``bytes`` depending on the binding's version."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace").rstrip("\x00")
    return str(value)
