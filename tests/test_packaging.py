"""The wheel ships what the tool reads at run time: masks/, configs/, the sample, the rollout module."""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, distribution, files

import pytest

from sftpack.profiles import list_mask_rules, list_profiles, load_profile


def test_every_profile_loads_and_names_a_known_rule():
    assert {"qwen3_5", "gemma4", "kimi_k25"} <= set(list_mask_rules())
    for model in list_profiles():
        profile = load_profile(model)
        assert profile.loss_mask in list_mask_rules()
        assert profile.build_name.endswith("-tulu3-fixed8192-v1")


def test_installed_distribution_ships_data_files():
    try:
        shipped = {str(f) for f in files("sftpack") or []}
    except PackageNotFoundError:
        pytest.skip("sftpack is not installed (running from a source checkout)")
    direct = json.loads(distribution("sftpack").read_text("direct_url.json") or "{}")
    if direct.get("dir_info", {}).get("editable"):
        pytest.skip("editable install: files live in the checkout")
    for needed in ("sftpack/masks/qwen3_5.yaml", "sftpack/masks/gemma4.yaml", "sftpack/masks/kimi_k25.yaml",
                   "sftpack/configs/Qwen3.5-122B-A10B.yaml", "sftpack/configs/Kimi-K2.6.yaml",
                   "sftpack/data/tulu3_sample.parquet", "pretokenized_sft_rollout.py"):
        assert needed in shipped, needed
