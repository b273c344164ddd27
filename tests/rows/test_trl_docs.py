"""docs/trainers.md's TRL section runs as written: its `convert` command writes the TRL file, its first Python block
loads it, and its second (on CPU: ``use_cpu=True, bf16=False`` added) makes TRL's own ``SFTTrainer`` from a model
and a tokenizer directory, whose collator then
gives labels equal to the rows' loss mask and positions that restart at every conversation start (read from the
rows file the conversion started from)."""

from __future__ import annotations

import re
import shlex

import numpy as np
import pytest

pytest.importorskip("trl", reason="trl is not installed (the trainers extra)")
torch = pytest.importorskip("torch")

import sftpack  # noqa: E402
from helpers import REPO  # noqa: E402
from helpers.cli_outcomes import cli, offline_vocab_fixture  # noqa: E402
from helpers.qwen_reference import build_qwen_tokenizer_dir  # noqa: E402

offline_vocab = offline_vocab_fixture("Qwen3.5-122B-A10B")
SECTION = "## TRL and Megatron-Bridge"
ROWS = "out/qwen35-tulu3-fixed8192-v1-sample-rows64.parquet"  # the file the section converts


def section_blocks():
    text = (REPO / "docs" / "trainers.md").read_text(encoding="utf-8")
    section = text[text.index(SECTION):text.index("### Megatron-Bridge")]
    convert = next(line.split("#")[0].strip() for block in re.findall(r"```bash\n(.*?)```", section, re.S)
                   for line in block.splitlines() if "--to trl" in line)
    load, trainer = re.findall(r"```python\n(.*?)```", section, re.S)
    return convert, load, trainer


def test_the_trl_section_of_the_docs_makes_a_trainer_whose_batches_are_the_rows(tmp_path, capsys, monkeypatch):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    monkeypatch.chdir(tmp_path)
    rc, _, err = cli(capsys, "build", "--model", "Qwen3.5-122B-A10B", "--source", "sample", "--rows", "2", "--out",
                     "out", "--workers", "1", "--no-progress")
    assert rc == 0, err
    (tmp_path / "out" / "qwen35-tulu3-fixed8192-v1-sample-rows2.parquet").rename(tmp_path / ROWS)
    convert, load, make_trainer = section_blocks()
    argv = shlex.split(convert)
    assert argv[:2] == ["sftpack", "convert"] and ROWS in argv
    rc, _, err = cli(capsys, *argv[1:])
    assert rc == 0, err

    build_qwen_tokenizer_dir(tmp_path / "tokenizer", chat_template=None)
    config = Qwen2Config(vocab_size=248_320, hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8192)
    Qwen2ForCausalLM(config).save_pretrained(tmp_path / "model")
    names: dict = {"__name__": "__main__"}
    exec(compile(load, "docs/trainers.md", "exec"), names)
    code = make_trainer.replace('"MODEL_DIR"', repr(str(tmp_path / "model")))
    code = code.replace('"TOKENIZER_DIR"', repr(str(tmp_path / "tokenizer")))
    # the docs train on a GPU in bf16 (SFTConfig's default where one is); here on CPU, in fp32
    code = code.replace("SFTConfig(padding_free=True, max_length=None)",
                        "SFTConfig(padding_free=True, max_length=None, use_cpu=True, bf16=False)")
    assert code.count(repr(str(tmp_path))[:-1]) == 2 and "use_cpu=True" in code
    exec(compile(code, "docs/trainers.md", "exec"), names)
    trainer = names["trainer"]

    tokens, mask = sftpack.read_rows(tmp_path / ROWS)
    starts = [p.starts for p in sftpack.rows.read_all_provenance(tmp_path / ROWS)]
    batch = trainer.data_collator([trainer.train_dataset[k] for k in range(len(tokens))])
    flat_ids, labels, positions = (batch[key][0].numpy() for key in ("input_ids", "labels", "position_ids"))
    assert np.array_equal(flat_ids, tokens.reshape(-1))  # padding-free: the rows one after the other
    assert np.array_equal(labels != -100, mask.reshape(-1) == 1)
    assert np.array_equal(labels[mask.reshape(-1) == 1], flat_ids[mask.reshape(-1) == 1])
    width = tokens.shape[1]
    restarts = sorted({row * width + s for row, row_starts in enumerate(starts) for s in (0, *row_starts)})
    assert np.flatnonzero(positions == 0).tolist() == restarts
