"""The wheel ships what the tool reads at run time: masks/, configs/, the sample, the rollout module."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sftpack.families.profiles import list_mask_rules, list_profiles, load_profile

REPO = Path(__file__).resolve().parent.parent


def test_every_profile_loads_and_names_a_known_rule():
    assert {"qwen3_5", "gemma4", "kimi_k25"} <= set(list_mask_rules())
    for model in list_profiles():
        profile = load_profile(model)
        assert profile.loss_mask in list_mask_rules() or profile.loss_mask == "inferred"  # from the checkpoint's template
        assert profile.build_name.endswith("-tulu3-fixed8192-v1")


def test_installed_package_ships_data_files(tmp_path):
    # A fresh interpreter outside the checkout sees the installed package, not the source tree.
    code = "import sftpack, pretokenized_sft_rollout as r; print(sftpack.__file__); print(r.__file__)"
    run = subprocess.run([sys.executable, "-I", "-c", code], cwd=tmp_path, capture_output=True, text=True)
    if run.returncode != 0:
        pytest.skip(f"sftpack is not installed in this interpreter: {run.stderr.strip().splitlines()[-1:]}")
    package = Path(run.stdout.split()[0]).parent
    if (package.parent / "pyproject.toml").exists():
        pytest.skip("editable install: the data files are a checkout's")
    for needed in ("masks/qwen3_5.yaml", "masks/gemma4.yaml", "masks/kimi_k25.yaml", "configs/Qwen3.5-122B-A10B.yaml",
                   "configs/Kimi-K2.6.yaml", "configs/Gemma-4-26B-A4B.yaml", "data/tulu3_sample.parquet"):
        assert (package / needed).is_file(), needed
    models = subprocess.run([sys.executable, "-I", "-m", "sftpack", "models"], cwd=tmp_path, capture_output=True, text=True)
    assert models.returncode == 0 and "Qwen3.5-122B-A10B" in models.stdout


def test_every_package_of_the_tree_is_in_the_wheel_list():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    listed = set(tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    tree = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "sftpack").rglob("__init__.py")}
    assert tree <= listed, sorted(tree - listed)
