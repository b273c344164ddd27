"""End to end: the Qwen3, Qwen3.8 and gpt-oss profiles build offline from the bundled sample, byte-identical
across runs and --workers, and verify, inspect, hash and the rollout work on the rows."""

from __future__ import annotations

import json
import types

import pyarrow.parquet as pq
import pytest
import yaml

from helpers.rows_fixtures import offline
from helpers.outputs import built
from sftpack import read_rows
from sftpack.cli import main
from sftpack.trainer.rollout import generate_rollout

# model -> (build name, tokenizer_source, eos token, eos id)
MODELS = {
    "Qwen3-30B-A3B": ("qwen3-tulu3-fixed8192-v1", "offline-reconstruction", "<|im_end|>", 151645),
    "Qwen3-32B": ("qwen3-tulu3-fixed8192-v1", "offline-reconstruction", "<|im_end|>", 151645),
    "Qwen3.8-27B": ("qwen38-tulu3-fixed8192-v1", "offline-reconstruction", "<|im_end|>", 248046),
    "gpt-oss-20b": ("gptoss-tulu3-fixed8192-v1", "offline-tiktoken", "<|return|>", 200002),
    "gpt-oss-120b": ("gptoss-tulu3-fixed8192-v1", "offline-tiktoken", "<|return|>", 200002),
}
ROWS, ROW_TOKENS = 6, 2048


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# The sizes of one family share tokenizer and template: the second size is built once and must give the same rows.
FAMILIES = [("Qwen3-30B-A3B", "Qwen3-32B"), ("Qwen3.8-27B",), ("gpt-oss-20b", "gpt-oss-120b")]


def build_cli(model, out, workers, capsys):
    code, _, err = run(["build", "--model", model, "--source", "sample", "--rows", str(ROWS), "--row-tokens",
                        str(ROW_TOKENS), "--out", str(out), "--workers", workers, "--no-progress"], capsys)
    assert code == 0, err


@pytest.mark.parametrize("models", FAMILIES, ids=lambda m: m[0])
def test_build_offline_deterministic_and_usable(models, tmp_path, capsys, o200k_caches):
    model = models[0]
    name, source, eos, eos_id = MODELS[model]
    with offline():
        build_cli(model, tmp_path / "a", "2", capsys)
        build_cli(model, tmp_path / "b", "1", capsys)
        parquet = built(tmp_path / "a", ".parquet")
        assert (built(tmp_path / "b", ".parquet")).read_bytes() == parquet.read_bytes()
        assert (built(tmp_path / "b", ".build.yaml")).read_bytes() == (built(tmp_path / "a", ".build.yaml")).read_bytes()
        outs = [tmp_path / "a"]
        for other in models[1:]:
            build_cli(other, tmp_path / other, "2", capsys)
            assert (built(tmp_path / other, ".parquet")).read_bytes() == parquet.read_bytes()
        record = yaml.safe_load((built(outs[0], ".build.yaml")).read_text(encoding="utf-8"))
        assert record["model"] == model and record["pinned"] is False and record["tokenizer_source"] == source
        assert record["eos_token"] == eos and record["eos_token_id"] == eos_id
        assert record["renderer"].startswith("native ")
        if model.startswith("gpt-oss"):
            assert record["renderer"].endswith("the template's clock (strftime_now) pinned to 2025-08-05 by the profile")
        tokens, mask = read_rows(parquet)
        assert tokens.shape == (ROWS, ROW_TOKENS) and (mask[:, 0] == 0).all() and mask.sum(axis=1).min() > 0
        assert (tokens == eos_id).any()  # conversations are joined by the EOS token
        code, out, _ = run(["hash", str(parquet)], capsys)
        assert code == 0 and out.split()[0] == record["rows_sha256"]
        code, out, err = run(["verify", str(built(outs[0], ".build.yaml")), "--rows", str(parquet)], capsys)
        assert code == 0, out + err
        ids = pq.read_table(parquet, columns=["conversation_ids"]).column(0).to_pylist()
        k = next(r for r, c in enumerate(ids) if len(c) >= 2)  # a row holding a conversation boundary
        code, out, err = run(["inspect", str(parquet), "--row", str(k), "--json"], capsys)
        assert code == 0, err
        view = json.loads(out)
        assert view["tokens"] == tokens[k].tolist() and view["loss_mask"] == mask[k].tolist()
        boundaries = [s for s in view["segments"] if s["kind"] == "eos"]
        assert len(boundaries) == len(ids[k]) - 1  # one EOS between consecutive conversations
        assert all(s["text"] == eos and s["end"] == s["start"] + 1 and not s["supervised"] for s in boundaries)
        assert all(tokens[k][s["start"]] == eos_id for s in boundaries)
    # the rollout hands the rows to the trainer as built
    buffer = types.SimpleNamespace(get_samples=lambda n: [[types.SimpleNamespace(
        prompt=f"sftpack row {k}", metadata={"row": k}, tokens=None, response_length=None, loss_mask=None, reward=None)]
        for k in range(n)])
    args = types.SimpleNamespace(prompt_data=str(parquet), rollout_batch_size=ROWS, input_key="messages", metadata_key="metadata")
    for k, (sample,) in enumerate(generate_rollout(args, 0, buffer)):
        assert sample.tokens == tokens[k].tolist()
        assert sample.loss_mask == mask[k].tolist()[-sample.response_length :] and sum(sample.loss_mask) == mask[k].sum()


def test_models_lists_the_new_profiles(capsys):
    code, out, _ = run(["models"], capsys)
    assert code == 0
    for model in MODELS:
        assert any(line.split()[0] == model for line in out.splitlines())
