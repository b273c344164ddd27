"""TRL's own ``SFTTrainer`` trains two steps (CPU) on a TRL-format rows file that ``datasets.load_dataset`` reads
as it is: the collated labels are the rows' loss mask, ``position_ids`` restart at every conversation start, and
each step's loss equals a computation that runs every document through the model on its own.

The rows are real Qwen3.5 rows renumbered to a dense vocabulary (a bijection: the same tokens, masks and
boundaries) so that a tiny randomly initialised Qwen2 model covers them."""

from __future__ import annotations

import copy

import numpy as np
import pytest

trl = pytest.importorskip("trl", reason="trl is not installed (the trainers extra)")
torch = pytest.importorskip("torch")

import sftpack  # noqa: E402
from helpers.trainer_rows import build_rows, dense_ids, documents  # noqa: E402
from sftpack.rows.formats import new_row_writer, open_rows_file  # noqa: E402
from sftpack.rows.model import Piece, Row  # noqa: E402

TRL_VERSION = "1.16.0"


def trl_rows(tmp_path, vocab):
    """The renumbered rows written in the TRL format; ``(path, tokens, mask, provenance, eos id)``."""
    source, record = build_rows(tmp_path, vocab)
    tokens, mask = sftpack.read_rows(source)
    provenance = sftpack.rows.read_all_provenance(source)
    ids, vocabulary = dense_ids(tokens)
    eos = int(np.searchsorted(vocabulary, vocab.eos_id))
    path = tmp_path / "rows.trl.parquet"
    writer = new_row_writer("trl", path, tokens.shape[1], "renumbered")
    for row, p in enumerate(provenance):
        pieces = [Piece(**piece) for piece in p.pieces()]
        writer.write(Row(ids[row], mask[row], pieces))
    writer.close()
    return path, ids, mask, provenance, eos


def tiny_model(vocab_size: int):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
                         tie_word_embeddings=True, attn_implementation="sdpa")
    return Qwen2ForCausalLM(config), config


def tiny_tokenizer(eos: int):
    """TRL takes the pad token from the tokenizer; nothing else of it is used for pre-tokenized rows."""
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    word_level = models.WordLevel({"<eos>": eos, "<unk>": eos + 1 if eos == 0 else 0}, unk_token="<unk>")
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer(word_level), pad_token="<eos>", eos_token="<eos>")


def sequence_loss(model, ids: np.ndarray, mask: np.ndarray, sequences: list[tuple[int, int, int]]) -> float:
    """Mean cross-entropy over the supervised targets of ``sequences`` ``(row, start, end)``, each sequence through
    the model alone (positions from 0, nothing else in it)."""
    total, count = 0.0, 0
    with torch.no_grad():
        for row, start, end in sequences:
            tokens = torch.tensor(ids[row, start:end], dtype=torch.long)[None]
            logits = model(input_ids=tokens).logits[0, :-1].double()
            weights = torch.tensor(mask[row, start + 1 : end], dtype=torch.double)
            losses = torch.nn.functional.cross_entropy(logits, tokens[0, 1:], reduction="none")
            total += float((losses * weights).sum())
            count += int(weights.sum())
    return total / count


def test_trl_sft_trainer_trains_on_the_rows_with_document_boundaries(tmp_path, offline_qwen):
    from datasets import load_dataset
    from trl import SFTConfig, SFTTrainer

    assert trl.__version__ == TRL_VERSION, "the format follows TRL's code at the version the trainers extra pins"
    path, ids, mask, provenance, eos = trl_rows(tmp_path, offline_qwen)
    row_tokens = ids.shape[1]
    dataset = load_dataset("parquet", data_files=str(path), split="train")
    assert {"input_ids", "assistant_masks", "seq_lengths"} <= set(dataset.column_names)
    assert any(len(p.starts) > 1 for p in provenance), "the rows must hold several conversations"

    model, config = tiny_model(int(ids.max()) + 1)
    seen, weights = [], []

    class Recording(SFTTrainer):
        """TRL's trainer; records each step's collated batch, the weights it starts from and its loss."""

        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            weights.append(copy.deepcopy(model.state_dict()))
            loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
            seen.append(({k: v.clone() if torch.is_tensor(v) else v for k, v in inputs.items()},
                         float((loss[0] if isinstance(loss, tuple) else loss).detach())))
            return loss

    args = SFTConfig(output_dir=str(tmp_path / "trl"), max_steps=2, per_device_train_batch_size=2, padding_free=True,
                     max_length=None, learning_rate=1e-2, logging_steps=1, report_to=[], save_strategy="no",
                     use_cpu=True, bf16=False, seed=0, dataloader_num_workers=0)  # fp32: the loss compares exactly
    Recording(model=model, args=args, train_dataset=dataset, processing_class=tiny_tokenizer(eos)).train()
    assert len(seen) == 2

    from transformers import Qwen2ForCausalLM

    for step, (batch, loss) in enumerate(seen):
        flat = batch["input_ids"][0].numpy()
        # padding-free: the batch's rows one after the other, found back by their tokens
        rows = [int(np.flatnonzero((ids == flat[k : k + row_tokens]).all(axis=1))[0])
                for k in range(0, len(flat), row_tokens)]
        assert len(rows) == 2 and len(flat) == 2 * row_tokens
        labels = batch["labels"][0].numpy()
        positions = batch["position_ids"][0].numpy()
        row_mask = np.concatenate([mask[r] for r in rows])
        # labels are the rows' mask: the token where the mask is 1, -100 where it is 0
        assert np.array_equal(labels != -100, row_mask == 1)
        assert np.array_equal(labels[row_mask == 1], flat[row_mask == 1])
        # position_ids restart (0) exactly at every conversation start of every row, and count up in between
        starts = np.concatenate([[k * row_tokens + s for s, _ in documents(provenance[r])] for k, r in enumerate(rows)])
        assert np.array_equal(np.flatnonzero(positions == 0), starts)
        expected = np.concatenate([np.arange(end - start) for r in rows for start, end in documents(provenance[r])])
        assert np.array_equal(positions, expected)
        # where TRL's padding-free collator sets labels to -100 itself (each document's first position), the
        # rows never have a target: a row's first token and a conversation's first token are never supervised
        assert not row_mask[starts].any()
        # the step's loss: every document on its own through the weights the step started from
        reference = Qwen2ForCausalLM(config)
        reference.load_state_dict(weights[step])
        reference.eval()
        isolated = sequence_loss(reference, ids, mask, [(r, s, e) for r in rows for s, e in documents(provenance[r])])
        assert loss == pytest.approx(isolated, rel=1e-6)
        # ... and not what the model gives when a row's documents see each other (the same targets)
        leaky = sequence_loss(reference, ids, mask, [(r, 0, row_tokens) for r in rows])
        assert leaky != pytest.approx(isolated, rel=1e-4)
