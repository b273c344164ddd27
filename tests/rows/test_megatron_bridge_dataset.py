"""Megatron-Bridge's own packed-sequence code reads a Megatron-Bridge-format rows file: its SFT split builder
(``build_gpt_sft_split``, what a recipe's ``packed_train_data_path`` goes through) picks
``GPTSFTPackedParquetDataset``, whose items are the rows' tokens, document starts and mask, and whose
``collate_fn`` yields the rows' tokens, next-token labels, loss mask and per-document ``cu_seqlens`` and
``position_ids``. How Megatron-Bridge's modules are loaded on a CPU-only Python 3.11 machine, and exactly which
two of its modules are stood in for, is in :mod:`helpers.megatron_bridge`."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import sftpack  # noqa: E402
from helpers import megatron_bridge  # noqa: E402
from helpers.trainer_rows import build_rows, documents  # noqa: E402


@pytest.fixture
def builder(tmp_path_factory):
    module, how = megatron_bridge.load_builder(tmp_path_factory.mktemp("megatron-bridge"))
    print(f"Megatron-Bridge {how}")
    yield module
    megatron_bridge.forget()


class Tokenizer:
    """What the packed dataset reads of Megatron-Bridge's tokenizer: the EOS id (its collate pads with it and
    takes no loss where the input token is EOS)."""

    def __init__(self, eos_id: int):
        self.eos_id = eos_id


def test_megatron_bridge_dataset_reads_the_rows(builder, tmp_path, offline_qwen):
    path, record = build_rows(tmp_path, offline_qwen, fmt="megatron-bridge")
    assert path.name.endswith(".idx.parquet")
    parquet, _ = build_rows(tmp_path, offline_qwen)
    tokens, mask = sftpack.read_rows(parquet)  # the parquet build, read by sftpack's parquet reader
    provenance = sftpack.rows.read_all_provenance(parquet)
    rows, row_tokens = tokens.shape
    eos = offline_qwen.eos_id

    dataset = builder.build_gpt_sft_split(str(path), tokenizer=Tokenizer(eos), seq_length=row_tokens,
                                          memmap_workers=1, seed=1234, packed_sequence_size=row_tokens,
                                          pad_seq_to_mult=1)
    assert type(dataset).__name__ == "GPTSFTPackedParquetDataset" and len(dataset) == rows
    for row in range(rows):
        item = dataset[row]
        ends = [end for _, end in documents(provenance[row])]
        assert item["input_ids"] == tokens[row].tolist()
        assert item["seq_boundaries"] == [0] + ends
        # Megatron-Bridge's convention: entry i says whether token i + 1 is a target
        assert item["loss_mask"] == mask[row, 1:].tolist() + [0]

    batch = dataset.collate_fn([dataset[row] for row in range(rows)])
    width = batch["tokens"].shape[1]
    for row in range(rows):
        docs = documents(provenance[row])
        inputs = np.concatenate([tokens[row, s : e - 1] for s, e in docs])
        targets = np.concatenate([tokens[row, s + 1 : e] for s, e in docs])
        supervised = np.concatenate([mask[row, s + 1 : e] for s, e in docs])
        n = len(inputs)
        assert batch["tokens"][row, :n].tolist() == inputs.tolist()
        assert batch["labels"][row, :n].tolist() == targets.tolist()
        assert batch["position_ids"][row, :n].tolist() == [k for s, e in docs for k in range(e - s - 1)]
        cu_seqlens = np.concatenate([[0], np.cumsum([e - s - 1 for s, e in docs])]).tolist()
        got = batch["cu_seqlens_q"][row].tolist()
        assert got[: len(cu_seqlens)] == cu_seqlens and set(got[len(cu_seqlens) :]) <= {width}
        # the loss mask is the rows' mask on the targets, except where Megatron-Bridge's collate drops the loss
        # itself: an input token equal to the tokenizer's EOS (for Qwen, <|im_end|>: the newline after it)
        loss_mask = batch["loss_mask"][row, :n].numpy()
        dropped = (inputs == eos) & (supervised == 1)
        assert np.array_equal(loss_mask, np.where(dropped, 0, supervised))
        assert not batch["loss_mask"][row, n:].any()
    assert sum(int(mask[r, s + 1 : e].sum()) for r in range(rows) for s, e in documents(provenance[r])) == mask.sum()
