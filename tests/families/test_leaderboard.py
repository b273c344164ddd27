"""The 22 leaderboard models: every one has a profile; the 20 whose chat template is here build 64 sample rows
byte-identically at --workers 1 and 2; Nemotron-3-Super renders as Nano; GLM-5.2 and Muse-Spark infer and prove
their rule from the checkpoint's template at build time, and say in one line what to get without it."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import yaml

from helpers.family_vocabs import save_stand_in_dir
from helpers.rows_fixtures import offline, sample_conversations
from helpers.shared import jinja_render, official_template
from helpers.small_vocabs import SHARED_GEMMA4_TEMPLATE, kimi_test_files, save_gemma_test_tokenizer_dir
from sftpack.builder.config import BuildConfig
from sftpack.families.conversation import Skip, check_messages
from sftpack.builder.pipeline import build
from sftpack.cli import main
from sftpack.families.profiles import list_profiles, load_profile
from sftpack.families.template_match import probe_conversations
from sftpack.tokenizers.loading import load_vocab

LEADERBOARD = [
    "Qwen3.5-35B-A3B", "Qwen3.5-122B-A10B", "Qwen3.5-397B-A17B", "Qwen3.6-27B", "Qwen3.6-35B-A3B", "Qwen3.8-27B",
    "Qwen3-30B-A3B", "Qwen3-32B", "gpt-oss-20b", "gpt-oss-120b", "Gemma-4-26B-A4B", "Gemma-4-31B", "Kimi-K2.6",
    "MiniMax-M2", "Nemotron-3-Nano-30B-A3B", "Nemotron-3-Super-120B-A12B", "GLM-4.5", "GLM-4.7-Flash",
    "DeepSeek-V4-Flash", "Inkling-Small", "GLM-5.2-744B-A40B", "Muse-Spark-Open-816B-A42B",
]
NO_TEMPLATE_HERE = {"GLM-5.2-744B-A40B": "zai-org/GLM-5.2", "Muse-Spark-Open-816B-A42B": "meta-llama/Muse-Spark-Open-816B-A42B"}
# model -> the stand-in tokenizer directory it builds with (None: its offline vocabulary)
STAND_IN = {"Gemma-4-26B-A4B": "gemma", "Gemma-4-31B": "gemma", "Kimi-K2.6": "kimi", "MiniMax-M2": "minimax_m2",
            "Nemotron-3-Nano-30B-A3B": "nemotron3_nano", "Nemotron-3-Super-120B-A12B": "nemotron3_super",
            "GLM-4.5": "glm4_5", "GLM-4.7-Flash": "glm4_7_flash", "Inkling-Small": "inkling"}


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def stand_ins(tmp_path_factory):
    official_template("nemotron3_super.jinja")  # skips without ../shared
    root = tmp_path_factory.mktemp("stand-ins")
    # the Gemma stand-in carries the official gemma4.jinja, which only ../shared holds: without it, Gemma skips alone
    gemma = save_gemma_test_tokenizer_dir(root / "gemma") if SHARED_GEMMA4_TEMPLATE.exists() else None
    dirs = {"gemma": gemma, "kimi": root / "kimi"}
    kimi_test_files(dirs["kimi"])
    for family in ("minimax_m2", "nemotron3_nano", "glm4_5", "glm4_7_flash", "inkling"):
        dirs[family] = save_stand_in_dir(family, root / family)
    dirs["nemotron3_super"] = save_stand_in_dir("nemotron3_nano", root / "super", official_template("nemotron3_super.jinja"))
    return dirs


def test_every_leaderboard_model_has_a_profile_and_models_says_how_it_is_masked(capsys):
    assert sorted(LEADERBOARD) == sorted(list_profiles())
    code, out, _ = run(["models", "--json"], capsys)
    assert code == 0
    masked = {m["model"]: m["masked"] for m in json.loads(out)}
    assert masked == {m: "inferred at build" if m in NO_TEMPLATE_HERE else "inferred" if m == "Inkling-Small" else "native"
                      for m in LEADERBOARD}
    code, out, _ = run(["models"], capsys)
    assert code == 0 and len(out.splitlines()) == 1 + 22


def test_nemotron_nano_and_super_templates_render_tulu_conversations_identically():
    nano, super_ = official_template("nemotron3_nano.jinja"), official_template("nemotron3_super.jinja")
    assert nano != super_
    for messages in sample_conversations(150) + [c for c in probe_conversations() if check_ok(c)]:
        for prompt in (False, True):
            assert jinja_render(super_, messages, add_generation_prompt=prompt) == \
                jinja_render(nano, messages, add_generation_prompt=prompt)


def check_ok(messages) -> bool:
    try:
        check_messages(messages)
        return True
    except Skip:
        return False


def test_nemotron_super_builds_on_the_native_nemotron_renderer(stand_ins):
    from sftpack.families.encode import make_encoder

    profile = load_profile("Nemotron-3-Super-120B-A12B")
    encoder = make_encoder(profile, load_vocab(profile, str(stand_ins["nemotron3_super"])))
    assert encoder.renderer_description.startswith("native nemotron3_nano renderer (equal to the tokenizer's chat_template")


@pytest.mark.parametrize("model", sorted(NO_TEMPLATE_HERE))
def test_without_the_checkpoints_tokenizer_one_line_says_what_to_get(model, tmp_path, capsys):
    with offline():
        code, out, err = run(["build", "--model", model, "--source", "sample", "--rows", "2", "--out", str(tmp_path),
                              "--no-progress"], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"its tokenizer is {NO_TEMPLATE_HERE[model]}@" in err and "tokenizer_config.json" in err


def test_glm52_infers_and_proves_its_rule_from_the_checkpoints_template(stand_ins, tmp_path, capsys):
    # a GLM-4.7-format checkpoint (as miles runs GLM-5.2): the rule inferred at build time supervises exactly what
    # the shipped glm4_7_flash rule does, so the rows are GLM-4.7-Flash's
    if not has_template(stand_ins["glm4_7_flash"]):
        pytest.skip("the official GLM-4.7-Flash template is only in ../shared (beside the project in CI and dev sessions)")
    for model in ("GLM-5.2-744B-A40B", "GLM-4.7-Flash"):
        code, _, err = run(["build", "--model", model, "--tokenizer", str(stand_ins["glm4_7_flash"]), "--source", "sample",
                            "--rows", "8", "--row-tokens", "256", "--out", str(tmp_path / model), "--no-progress"], capsys)
        assert code == 0, err
    glm52 = pq.read_table(next((tmp_path / "GLM-5.2-744B-A40B").glob("*.parquet")), columns=["tokens", "loss_mask"])
    glm47 = pq.read_table(next((tmp_path / "GLM-4.7-Flash").glob("*.parquet")), columns=["tokens", "loss_mask"])
    assert glm52.equals(glm47)
    record = yaml.safe_load(next((tmp_path / "GLM-5.2-744B-A40B").glob("*.build.yaml")).read_text(encoding="utf-8"))
    assert record["loss_mask"] == "inferred" and "proved on" in record["renderer"]
    assert "loss-mask rule inferred from it: header '<|assistant|>', skipped ['<think>']" in record["renderer"]


def has_template(directory) -> bool:
    return "chat_template" in json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))


_VOCABS: dict = {}


def vocab_of(profile, directory):
    """One load per tokenizer: the sizes of a family share theirs (the Qwen3.5 vocabulary takes seconds)."""
    key = (directory, profile.offline_tokenizer, profile.eos_token, profile.tokenizer_format)
    if key not in _VOCABS:
        _VOCABS[key] = load_vocab(profile, directory)
    return _VOCABS[key]


@pytest.mark.parametrize("model", [m for m in LEADERBOARD if m not in NO_TEMPLATE_HERE])
def test_the_20_with_a_template_build_64_rows_identically_at_workers_1_and_2(model, stand_ins, tmp_path, o200k_caches):
    profile = load_profile(model)
    with offline():
        stand_in = stand_ins[STAND_IN[model]] if model in STAND_IN else None
        if model in STAND_IN and (stand_in is None or (profile.family.renderer(profile.template_options) is None
                                                       and not has_template(stand_in))):
            pytest.skip("the official template is only in ../shared (beside the project in CI and dev sessions)")
        vocab = vocab_of(profile, str(stand_in) if stand_in else None)
        parquets = []
        for workers in (1, 2):
            record = build(BuildConfig(model=model, source="sample", rows=64, row_tokens=256, out=str(tmp_path / str(workers)),
                                       workers=workers, progress=False), vocab=vocab)
            parquets.append(record.paths.parquet.read_bytes())
    assert record.rows == 64 and parquets[0] == parquets[1]
