"""verify says first when the hashes cannot match by construction, refuses up front a rebuild that cannot give
the recipe's rows, and a rows file renamed away from its build record still tells how it was built."""

from __future__ import annotations

import shutil

import pytest
import yaml

from helpers import REPO
from helpers.cli_outcomes import cli, one_error_line, offline_vocab_fixture

MODEL, PUBLISHED = "Qwen3.5-122B-A10B", "qwen35-tulu3-fixed8192-v1"
offline = offline_vocab_fixture(MODEL)
PROFILE = yaml.safe_load((REPO / "configs" / f"{MODEL}.yaml").read_text(encoding="utf-8"))


def recipe(tmp_path):
    """A recipe declaring the profile's published figures (OpenRecipes' workload.dataset layout)."""
    published = PROFILE["published"]
    build = {k: published[k] for k in ("rows", "row_tokens", "seed", "supervised_token_ratio", "parquet_sha256",
                                       "parquet_bytes", "tokenizer")}
    build.update(name=PROFILE["build_name"], loss_mask=PROFILE["loss_mask"], padding_tokens=0)
    data = {"model": MODEL, "workload": {"dataset": {"name": "allenai/tulu-3-sft-mixture",
                                                     "rows_sha256": published["rows_sha256"], "build": build}}}
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("built")
    from sftpack import BuildConfig, build

    build(BuildConfig(model=MODEL, source="sample", rows=64, seed=7, out=str(out), workers=1, progress=False))
    return out


def test_a_structural_mismatch_is_said_first(capsys, tmp_path):
    out = tmp_path / "rows"
    rc, _, err = cli(capsys, "build", "--model", MODEL, "--source", "sample", "--rows", "64", "--out", out,
                     "--no-progress", "--workers", "1")
    assert rc == 0, err
    rc, report, _ = cli(capsys, "verify", recipe(tmp_path), "--rows", out / f"{PUBLISHED}-rows64.parquet")
    assert rc == 1
    body = [line for line in report.splitlines() if line.strip()]
    assert "these rows are 64 of the recipe's 6,400" in body[1]  # right under the header, before the table
    assert "cannot match" in body[1] and "--rows 6400" in body[1]


def test_rebuilding_a_published_recipe_from_the_sample_is_refused_before_building(capsys, tmp_path, monkeypatch):
    from sftpack.builder import pipeline

    monkeypatch.setattr(pipeline, "_build", lambda *a, **k: pytest.fail("a build started"))
    rc, _, err = cli(capsys, "verify", recipe(tmp_path), "--rebuild", "--source", "sample")
    assert rc == 2
    one_error_line(err, "sample", "6,400")


def test_a_renamed_rows_file_still_reports_seed_loss_mask_and_tokenizer(capsys, tmp_path, built):
    name = f"{PUBLISHED}-seed7"
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
