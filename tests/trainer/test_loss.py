"""``sftpack loss`` against a direct float64 computation: full logits, labels shifted by one, -100 on every
unsupervised target, ``cross_entropy(..., ignore_index=-100, reduction="sum")`` / count. Tiny random
transformers models on CPU; the torch tests skip cleanly when torch is absent."""

from __future__ import annotations

import json
import re
import sys

import numpy as np
import pytest

from helpers.rows_fixtures import tulu_jsonl
from sftpack.base.errors import UsageError
from sftpack.builder.pipeline import BuildConfig, build
from sftpack.cli import main
from sftpack.rows import read_rows
from sftpack.rows.model import Piece, Row
from sftpack.rows.parquet_writer import RowWriter

QWEN_VOCAB = 248_077  # Qwen3.5's real vocabulary size: the built rows hold ids up to ~248,070


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="module")
def rows_path(tmp_path_factory):
    """5 rows x 128 tokens built for Qwen3.5 (offline vocabulary)."""
    d = tmp_path_factory.mktemp("loss")
    tulu_jsonl(d / "src.jsonl", n=60, seed=1)
    record = build(BuildConfig(model="Qwen3.5-122B-A10B", source=str(d / "src.jsonl"), rows=5, row_tokens=128,
                               out=str(d / "out"), workers=1, progress=False))
    return str(record.paths.parquet)


def tiny(torch, kind: str, vocab: int, seed: int = 0):
    from transformers import Gemma2Config, Gemma2ForCausalLM, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    common = dict(vocab_size=vocab, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=1, max_position_embeddings=256)
    if kind == "llama":  # untied head: the head is not the embedding
        model = LlamaForCausalLM(LlamaConfig(tie_word_embeddings=False, **common))
    else:  # Gemma 2: final_logit_softcapping; a small cap so that it bites on a random model
        model = Gemma2ForCausalLM(Gemma2Config(head_dim=8, final_logit_softcapping=0.5, **common))
    with torch.no_grad():  # larger logits than the default init, so that the loss is not just log(vocab)
        model.get_output_embeddings().weight.normal_(0, 1.0)
    return model


@pytest.fixture(scope="module")
def llama_dir(torch, tmp_path_factory):
    d = tmp_path_factory.mktemp("llama")
    tiny(torch, "llama", QWEN_VOCAB).save_pretrained(d)
    return str(d)


def reference_loss(torch, model_dir: str, tokens, mask) -> tuple[float, list[float], int]:
    """Float64, full logits, shifted labels with -100 on unsupervised targets."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float64).eval()
    return reference_of_model(torch, model, tokens, mask)


def reference_of_model(torch, model, tokens, mask):
    total, count, per_row = 0.0, 0, []
    with torch.no_grad():
        for t, m in zip(tokens, mask):
            ids = torch.as_tensor(t, dtype=torch.long)[None]
            logits = model(input_ids=ids).logits[0].double()
            labels = ids[0].clone()
            labels[torch.as_tensor(m) == 0] = -100
            row = torch.nn.functional.cross_entropy(logits[:-1], labels[1:], ignore_index=-100, reduction="sum").item()
            n = int(m[1:].sum())
            total, count = total + row, count + n
            per_row.append(row / n)
    return total / count, per_row, count


def run_cli(capsys, *argv) -> dict:
    assert main(["loss", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_float64_loss_equals_the_direct_computation(torch, rows_path, llama_dir, capsys):
    tokens, mask = read_rows(rows_path)
    expected, per_row, count = reference_loss(torch, llama_dir, tokens[:3], mask[:3])
    got = run_cli(capsys, "--model", llama_dir, "--rows", rows_path, "--limit", "3", "--device", "cpu",
                  "--dtype", "float64", "--chunk", "7", "--per-row")  # chunks of 7: many chunk boundaries
    assert got["supervised_targets"] == count and got["rows"] == 3 and got["row_tokens"] == 128
    assert got["loss"] == pytest.approx(expected, rel=1e-12)
    assert [r["loss"] for r in got["per_row"]] == pytest.approx(per_row, rel=1e-12)
    assert got["peak_gpu_memory_bytes"] is None and got["tokens_per_second"] > 0
    assert abs(expected - np.log(QWEN_VOCAB)) > 0.1  # the test model is not a uniform predictor


def test_float32_default_chunk_and_text_output(torch, rows_path, llama_dir, capsys):
    tokens, mask = read_rows(rows_path)
    expected, _, _ = reference_loss(torch, llama_dir, tokens, mask)
    got = run_cli(capsys, "--model", llama_dir, "--rows", rows_path, "--device", "cpu", "--dtype", "float32")
    assert got["rows"] == 5  # --limit 128 > the file's rows: all of them
    assert got["loss"] == pytest.approx(expected, rel=1e-5)
    assert main(["loss", "--model", llama_dir, "--rows", rows_path, "--limit", "1", "--device", "cpu", "--dtype", "float32"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("loss ") and "tokens/s" in out and "not on CUDA" in out


def test_soft_capped_logits(torch, tmp_path):
    """Gemma 2's final_logit_softcapping is applied; rows with a small vocabulary written through RowWriter."""
    from sftpack.trainer.loss import step0_loss

    rng = np.random.default_rng(0)
    path = tmp_path / "rows.parquet"
    writer = RowWriter(path, 32, "small")
    for k in range(3):
        mask = (rng.random(32) < 0.6).astype(np.uint8)
        mask[0] = 0
        writer.write(Row(rng.integers(0, 300, 32).astype(np.int32), mask, [Piece(f"c{k}", 0, 32, 0)]))
    writer.close()
    tokens, mask = read_rows(path)
    model = tiny(torch, "gemma2", 300).double().eval()
    expected, _, _ = reference_of_model(torch, model, tokens, mask)
    got = step0_loss(model, tokens, mask, chunk=5, dtype="float64")
    assert got["loss"] == pytest.approx(expected, rel=1e-12)
    model.config.final_logit_softcapping = None  # without the cap the loss differs: the test is not vacuous
    assert step0_loss(model, tokens, mask, dtype="float64", check=False)["loss"] != pytest.approx(expected, rel=1e-3)


def test_unknown_logit_post_processing_is_refused(torch, rows_path):
    from transformers import LlamaForCausalLM

    from sftpack.trainer.loss import step0_loss

    class ScaledLlama(LlamaForCausalLM):  # like MiniCPM: logits scaled in forward, nothing in the config says so
        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            out.logits = out.logits * 0.25
            return out

    base = tiny(torch, "llama", QWEN_VOCAB)
    model = ScaledLlama(base.config)
    model.load_state_dict(base.state_dict())
    tokens, mask = read_rows(rows_path, slice(0, 1))
    with pytest.raises(UsageError, match="post-processes logits"):
        step0_loss(model.float().eval(), tokens, mask, dtype="float32")


def test_rows_of_another_vocabulary_are_refused(torch, rows_path):
    from sftpack.trainer.loss import step0_loss

    tokens, mask = read_rows(rows_path, slice(0, 1))
    with pytest.raises(UsageError, match="vocabulary has 1000 entries"):
        step0_loss(tiny(torch, "llama", 1000).eval(), tokens, mask, dtype="float32")


def test_without_torch_the_command_says_how_to_get_it(rows_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    assert main(["loss", "--model", "x", "--rows", rows_path]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "sftpack[loss]" in err


def test_usage_errors_are_one_line(torch, rows_path, llama_dir, tmp_path, capsys):
    for argv, message in [
        (["--model", str(tmp_path / "none"), "--rows", rows_path, "--device", "cpu"], "no such directory"),
        (["--model", llama_dir, "--rows", rows_path, "--device", "cpu", "--dtype", "int8"], "--dtype int8"),
        (["--model", llama_dir, "--rows", rows_path, "--device", "cpu", "--limit", "0"], "--limit 0"),
        (["--model", llama_dir, "--rows", str(tmp_path / "none.parquet"), "--device", "cpu"], "no such file"),
    ]:
        assert main(["loss", *argv]) == 2
        err = "\n".join(line for line in capsys.readouterr().err.strip().splitlines()
                        if not line.startswith("sftpack loss"))  # the stage lines and the bar
        assert len(err.splitlines()) == 1 and message in err, err


def test_the_command_line_says_each_stage_and_counts_the_rows(torch, rows_path, llama_dir, capsys):
    argv = ["loss", "--model", llama_dir, "--rows", rows_path, "--limit", "2", "--device", "cpu", "--dtype", "float32"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "sftpack loss: loading" in err and "checking the head on row 0" in err
    assert re.split(r"[\r\n]", err.strip())[-1].startswith("sftpack loss: 100%") and "2/2" in err
    assert main([*argv, "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
