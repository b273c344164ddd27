"""verify says first when the hashes cannot match by construction, refuses up front a rebuild that cannot give
the recipe's rows, and a rows file renamed away from its build record still tells how it was built."""

from __future__ import annotations

import shutil

import pytest
import yaml

from helpers import REPO
from helpers.cli_outcomes import cli, one_error_line, offline_vocab_fixture

MODEL, PUBLISHED = "Qwen3.5-122B-A10B", "qwen35-tulu3-fixed8192-v1"
TULU_REVISION = "b14afda60f1bbebe55d5d2fa1e4df5042f97f8be"  # the pinned Tulu 3 revision, written out whole
offline = offline_vocab_fixture(MODEL)
PROFILE = yaml.safe_load((REPO / "configs" / f"{MODEL}.yaml").read_text(encoding="utf-8"))


def recipe(tmp_path):
    """A recipe declaring the profile's published figures (OpenRecipes' workload.dataset layout)."""
    published = PROFILE["published"]
    build = {k: published[k] for k in ("rows", "row_tokens", "seed", "supervised_token_ratio", "parquet_sha256",
                                       "parquet_bytes", "tokenizer")}
    build.update(name=PROFILE["build_name"], loss_mask=PROFILE["loss_mask"], padding_tokens=0)
    data = {"model": MODEL, "workload": {"dataset": {"name": "Tulu 3 SFT mixture", "source": "allenai/tulu-3-sft-mixture",
                                                     "revision": TULU_REVISION, "rows_sha256": published["rows_sha256"],
                                                     "build": build}}}
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("built")
    from sftpack import BuildConfig, build

    build(BuildConfig(model=MODEL, source="sample", rows=64, seed=7, out=str(out), workers=1, progress=False))
    return out


def test_rows_from_the_sample_against_the_recipe_say_first_they_are_another_dataset(capsys, tmp_path):
    out = tmp_path / "rows"
    rc, _, err = cli(capsys, "build", "--model", MODEL, "--source", "sample", "--rows", "64", "--out", out,
                     "--no-progress", "--workers", "1")
    assert rc == 0, err
    rc, report, _ = cli(capsys, "verify", recipe(tmp_path), "--rows", out / f"{PUBLISHED}-sample-rows64.parquet")
    assert rc == 1
    body = [line for line in report.splitlines() if line.strip()]
    # right under the header, before the table: the dataset, with the recipe's full revision (the row count and a
    # "rebuild with --rows 6400" the sample could never satisfy are not the lead)
    assert body[1].startswith("  these rows come from the bundled sample (sha256 ")
    assert f"not the recipe's dataset allenai/tulu-3-sft-mixture@{TULU_REVISION}: the hashes cannot match" in body[1]
    assert "--rows 6400" not in report
    table = {line.split()[0]: line for line in body if line.startswith("  ") and line.split()}
    assert "✗ FAIL" in table["dataset"] and "✓ OK" in table["model"] and "✗ FAIL" in table["name"]
    # what these files cannot show, and the one command that would check it
    assert body[-1] == (f"not checked here: the rows allenai/tulu-3-sft-mixture@{TULU_REVISION} gives (the hub's "
                        f"dataset, not in these files); to check it where the Hugging Face hub is reachable: "
                        f"sftpack verify {recipe(tmp_path)} --rebuild")


def test_another_models_rows_say_so_first(capsys, tmp_path):
    out = tmp_path / "rows"
    rc, _, err = cli(capsys, "build", "--model", MODEL, "--source", "sample", "--rows", "8", "--out", out,
                     "--no-progress", "--workers", "1")
    assert rc == 0, err
    gemma = recipe(tmp_path)
    data = yaml.safe_load(gemma.read_text(encoding="utf-8"))
    data["model"] = "Gemma-4-26B-A4B"
    gemma.write_text(yaml.safe_dump(data), encoding="utf-8")
    rc, report, _ = cli(capsys, "verify", gemma, "--rows", out / f"{PUBLISHED}-sample-rows8.parquet")
    assert rc == 1
    assert report.splitlines()[1] == (f"  these rows are another model's ({MODEL}), not the recipe's Gemma-4-26B-A4B: "
                                      "the hashes cannot match")


def test_a_structural_mismatch_is_said_first(capsys, tmp_path):
    rc, _, err = cli(capsys, "build", "--model", MODEL, "--source", "sample", "--rows", "64", "--out",
                     tmp_path / "a", "--no-progress", "--workers", "1")
    assert rc == 0, err
    rc, _, err = cli(capsys, "build", "--model", MODEL, "--source", "sample", "--rows", "32", "--out",
                     tmp_path / "b", "--no-progress", "--workers", "1")
    assert rc == 0, err
    rc, report, _ = cli(capsys, "verify", tmp_path / "a" / f"{PUBLISHED}-sample-rows64.build.yaml", "--rows",
                        tmp_path / "b" / f"{PUBLISHED}-sample-rows32.parquet")
    assert rc == 1
    body = [line for line in report.splitlines() if line.strip()]
    assert body[1] == ("  these rows are 32 of the declaration's 64: the hashes cannot match; rebuild with --rows 64")


def test_rebuilding_a_hub_recipe_offline_says_what_would_work(capsys, tmp_path, monkeypatch):
    from sftpack.builder import pipeline

    monkeypatch.setattr(pipeline, "_build", lambda *a, **k: pytest.fail("a build started"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc, _, err = cli(capsys, "verify", recipe(tmp_path), "--rebuild")
    assert rc == 2
    line = one_error_line(err, f"allenai/tulu-3-sft-mixture@{TULU_REVISION}", "unreachable")
    assert line.endswith("run verify --rebuild where the hub is reachable, or add --source PATH (a local copy of "
                         "that revision)") and "--source sample" not in line and "--source hub" not in line


def test_rebuilding_a_published_recipe_from_the_sample_is_refused_before_building(capsys, tmp_path, monkeypatch):
    from sftpack.builder import pipeline

    monkeypatch.setattr(pipeline, "_build", lambda *a, **k: pytest.fail("a build started"))
    rc, _, err = cli(capsys, "verify", recipe(tmp_path), "--rebuild", "--source", "sample")
    assert rc == 2
    line = one_error_line(err, "sample", "6,400", f"allenai/tulu-3-sft-mixture@{TULU_REVISION}")
    assert "--source hub" not in line  # never a suggestion that cannot work offline


def test_a_renamed_rows_file_still_reports_seed_loss_mask_and_tokenizer(capsys, tmp_path, built):
    name = f"{PUBLISHED}-sample-seed7"
    renamed = tmp_path / "renamed.parquet"
    shutil.copy(built / f"{name}-rows64.parquet", renamed)  # no build record beside it any more
    rc, report, err = cli(capsys, "verify", built / f"{name}-rows64.build.yaml", "--rows", renamed)
    assert rc == 0, report + err
    lines = {line.split()[0]: line for line in report.splitlines() if line.startswith("  ") and line.split()}
    for field in ("seed", "loss_mask"):
        assert "✓ OK" in lines[field] and name in lines[field], lines[field]
    assert "seed7" in lines["seed"] and " 7 " in lines["seed"]

    rc, summary, err = cli(capsys, "inspect", renamed)
    assert rc == 0, err
    assert "seed 7" in summary and "loss mask qwen3_5" in summary and "tokenizer" in summary
