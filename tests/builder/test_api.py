"""The library's seams: BuildConfig (one declaration per option, checked), build(config, vocab=, source=), the
typed build record, the cached encoder, and a Python user's errors and warnings."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

import sftpack
from sftpack.base.errors import UsageError
from sftpack.builder.config import BuildConfig
from sftpack.builder.record import BuildRecord
from sftpack.sources.memory import source_from_rows
from sftpack.cli import main, make_parser

MODEL = "Qwen3.5-122B-A10B"
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kwargs, message", [
    ({"rows": 2.5}, "rows must be a whole number or 'all' (got 2.5)"),
    ({"rows": True}, "rows must be a whole number or 'all' (got True)"),
    ({"rows": "2"}, "rows must be a whole number or 'all' (got '2')"),
    ({"rows": "every"}, "rows must be a whole number or 'all' (got 'every')"),
    ({"seed": "42"}, "seed must be an integer (got '42')"),
    ({"model": None}, "model must be a string (got None)"),
    ({"rows": 0}, "rows must be at least 1 (got 0)"),
    ({"row_tokens": 1}, "row_tokens must be at least 2: position 0 is never a target (got 1)"),
    ({"seed": -1}, "seed must be a non-negative integer (got -1)"),
    ({"workers": -1}, "workers must be 0 (all cores) or more (got -1)"),
    ({"workers": 257}, "workers must be at most 256 (got 257)"),
    ({"overwrite": "yes"}, "overwrite must be True or False (got 'yes')"),
    ({"name": "a\nb"}, "name 'a\\nb': a plain file name is needed"),
    ({"dataset_revision": "abc", "source": "sample"}, "dataset_revision applies to source hub or a hub dataset id only"),
])
def test_build_config_checks_types_and_ranges_in_one_place(kwargs, message, tmp_path):
    with pytest.raises(UsageError) as e:
        sftpack.build(BuildConfig(**{"model": MODEL, "source": "sample", "out": str(tmp_path), **kwargs}))
    assert str(e.value).startswith(message) and "\n" not in str(e.value)
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_paths_are_accepted_from_python(tmp_path):
    config = BuildConfig(model=MODEL, out=tmp_path, tokenizer=tmp_path)
    assert config.out == str(tmp_path) and config.tokenizer == str(tmp_path)


def test_build_and_verify_options_are_generated_from_build_config():
    parser = make_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices
    build_flags = {a.dest: a for a in sub["build"]._actions if a.dest != "help"}
    assert set(build_flags) == {f.name for f in fields(BuildConfig)}
    for f in fields(BuildConfig):
        assert build_flags[f.name].help == f.metadata["help"]
    verify_flags = {a.dest: a for a in sub["verify"]._actions}
    for name in ("source", "tokenizer", "workers"):
        assert verify_flags[name].help.startswith("with --rebuild: ")
        assert verify_flags[name].default is None and verify_flags[name].type == build_flags[name].type
    args = parser.parse_args(["build", "--model", MODEL, "--rows", "3", "--no-progress", "--overwrite"])
    from sftpack.builder.config import from_arguments

    config = from_arguments(args)
    assert (config.rows, config.progress, config.overwrite, config.source, config.out) == (3, False, True, "hub", ".")


def _conversations(n: int) -> list[dict]:
    return [{"id": f"c{i}", "messages": [{"role": "user", "content": f"question {i}"},
                                         {"role": "assistant", "content": f"answer {i} " * (i % 7 + 1)}]}
            for i in range(n)]


def test_build_takes_ready_vocab_and_source_and_its_record_round_trips(tmp_path, offline_qwen):
    rows = _conversations(40)
    source = source_from_rows(rows, "forty rows")
    record = sftpack.build(BuildConfig(model=MODEL, source="memory", rows=2, row_tokens=64, out=str(tmp_path),
                                       workers=1, progress=False), vocab=offline_qwen, source=source)
    assert isinstance(record, BuildRecord)
    assert record.dataset.source_rows == 40 and record.dataset.name == "forty rows"
    written = record.paths.record.read_text(encoding="utf-8")
    assert record.to_yaml() == written
    again = BuildRecord.from_yaml(written)
    assert again == record and again.to_yaml() == written
    assert record["counts"]["conversations_packed"] == record.counts.conversations_packed  # still a mapping
    # the same rows by hand: conversations in permutation order, EOS between, cut into 64-token rows
    encoder = sftpack.get_encoder(MODEL)
    stream, mask = [], []
    for i in np.random.default_rng(42).permutation(40):
        ids, m = encoder(rows[i]["messages"])
        if stream:
            stream.append(offline_qwen.eos_id)
            mask.append(0)
        stream += ids.tolist()
        mask += m.tolist()
    tokens, loss_mask = sftpack.read_rows(record.paths.parquet)
    assert tokens.reshape(-1).tolist() == stream[:128]
    expected_mask = np.array(mask[:128]).reshape(2, 64)
    expected_mask[:, 0] = 0
    assert np.array_equal(loss_mask, expected_mask)


def test_from_yaml_names_a_missing_key():
    with pytest.raises(UsageError, match=r"^r.yaml: key 'tokenizer' is missing$"):
        BuildRecord.from_yaml("name: x\n", where="r.yaml")


def test_get_encoder_is_cached(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert sftpack.get_encoder(MODEL) is sftpack.get_encoder(MODEL)
    out = sftpack.encode_conversation([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}], MODEL)
    assert out["tokens"] == sftpack.get_encoder(MODEL)(
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}])[0].tolist()


def test_hub_probe_leaves_the_socket_default_timeout_alone(monkeypatch):
    from sftpack.base.hub import hub_reachable

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(7.5)
    try:
        assert hub_reachable(timeout=0.5) is False
        assert socket.getdefaulttimeout() == 7.5
    finally:
        socket.setdefaulttimeout(previous)


def test_importing_sftpack_changes_no_environment_variable():
    code = ("import os; before = dict(os.environ); import sftpack, sftpack.cli, sftpack.sources, sftpack.builder.pipeline, "
            "sftpack.trainer.rollout, sftpack.checks.verify, sftpack.checks.inspect; print(before == dict(os.environ))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env={**__import__("os").environ, "PYTHONPATH": str(REPO)})
    assert run.stdout.strip() == "True", run.stderr


def test_errors_are_one_line_unless_sftpack_debug(capsys, monkeypatch, tmp_path):
    argv = ["build", "--model", MODEL, "--source", str(tmp_path / "missing.parquet"), "--out", str(tmp_path)]
    monkeypatch.delenv("SFTPACK_DEBUG", raising=False)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sftpack: error: ")
    monkeypatch.setenv("SFTPACK_DEBUG", "1")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):") and err.splitlines()[-1].startswith("sftpack: error: ")


def test_a_usage_error_keeps_its_cause(tmp_path):
    bad = tmp_path / "tokenizer.json"
    bad.write_text("{not json", encoding="utf-8")
    from sftpack.families.profiles import load_profile
    from sftpack.tokenizers.loading import load_vocab

    with pytest.raises(UsageError) as e:
        load_vocab(load_profile(MODEL), str(bad))
    assert e.value.__cause__ is not None


def test_warnings_go_through_the_sftpack_logger(caplog, monkeypatch, tmp_path, qwen_hf_dir):
    from sftpack.families.profiles import load_profile
    from sftpack.tokenizers import loading as vocab_loading

    monkeypatch.setattr(vocab_loading, "_warned", set())
    with caplog.at_level(logging.WARNING, logger="sftpack"):
        vocab_loading.load_vocab(load_profile(MODEL), str(qwen_hf_dir))
    [record] = [r for r in caplog.records if r.name == "sftpack"]
    assert "tokenizer.json mismatch the pins of Qwen3.5-122B-A10B" in record.getMessage()


def test_the_package_holds_the_product():
    package = Path(sftpack.__file__).parent
    assert not (package / "synthetic.py").exists()
    import sftpack.tokenizers.kimi as kimi

    assert not hasattr(kimi, "kimi_encode")  # the test-only reference lives in tests/kimi_reference.py
    from sftpack.sources import open_source

    assert len(open_source("sample")) == 3000  # --source sample still reads the bundled parquet
