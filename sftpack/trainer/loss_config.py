"""What ``sftpack loss`` is asked to do: :class:`LossConfig`, one declaration per option (its flag, help and check),
as :class:`~sftpack.builder.config.BuildConfig` is for a build; the command's options are generated from it.

    >>> LossConfig(model="m", rows="r.parquet", limit=0)
    Traceback (most recent call last):
    ...
    sftpack.base.errors.UsageError: limit 0: must be at least 1
    >>> LossConfig(model="m", rows="r.parquet", device="cpu", device_map="auto")
    Traceback (most recent call last):
    ...
    sftpack.base.errors.UsageError: device and device_map exclude each other (device_map places the model itself)
"""

from __future__ import annotations

from dataclasses import dataclass

from sftpack.base.arguments import argument, check_options, option
from sftpack.base.errors import UsageError
from sftpack.trainer.head import COMPILE_MODES
from sftpack.trainer.placement import DEVICE_MAPS

DTYPES = ("bfloat16", "float16", "float32", "float64")


def _at_least_one(v, flag):
    return f"{flag} {v}: must be at least 1" if v < 1 else None


def dtype_problem(v, flag):
    return f"{flag} {v}: choose one of {', '.join(DTYPES)}" if v not in DTYPES else None


@dataclass(kw_only=True)
class LossConfig:
    model: str = option(help="Hugging Face model id or local directory")
    revision: str | None = option(None, help="model revision (branch, tag or commit)")
    rows: str = option(metavar="ROWS.parquet", help="rows parquet written by sftpack build")
    limit: int = option(128, kind=int, check=_at_least_one, help="first rows to evaluate (default: 128)")
    device: str | None = option(None, help="torch device (default: cuda when available, else cpu)")
    device_map: str | None = option(None, choices=DEVICE_MAPS, help="auto: place the model across every visible GPU "
                                    "(and CPU, offloaded) with accelerate; refused before any weight loads if it does "
                                    "not fit")
    max_memory: str | None = option(None, metavar="DEV=SIZE,...", accepts=(dict,), help="with --device-map: weights "
                                    "allowed per device, e.g. 0=60GiB,1=60GiB,cpu=200GiB (default: the free memory of "
                                    "each GPU and of the CPU)")
    compile: str = option("auto", choices=COMPILE_MODES, help="LM head + cross-entropy under torch.compile: auto "
                          "(default) when the head runs on CUDA; falls back to eager, saying why")
    dtype: str = option("bfloat16", check=dtype_problem, help="bfloat16 (default), float16, float32 or float64")
    chunk: int = option(1024, kind=int, check=_at_least_one,
                        help="positions per LM-head/cross-entropy chunk (default: 1024)")
    per_row: bool = option(False, kind=bool, help="also report each row's loss")
    trust_remote_code: bool = option(False, kind=bool, help="allow the model repository's own code")
    progress: bool = option(True, kind=bool, flag="--no-progress", help="no stage lines or bar on stderr")

    def __post_init__(self):
        check_options(self)
        if self.device_map is not None and self.device is not None:
            raise UsageError(f"{argument('device')} and {argument('device_map')} exclude each other "
                             f"({argument('device_map')} places the model itself)")
        if self.max_memory is not None and self.device_map is None:
            raise UsageError(f"{argument('max_memory')} goes with {argument('device_map')} auto")
