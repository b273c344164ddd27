"""``sftpack loss --device-map auto`` (accelerate placement) and the compiled head + cross-entropy, on CPU.

This machine has one device (the CPU), so the split itself is exercised on the GPU (benchmarks/loss_gpu.py
--split); here: the plan across pretend GPUs (sizes derived by hand), the refusal of a model too large before any
weight exists, the dispatched load path against the plain one, and compiled against eager."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sftpack.base.errors import UsageError
from sftpack.cli import main
from sftpack.rows import read_rows
from sftpack.rows.model import Piece, Row
from sftpack.rows.parquet_writer import RowWriter

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")

# A Llama whose layers dominate its size: hidden 64, 2 heads of 32 (1 KV head), MLP 256, vocabulary 77 (= 64 + 13:
# the compiled head splits it into an aligned block of 64 and a tail of 13, as Qwen3.5's 248,077 = 248,064 + 13).
H, HEAD_DIM, KV, MLP, V, LAYERS = 64, 32, 1, 256, 77, 4
LAYER_BYTES = 4 * (H * H + 2 * H * KV * HEAD_DIM + H * H + 3 * H * MLP + 2 * H)  # q, k+v, o, gate/up/down, 2 norms
EMBED_BYTES = 4 * V * H


def llama(meta: bool):
    from accelerate import init_empty_weights
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=V, hidden_size=H, intermediate_size=MLP, num_hidden_layers=LAYERS, num_attention_heads=2,
                         num_key_value_heads=KV, head_dim=HEAD_DIM, max_position_embeddings=256, tie_word_embeddings=False)
    if meta:
        with init_empty_weights():
            return LlamaForCausalLM(config)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # logits larger than the default init: the loss is not just log(vocab)
        model.lm_head.weight.normal_(0, 1.0)
    return model


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("llama64")
    llama(meta=False).save_pretrained(d)
    return str(d)


@pytest.fixture(scope="module")
def rows_path(tmp_path_factory):
    rng = np.random.default_rng(3)
    path = tmp_path_factory.mktemp("rows") / "rows.parquet"
    writer = RowWriter(path, 96, "small")
    for k in range(3):
        mask = (rng.random(96) < 0.5).astype(np.uint8)
        mask[0] = 0
        writer.write(Row(rng.integers(0, V, 96).astype(np.int32), mask, [Piece(f"c{k}", 0, 96, 0)]))
    writer.close()
    return str(path)


def loss_json(capsys, *argv) -> dict:
    assert main(["loss", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def one_line_error(capsys, *argv) -> str:
    assert main(["loss", *argv]) == 2
    err = "\n".join(line for line in capsys.readouterr().err.strip().splitlines()
                    if not line.startswith("sftpack loss"))  # the stage lines and the bar
    assert len(err.splitlines()) == 1, err
    return err


@pytest.fixture
def two_gpus(monkeypatch):
    """Pretend this machine has GPUs 0 and 1: planning reads only their count, never touches them."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


def test_the_plan_fills_gpu_0_then_offloads_the_rest_to_cpu(two_gpus):
    from sftpack.trainer.placement import plan_for

    assert LAYER_BYTES == 246_272  # the sizes the budgets below are derived from
    # accelerate keeps room on the GPU for the largest module left to offload (it runs there): embed + k layers + 1 layer <= budget.
    for budget, k in [(EMBED_BYTES + 2 * LAYER_BYTES - 1, 0), (EMBED_BYTES + 2 * LAYER_BYTES, 1),
                      (EMBED_BYTES + 3 * LAYER_BYTES + 100, 2)]:
        plan = plan_for(llama(meta=True), torch.float32, {0: budget, "cpu": 10**9})
        lines = plan.lines()
        on_gpu = f"{k} layer{'s' if k != 1 else ''} (0{'-' + str(k - 1) if k > 1 else ''}), " if k else ""
        assert lines[0] == f"cuda:0: {on_gpu}embed_tokens  [{(EMBED_BYTES + k * LAYER_BYTES) / 1024:.2f} KiB of weights]"
        rest = f"{LAYERS - k} layers ({k}-{LAYERS - 1})"
        assert lines[1].startswith(f"cpu (offloaded, runs on cuda:0): {rest}, norm, lm_head  [")
        # + final norm, + the rotary embedding's two fp32 buffers of head_dim / 2 frequencies
        assert plan.model_bytes == 2 * EMBED_BYTES + LAYERS * LAYER_BYTES + 4 * H + 2 * 4 * HEAD_DIM // 2
    whole = plan_for(llama(meta=True), torch.float32, {0: 10**7, "cpu": 10**9})
    assert whole.device_map == {"": 0} and whole.lines()[0].startswith("cuda:0: 4 layers (0-3), embed_tokens, norm, lm_head")
    # bf16 halves every size: embed + 3 layers + room for the 4th, at half the bytes.
    assert plan_for(llama(meta=True), torch.bfloat16, {0: (EMBED_BYTES + 4 * LAYER_BYTES) // 2, "cpu": 10**9}) \
        .lines()[0].startswith("cuda:0: 3 layers (0-2), embed_tokens  [")


def test_the_plan_spreads_over_two_gpus_in_layer_order(two_gpus):
    from sftpack.trainer.placement import plan_for

    plan = plan_for(llama(meta=True), torch.float32, {0: 600_000, 1: 600_000, "cpu": 10**9})
    layers = {}
    for name, device in plan.device_map.items():
        if name.startswith("model.layers."):
            layers[int(name.split(".")[2])] = device
    assert sorted(layers) == list(range(LAYERS))
    order = {0: 0, 1: 1, "cpu": 2}
    assert [order[layers[i]] for i in range(LAYERS)] == sorted(order[layers[i]] for i in range(LAYERS))  # contiguous
    assert {0, 1} <= set(layers.values())
    assert sum(1 for line in plan.lines() if line.startswith("cuda:")) == 2


def test_a_model_too_large_is_refused_before_any_weight_exists(rows_path, tmp_path, capsys):
    """Qwen3.5-122B-A10B's shape (48 layers, 256 experts of 3 x 3,072 x 1,024, vocabulary 248,320) as a
    Qwen3-MoE config with no weights at all: the refusal comes from the config alone."""
    from transformers import Qwen3MoeConfig

    h, layers, experts, mi, vocab, heads, kv, hd = 3072, 48, 256, 1024, 248_320, 32, 2, 256
    Qwen3MoeConfig(vocab_size=vocab, hidden_size=h, num_hidden_layers=layers, num_experts=experts, num_experts_per_tok=8,
                   moe_intermediate_size=mi, num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd,
                   tie_word_embeddings=False).save_pretrained(tmp_path)
    per_layer = (h * heads * hd + 2 * h * kv * hd + heads * hd * h + 2 * hd  # q, k, v, o, q/k norms
                 + h * experts + experts * 3 * h * mi + 2 * h)  # router, experts, 2 norms
    weights = 2 * (2 * vocab * h + layers * per_layer + h)  # bf16: embeddings, head, layers, final norm
    err = one_line_error(capsys, "--model", str(tmp_path), "--rows", rows_path, "--device-map", "auto",
                         "--max-memory", "cpu=200GiB")
    assert f"needs {weights / 2**30:.2f} GiB of weights in bfloat16" in err
    assert "--max-memory gives 200.00 GiB (cpu 200.00 GiB)" in err and "does not fit" in err


def test_dispatched_load_equals_the_plain_one(model_dir, rows_path, capsys):
    plain = loss_json(capsys, "--model", model_dir, "--rows", rows_path, "--device", "cpu", "--dtype", "float32")
    mapped = loss_json(capsys, "--model", model_dir, "--rows", rows_path, "--device-map", "auto", "--max-memory",
                       "cpu=1GiB", "--dtype", "float32")
    assert mapped["loss"] == pytest.approx(plain["loss"], rel=1e-6)
    assert abs(plain["loss"] - np.log(V)) > 0.1  # not a uniform predictor
    assert mapped["device_map"] == {"": "cpu"} and mapped["placement"][0].startswith("cpu: 4 layers (0-3), embed_tokens")
    assert main(["loss", "--model", model_dir, "--rows", rows_path, "--device-map", "auto", "--dtype", "float32"]) == 0
    out = capsys.readouterr().out
    assert "  placement  cpu: 4 layers (0-3)" in out and "head + CE  eager (--compile auto compiles only on CUDA)" in out


def test_usage_errors(model_dir, rows_path, capsys):
    for argv, message in [
        (["--device", "cpu", "--device-map", "auto"], "exclude each other"),
        (["--device", "cpu", "--max-memory", "cpu=1GiB"], "--max-memory goes with --device-map auto"),
        (["--device-map", "auto", "--max-memory", "disk=1GiB"], "disk offload is not supported"),
        (["--device-map", "auto", "--max-memory", "cpu"], "DEVICE=SIZE"),
        (["--device-map", "auto", "--max-memory", "cpu=lots"], "cpu=lots"),
        (["--device-map", "auto", "--max-memory", "3=1GiB,cpu=1GiB"], "there is no GPU 3"),
        (["--device-map", "auto", "--max-memory", "cpu=10KiB"], "does not fit"),
    ]:
        assert message in one_line_error(capsys, "--model", model_dir, "--rows", rows_path, *argv)


def soft_capped():
    from transformers import Gemma2Config, Gemma2ForCausalLM

    torch.manual_seed(1)
    model = Gemma2ForCausalLM(Gemma2Config(vocab_size=V, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                                           num_attention_heads=2, num_key_value_heads=1, head_dim=8,
                                           final_logit_softcapping=0.5))
    with torch.no_grad():
        model.get_output_embeddings().weight.normal_(0, 1.0)
    return model.float().eval()


def test_two_block_cross_entropy_equals_the_one_block_one():
    from sftpack.trainer.head import ALIGN, ce_sum, post

    assert ALIGN == 64
    torch.manual_seed(0)
    logits = torch.randn(9, V, dtype=torch.float64) * 3
    targets = torch.tensor([0, 5, 63, 64, 65, 76, 76, 12, 70])  # both blocks, both edges
    z = post(logits, 1.0, 0.5)
    expected = torch.nn.functional.cross_entropy(z, targets, reduction="sum").item()
    assert ce_sum(logits, targets, 1.0, 0.5).item() == pytest.approx(expected, rel=1e-12)
    assert ce_sum(logits[:, :64], targets, 1.0, 0.5, tail=logits[:, 64:]).item() == pytest.approx(expected, rel=1e-12)
    by_hand = sum(np.log(np.exp(z[i].numpy()).sum()) - z[i, targets[i]].item() for i in range(9))
    assert expected == pytest.approx(by_hand, rel=1e-12)


def test_compiled_equals_eager_with_soft_capping(rows_path):
    from sftpack.trainer.loss import step0_loss

    tokens, mask = read_rows(rows_path)
    model = soft_capped()
    eager = step0_loss(model, tokens, mask, chunk=7, dtype="float32", compile="no")
    compiled = step0_loss(model, tokens, mask, chunk=7, dtype="float32", compile="yes")  # chunks of 7 and shorter
    assert (eager["head_ce"], compiled["head_ce"]) == ("eager", "compiled"), compiled["head_ce_note"]
    assert compiled["loss"] == pytest.approx(eager["loss"], rel=1e-6)
    model.config.final_logit_softcapping = None  # the cap matters here: the comparison is not vacuous
    assert step0_loss(model, tokens, mask, dtype="float32", compile="no", check=False)["loss"] != \
        pytest.approx(eager["loss"], rel=1e-3)


def test_compile_failure_or_mismatch_falls_back_to_eager(rows_path, monkeypatch):
    import sftpack.trainer.head
    from sftpack.trainer.loss import step0_loss

    tokens, mask = read_rows(rows_path, slice(0, 1))
    model = soft_capped()
    eager = step0_loss(model, tokens, mask, dtype="float32", compile="no")

    def broken(*args):
        raise RuntimeError("no C++ compiler found\nmore detail")

    monkeypatch.setattr(sftpack.trainer.head, "_compiled", lambda: broken)
    got = step0_loss(model, tokens, mask, dtype="float32", compile="yes")
    assert got["head_ce"] == "eager" and got["head_ce_note"] == "torch.compile unavailable: RuntimeError: no C++ compiler found"
    assert got["loss"] == eager["loss"]
    monkeypatch.setattr(sftpack.trainer.head, "_compiled", lambda: lambda logits, *a: torch.ones((), dtype=torch.float64))
    got = step0_loss(model, tokens, mask, dtype="float32", compile="yes")
    assert got["head_ce"] == "eager" and "differs from the eager path" in got["head_ce_note"]
    assert got["loss"] == eager["loss"]
    with pytest.raises(UsageError, match="--compile maybe"):
        step0_loss(model, tokens, mask, dtype="float32", compile="maybe")
