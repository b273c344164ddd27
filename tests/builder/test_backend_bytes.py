"""The rows do not depend on the tokenizer engine: the bundled sample built with quicktok where it is exact (2
workers) and with tiktoken only (1 worker) gives the same parquet bytes for every family quicktok serves, and the
build record counts the packed conversations each engine encoded."""

from __future__ import annotations

import importlib.util
from importlib.metadata import version

import pytest

import sftpack

MODELS = ["Qwen3.5-122B-A10B", "Qwen3-30B-A3B", "gpt-oss-20b"]


@pytest.mark.parametrize("model", MODELS)
def test_forcing_tiktoken_gives_the_same_bytes(model, tmp_path, monkeypatch, o200k_caches):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    records, parquets = {}, {}
    for backend, workers in (("auto", 2), ("tiktoken", 1)):
        out = tmp_path / backend
        records[backend] = sftpack.build(sftpack.BuildConfig(model=model, source="sample", rows=24, out=str(out),
                                                             workers=workers, progress=False, tokenizer_backend=backend))
        parquets[backend] = records[backend].paths.parquet.read_bytes()
    auto, forced = records["auto"], records["tiktoken"]
    assert parquets["auto"] == parquets["tiktoken"]
    assert auto["rows_sha256"] == forced["rows_sha256"]
    packed = forced["counts"]["conversations_packed"]
    assert forced["tokenizer_backends"] == {f"tiktoken {version('tiktoken')}": packed}
    assert sum(auto["tokenizer_backends"].values()) == packed
    if importlib.util.find_spec("quicktok"):
        assert auto["tokenizer_backends"][f"quicktok-v1 {version('quicktok-v1')}"] > packed // 2
