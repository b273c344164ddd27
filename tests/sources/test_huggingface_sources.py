"""Sources a Hugging Face user already has: a `save_to_disk` directory, a hub dataset id at a revision (the real
`load_dataset(..., revision=)` against a hub on 127.0.0.1), and ShareGPT-shaped rows with `--sharegpt`.

Each builds exactly the rows of the same conversations given as a plain Tulu-schema file (the reference path),
and a source without `messages` says which columns it has and which one is expected.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import datasets
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

import sftpack
from helpers import REPO
from helpers.fake_hub import FakeHub
from helpers.small_vocabs import kimi_test_files
from sftpack.base.errors import UsageError
from sftpack.sources import SAMPLE_PATH

ROWS, ROW_TOKENS = 3, 1024
# ShareGPT's names for Tulu's roles, written out here (the product's mapping is the inverse of this)
SHAREGPT_FROM = {"user": "human", "assistant": "gpt", "system": "system"}


@pytest.fixture(scope="module")
def sample_rows():
    return pq.read_table(SAMPLE_PATH).slice(0, 400).to_pylist()


@pytest.fixture(scope="module")
def small_kimi(tmp_path_factory):
    directory = tmp_path_factory.mktemp("small-kimi")
    kimi_test_files(directory)
    return directory


def build(tmp_path, source, small_kimi, name: str, **kwargs):
    return sftpack.build(sftpack.BuildConfig(model="Kimi-K2.6", tokenizer=str(small_kimi), source=str(source),
                                             rows=ROWS, row_tokens=ROW_TOKENS, out=str(tmp_path / name), workers=1,
                                             progress=False, **kwargs))


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def as_sharegpt(row: dict) -> dict:
    turns = [{"from": SHAREGPT_FROM[m["role"]], "value": m["content"]} for m in row["messages"]]
    return {"id": row["id"], "conversations": turns}


@pytest.fixture(scope="module")
def reference(tmp_path_factory, sample_rows, small_kimi):
    tmp = tmp_path_factory.mktemp("reference")
    return build(tmp, write_jsonl(tmp / "tulu.jsonl", sample_rows), small_kimi, "ref")


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def test_a_save_to_disk_directory_builds_the_same_rows(tmp_path, sample_rows, small_kimi, reference):
    saved = tmp_path / "saved"
    datasets.Dataset.from_list(sample_rows).save_to_disk(str(saved))
    record = build(tmp_path, saved, small_kimi, "saved")
    assert record["rows_sha256"] == reference["rows_sha256"]
    assert record["dataset"]["source"] == "save_to_disk"

    splits = tmp_path / "splits"  # a DatasetDict: its train split
    datasets.DatasetDict({"train": datasets.Dataset.from_list(sample_rows),
                          "test": datasets.Dataset.from_list(sample_rows[:5])}).save_to_disk(str(splits))
    assert build(tmp_path, splits, small_kimi, "splits")["rows_sha256"] == reference["rows_sha256"]


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_sharegpt_rows_build_the_same_rows_with_the_role_mapping_recorded(tmp_path, sample_rows, small_kimi,
                                                                         reference, suffix):
    rows = [as_sharegpt(r) for r in sample_rows]
    path = tmp_path / f"sharegpt{suffix}"
    if suffix == ".jsonl":
        write_jsonl(path, rows)
    else:
        pq.write_table(pa.Table.from_pylist(rows), path)
    record = build(tmp_path, path, small_kimi, "sharegpt", sharegpt=True)
    assert record["rows_sha256"] == reference["rows_sha256"]
    assert record["dataset"]["shape"] == "sharegpt"
    assert record["dataset"]["roles"] == {"human": "user", "gpt": "assistant", "system": "system",
                                          "user": "user", "assistant": "assistant"}


@pytest.mark.parametrize("suffix", [".jsonl", ".parquet"])
def test_a_source_without_messages_names_the_columns_it_found_and_the_one_expected(tmp_path, sample_rows,
                                                                                  small_kimi, suffix):
    rows = [as_sharegpt(r) for r in sample_rows[:10]]
    path = tmp_path / f"sharegpt{suffix}"
    if suffix == ".jsonl":
        write_jsonl(path, rows)
    else:
        pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(UsageError) as error:
        build(tmp_path, path, small_kimi, "no-messages")
    message = str(error.value)
    assert "no `messages`" in message and "id, conversations" in message and "sharegpt=True" in message


def test_a_hub_dataset_id_at_a_revision_loads_through_load_dataset(tmp_path, small_kimi, sample_rows, reference):
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(sample_rows), buffer)
    commit, later = "c" * 40, "d" * 40
    out = tmp_path / "out"
    with FakeHub() as hub:
        hub.add_dataset("test-org/tulu-like", commit, {"data/train-00000-of-00001.parquet": buffer.getvalue()},
                        branch="v1")
        hub.add_dataset("test-org/tulu-like", later, {"data/train-00000-of-00001.parquet": b"not parquet"})
        env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
        env.update(PYTHONPATH=str(REPO), HF_ENDPOINT=hub.endpoint, HF_HOME=str(tmp_path / "hf-home"))
        result = subprocess.run(
            [sys.executable, "-m", "sftpack", "build", "--model", "Kimi-K2.6", "--tokenizer", str(small_kimi),
             "--source", "test-org/tulu-like@v1", "--rows", str(ROWS), "--row-tokens", str(ROW_TOKENS),
             "--out", str(out), "--workers", "1", "--no-progress"],
            env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
        asked = [path for _, path in hub.requests]
    assert result.returncode == 0, result.stderr
    record = yaml.safe_load(next(out.glob("*.build.yaml")).read_text(encoding="utf-8"))
    assert record["rows_sha256"] == reference["rows_sha256"]
    assert record["dataset"]["name"] == "test-org/tulu-like" and record["dataset"]["revision"] == commit
    assert any(f"/datasets/test-org/tulu-like/resolve/{commit}/data/" in path for path in asked)
    assert not any(later in path for path in asked)
