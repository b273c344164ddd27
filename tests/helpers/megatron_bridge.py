"""Megatron-Bridge's own packed-sequence dataset code, loaded for the tests.

Megatron-Bridge 0.6.x cannot be installed or imported whole on the CI machine (CPU, Python 3.11,
transformers 5.2x, megatron-core 0.16.1, the last release for Python 3.11):

1. ``pip install megatron-bridge==0.6.2`` refuses: the wheel declares ``Requires-Python >=3.12``. CI downloads the
   wheel (``pip download --no-deps --python-version 3.12 --only-binary=:all: megatron-bridge==0.6.2``) and names it
   in ``SFTPACK_MEGATRON_BRIDGE``; the modules are read from it.
2. ``import megatron.bridge`` fails: its ``__init__`` imports every model bridge, and
   ``megatron/bridge/models/bailing/modeling_bailing_moe_v2.py`` line 31 imports
   ``transformers.modeling_attn_mask_utils``, which transformers 5.2x no longer has (Megatron-Bridge pins
   ``transformers<=5.12.1``). The same happens through ``megatron.bridge.data``'s and
   ``megatron.bridge.data.builders``' ``__init__`` (they import every builder, down to the models). So those three
   packages are entered without running their ``__init__``; every module below them is Megatron-Bridge's own file.
3. ``megatron/bridge/training/tokenizers/tokenizer.py`` line 12 imports
   ``megatron.core.tokenizers.utils.build_tokenizer`` (megatron-core >= 0.17, Python >= 3.12 only). Replaced by a
   module holding only the name ``MegatronTokenizer``, which the reader's path uses as a type annotation; the test
   passes an object with ``eos_id``, the one attribute the packed dataset's collate reads.
4. ``megatron/bridge/utils/common_utils.py`` line 26 imports ``megatron.core._rank_utils.safe_get_world_size``
   (megatron-core >= 0.17). Replaced by a module with the four functions the data path imports from it, as
   Megatron-Bridge defines them for one process: ``get_rank_safe`` (0), ``print_rank_0`` (print),
   ``get_local_rank_preinit`` (0), ``resolve_path`` (``Path(p).expanduser().absolute().resolve()``).

Everything else runs as shipped: ``megatron.bridge.data.builders.gpt_sft.build_gpt_sft_split`` (what a recipe's
``packed_train_data_path`` goes through), ``packing.paths``, ``packing.parquet.GPTSFTPackedParquetDataset``,
``packing.gpt_sft.GPTSFTPackedDataset.collate_fn``, ``datasets.gpt_sft.GPTSFTDataset`` and megatron-core's
``msc_utils``. Where Megatron-Bridge imports whole (Python 3.12 with its own pins), no stand-in is used.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import types
import zipfile
from pathlib import Path

import pytest

VERSION = "0.6"
STAND_INS = ("megatron.bridge.training.tokenizers.tokenizer", "megatron.bridge.utils.common_utils")
ENTERED_WITHOUT_INIT = ("megatron.bridge", "megatron.bridge.data", "megatron.bridge.data.builders")


def _source(tmp_dir: Path) -> Path | None:
    """The directory holding ``megatron/bridge``: $SFTPACK_MEGATRON_BRIDGE (a wheel or a directory), else None."""
    given = os.environ.get("SFTPACK_MEGATRON_BRIDGE")
    if not given:
        return None
    given = Path(given)
    if given.is_dir():
        return given
    if not given.is_file():
        pytest.skip(f"SFTPACK_MEGATRON_BRIDGE={given} does not exist")
    with zipfile.ZipFile(given) as wheel:
        names = [n for n in wheel.namelist() if n.startswith("megatron/bridge/")]
        wheel.extractall(tmp_dir, names)
        versions = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = wheel.read(versions[0]).decode() if versions else ""
    version = next((line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Version:")), "")
    if not version.startswith(VERSION):
        pytest.skip(f"{given} is megatron-bridge {version or '?'}, not {VERSION}.x")
    return tmp_dir


def _forget() -> None:
    for name in [n for n in sys.modules if n == "megatron.bridge" or n.startswith("megatron.bridge.")]:
        del sys.modules[name]


def _enter_without_init(root: Path) -> None:
    for name in ENTERED_WITHOUT_INIT:
        package = types.ModuleType(name)
        package.__path__ = [str(root.joinpath(*name.split(".")))]
        sys.modules[name] = package


def _stand_ins() -> None:
    class MegatronTokenizer:  # only an annotation on the reader's path
        pass

    tokenizer = types.ModuleType(STAND_INS[0])
    tokenizer.MegatronTokenizer = MegatronTokenizer
    common = types.ModuleType(STAND_INS[1])
    common.get_rank_safe = lambda: 0
    common.print_rank_0 = lambda message: print(message, flush=True)
    common.get_local_rank_preinit = lambda: 0
    common.resolve_path = lambda path: Path(path).expanduser().absolute().resolve()
    sys.modules[STAND_INS[0]], sys.modules[STAND_INS[1]] = tokenizer, common


def load_builder(tmp_dir: Path):
    """``(megatron.bridge.data.builders.gpt_sft module, how it was loaded)``; skips the test when neither an
    installed Megatron-Bridge nor $SFTPACK_MEGATRON_BRIDGE is there, or megatron-core is missing."""
    pytest.importorskip("megatron.core", reason="megatron-core is not installed (the trainers extra)")
    root = _source(tmp_dir)
    if root is not None:
        sys.path.insert(0, str(root))
    elif importlib.util.find_spec("megatron.bridge") is None:
        pytest.skip("Megatron-Bridge is not here: set SFTPACK_MEGATRON_BRIDGE to its 0.6.x wheel (.ci/run does)")
    on_path = root
    try:
        try:
            return importlib.import_module("megatron.bridge.data.builders.gpt_sft"), "imported whole"
        except ImportError:
            _forget()
        if root is None:  # installed: the directory holding megatron/bridge/__init__.py
            root = Path(importlib.util.find_spec("megatron.bridge").origin).parents[2]
        _enter_without_init(root)
        _stand_ins()
        return importlib.import_module("megatron.bridge.data.builders.gpt_sft"), "with the stand-ins above"
    finally:
        if on_path is not None:
            sys.path.remove(str(on_path))


def forget() -> None:
    """Drop Megatron-Bridge's modules and the stand-ins from ``sys.modules`` (after the test)."""
    _forget()
