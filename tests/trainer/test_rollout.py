"""``pretokenized_sft_rollout.generate_rollout`` behind a slime-style loader, on rows from a real small build.

The loader is the test double of ``trainer_double`` (slime's and miles' ``read_file`` / ``Dataset`` /
``get_samples``, with and without a processor): it keeps ``row["messages"]`` as ``Sample.prompt`` and
``row["metadata"]`` as ``Sample.metadata``, and hands out deep-copied one-sample groups. What reaches the trainer is
checked against the bytes in the parquet and against the build record's ``rows_sha256``.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

import pretokenized_sft_rollout
from helpers.rows_fixtures import tulu_jsonl
from helpers.trainer_double import DataBuffer, Processor, Sample, slime_args, trainer_dataset
from sftpack import read_rows
from sftpack.builder.pipeline import BuildConfig, build
from sftpack.rows.model import Piece, Row
from sftpack.rows.parquet_writer import RowWriter
from sftpack.trainer.rollout import RolloutError, RowSource, generate_rollout, row_source

ROWS, ROW_TOKENS = 150, 64  # three row groups (64 + 64 + 22 rows)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(parquet path, build record) of a 150 x 64 Qwen3.5 build (offline vocabulary)."""
    d = tmp_path_factory.mktemp("rollout")
    tulu_jsonl(d / "src.jsonl")
    record = build(BuildConfig(model="Qwen3.5-122B-A10B", source=str(d / "src.jsonl"), rows=ROWS, row_tokens=ROW_TOKENS,
                               out=str(d / "out"), workers=1, progress=False))
    path = record.paths.parquet
    assert yaml.safe_load(record.paths.record.read_text())["rows_sha256"] == record["rows_sha256"]
    return str(path), record


# ------------------------------------------------------------------- the trainers' data path (test double)


def slime_dataset(path: str, **kw) -> list[Sample]:
    """slime and miles, text-only checkpoint (no processor)."""
    return trainer_dataset(path, **kw)


def vlm_dataset(path: str, **kw) -> list[Sample]:
    """slime and miles with a vision-language checkpoint: the processor demands a chat list prompt."""
    return trainer_dataset(path, processor=Processor(), **kw)


def first_supervised(mask) -> int:
    return next(i for i, v in enumerate(mask) if v)


# --------------------------------------------------------------------------------------------- the tests


@pytest.mark.parametrize("loader", [slime_dataset, vlm_dataset])
def test_every_row_reaches_the_trainer_as_built(built, loader):
    path, record = built
    tokens, mask = read_rows(path)
    buffer = DataBuffer(loader(path), shuffle=True)
    seen = {}
    for rollout_id in range(5):  # 5 x 32 = 160 > 150 rows: the last batch wraps into the next epoch
        groups = generate_rollout(slime_args(path), rollout_id, buffer)
        assert len(groups) == 32 and all(len(g) == 1 for g in groups)
        for (sample,) in groups:
            k = sample.metadata["row"]
            assert sample.prompt == [{"role": "user", "content": f"sftpack row {k}"}]
            assert all(type(x) is int for x in sample.tokens) and all(type(x) is int for x in sample.loss_mask)
            assert sample.tokens == tokens[k].tolist()
            assert sample.response_length == ROW_TOKENS - first_supervised(mask[k].tolist())
            assert sample.loss_mask == mask[k].tolist()[-sample.response_length :]
            assert sample.loss_mask[0] == 1 and mask[k][0] == 0  # position 0 is never a target
            assert sum(sample.loss_mask) == int(mask[k].sum())  # nothing supervised lies before the response
            assert sample.reward == 0
            seen.setdefault(k, sample)
    assert sorted(seen) == list(range(ROWS))
    # The trainer's view, re-packed as SPEC rule 10 hashes it, is the build record's rows_sha256.
    h = hashlib.sha256()
    for k in range(ROWS):
        s = seen[k]
        full_mask = [0] * (len(s.tokens) - s.response_length) + s.loss_mask
        h.update(np.array(s.tokens, "<i4").tobytes())
        h.update(bytes(full_mask))
    assert h.hexdigest() == record["rows_sha256"]


def test_shim_is_the_package_function():
    assert pretokenized_sft_rollout.generate_rollout is generate_rollout


def test_several_samples_per_prompt_and_sliced_prompt_data(built):
    path, _ = built
    tokens, _ = read_rows(path)
    samples = slime_dataset(path)[100:]  # slime's "path@[100:]" keeps absolute row ids in metadata
    groups = generate_rollout(slime_args(f"{path}@[100:]", batch=3), 0, DataBuffer(samples, n_samples_per_prompt=2))
    assert [[s.metadata["row"] for s in g] for g in groups] == [[100, 100], [101, 101], [102, 102]]
    assert all(s.tokens == tokens[s.metadata["row"]].tolist() for g in groups for s in g)


def test_reads_only_the_row_groups_a_batch_touches(built):
    path, _ = built
    tokens, mask = read_rows(path)
    source = RowSource(path)
    t, m = source.rows([5, 3])
    assert source.groups_decoded == 1 and (t == tokens[[5, 3]]).all() and (m == mask[[5, 3]]).all()
    source.rows([63, 64, 149])  # group 0 is cached; groups 1 and 2 are read
    assert source.groups_decoded == 3
    cold = RowSource(path, cache_mb=0)
    cold.rows([0]), cold.rows([0])
    assert cold.groups_decoded == 2  # no cache beyond the batch: read again


def test_reader_is_cached_per_file_and_reopened_when_it_changes(built, tmp_path):
    path, _ = built
    assert row_source(path) is row_source(path)
    copy_path = tmp_path / "copy.parquet"
    copy_path.write_bytes(open(path, "rb").read())
    first = row_source(str(copy_path))
    os.utime(copy_path, ns=(1, 1))
    assert row_source(str(copy_path)) is not first


# ------------------------------------------------------------------------------------------------- errors


def test_evaluation_is_refused(built):
    path, _ = built
    with pytest.raises(RolloutError, match="evaluation"):
        generate_rollout(slime_args(path), 0, DataBuffer(slime_dataset(path)), evaluation=True)


def test_sample_without_row_metadata_is_refused(built):
    path, _ = built
    buffer = DataBuffer([Sample(prompt="hello", metadata={}), Sample(prompt="x", metadata={"row": 1})])
    with pytest.raises(RolloutError, match=r"metadata\['row'\]") as e:
        generate_rollout(slime_args(path, batch=2), 0, buffer)
    assert path in str(e.value) and "'hello'" in str(e.value)


def test_foreign_rows_are_refused(built, tmp_path):
    path, _ = built
    tulu = tmp_path / "tulu.parquet"  # a Tulu-schema parquet given as --prompt-data
    pq.write_table(pa.table({"messages": ["hi"], "metadata": [{"row": 0}]}), tulu)
    with pytest.raises(RolloutError, match="not sftpack rows") as e:
        generate_rollout(slime_args(str(tulu), batch=1), 0, DataBuffer([Sample(prompt="hi", metadata={"row": 0})]))
    assert str(tulu) in str(e.value)
    with pytest.raises(RolloutError, match="row 150 does not exist"):
        generate_rollout(slime_args(path, batch=1), 0, DataBuffer([Sample(prompt="sftpack row 150", metadata={"row": 150})]))
    with pytest.raises(RolloutError, match="build 'other'"):
        generate_rollout(slime_args(path, batch=1), 0, DataBuffer([Sample(metadata={"row": 1, "build": "other"})]))
    with pytest.raises(RolloutError, match="names another row"):
        generate_rollout(slime_args(path, batch=1), 0, DataBuffer([Sample(prompt="sftpack row 9", metadata={"row": 1})]))
    with pytest.raises(RolloutError, match="(?i)no such file"):
        generate_rollout(slime_args(str(tmp_path / "missing.parquet"), batch=1), 0, DataBuffer([]))


def test_row_whose_position_0_is_a_target_is_refused(tmp_path):
    path = tmp_path / "bad.parquet"
    writer = RowWriter(path, 4, "bad")
    writer.write(Row(np.array([1, 2, 3, 4], np.int32), np.array([0, 1, 1, 0], np.uint8), [Piece("a", 0, 4, 0)]))
    writer.write(Row(np.array([5, 6, 7, 8], np.int32), np.array([1, 1, 0, 0], np.uint8), [Piece("b", 0, 4, 0)]))
    writer.close()
    samples = slime_dataset(str(path))
    groups = generate_rollout(slime_args(str(path), batch=1), 0, DataBuffer(samples))
    assert (groups[0][0].response_length, groups[0][0].loss_mask) == (3, [1, 1, 0])
    with pytest.raises(RolloutError, match=r"row 1: loss_mask\[0\] is 1") as e:
        generate_rollout(slime_args(str(path), batch=2), 0, DataBuffer(samples))
    assert str(path) in str(e.value)


def test_context_shorter_than_the_rows_is_refused(built):
    path, _ = built
    args = slime_args(path, batch=1)
    args.rollout_max_context_len = ROW_TOKENS - 1
    with pytest.raises(RolloutError, match="rollout-max-context-len"):
        generate_rollout(args, 0, DataBuffer(slime_dataset(path)))
