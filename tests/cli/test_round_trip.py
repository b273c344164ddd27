"""A new model's build round-trips by its record alone: the record keeps the profile file and its rule (path and
sha256) and the tokenizer directory, so inspect, diff and verify --rebuild need no flags; a profile changed since
the build is refused in one line."""

from __future__ import annotations

import yaml

from helpers.family_vocabs import save_template_stand_in_dir
from sftpack.cli import main

TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content | trim }}<|im_end|>\n{% endfor %}"
            "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_new_models_build_inspects_diffs_and_rebuilds_from_its_record(tmp_path, capsys):
    directory = save_template_stand_in_dir(tmp_path / "tokenizer", TEMPLATE, "<|im_end|>")
    code, _, err = run(capsys, "new-model", "--tokenizer", str(directory), "--name", "Tiny-Model", "--out",
                       str(tmp_path / "m"), "--rule", "tiny")
    assert code == 0, err
    profile = tmp_path / "m" / "configs" / "Tiny-Model.yaml"
    code, _, err = run(capsys, "build", "--model", str(profile), "--tokenizer", str(directory), "--source", "sample",
                       "--rows", "2", "--row-tokens", "512", "--workers", "1", "--out", str(tmp_path / "rows"),
                       "--no-progress")
    assert code == 0, err
    parquet, record = next((tmp_path / "rows").glob("*.parquet")), next((tmp_path / "rows").glob("*.build.yaml"))
    kept = yaml.safe_load(record.read_text(encoding="utf-8"))["model_files"]
    assert kept["profile"]["path"] == str(profile.resolve()) and kept["tokenizer"] == str(directory.resolve())
    assert kept["rule"]["path"].endswith("masks/qwen3.yaml") and len(kept["rule"]["sha256"]) == 64  # a shipped rule fits
    code, out, err = run(capsys, "inspect", str(parquet), "--row", "0")
    assert code == 0 and "<|im_start|>assistant" in out, err
    code, _, err = run(capsys, "diff", str(parquet), str(parquet))
    assert code == 0, err
    code, out, err = run(capsys, "verify", str(record), "--rebuild")
    assert code == 0, out + err
    profile.write_text(profile.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    code, out, err = run(capsys, "verify", str(record), "--rebuild")
    assert code == 2 and "changed since" in err and str(profile.resolve()) in err and err.count("\n") == 1, err
    code, out, err = run(capsys, "verify", str(record), "--rebuild", "--model", str(profile), "--tokenizer", str(directory))
    assert code == 0, out + err  # --model PATH names the profile to rebuild with


def test_a_shipped_profiles_record_keeps_no_files(tmp_path, capsys):
    code, _, err = run(capsys, "build", "--model", "Qwen3.5-122B-A10B", "--source", "sample", "--rows", "1",
                       "--row-tokens", "512", "--workers", "1", "--out", str(tmp_path), "--no-progress")
    assert code == 0, err
    assert "model_files" not in yaml.safe_load(next(tmp_path.glob("*.build.yaml")).read_text(encoding="utf-8"))
