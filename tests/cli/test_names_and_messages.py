"""Names and messages: a profile's build_name is checked as --name is; verify --rebuild --keep into a directory
that holds files names --keep; a --tokenizer error is one line even without torch (no transformers advisory
before it); a duplicate key in a profile or loss-mask rule file is refused, naming the file, key and line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers.cli_outcomes import cli, offline_vocab_fixture, one_error_line
from helpers.outputs import built
from sftpack.families.profiles import resource_dir

REPO = Path(__file__).resolve().parents[2]
MODEL = "Qwen3.5-122B-A10B"
NAME = "qwen35-tulu3-fixed8192-v1"

offline_vocab = offline_vocab_fixture(MODEL)


def _profile(tmp_path: Path, replace: dict[str, str], rule_text: str | None = None) -> Path:
    (tmp_path / "configs").mkdir(exist_ok=True)
    text = (resource_dir("configs") / f"{MODEL}.yaml").read_text(encoding="utf-8")
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new)
    if rule_text is not None:
        (tmp_path / "masks").mkdir(exist_ok=True)
        (tmp_path / "masks" / "qwen3_5.yaml").write_text(rule_text, encoding="utf-8")
    path = tmp_path / "configs" / f"{MODEL}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _build(capsys, model, out, *extra):
    return cli(capsys, "build", "--model", model, "--source", "sample", "--rows", 1, "--row-tokens", 64, "--out", out,
               "--workers", 1, "--no-progress", *extra)


@pytest.mark.parametrize("name", ["../../x", "a/b", "\x1b[31mred", "two\nlines", "bell\x07", ".hidden", "x" * 240, "\u202eevil"])
def test_profile_build_name_is_checked_as_name(name, tmp_path, capsys):
    quoted = yaml.safe_dump(name, default_style='"').strip()
    profile = _profile(tmp_path, {f"build_name: {NAME}": f"build_name: {quoted}"})
    rc, stdout, err = _build(capsys, profile, tmp_path / "out")
    assert rc == 2 and stdout == ""
    one_error_line(err, str(profile), "build_name")
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")
    assert not (tmp_path.parent / "x").exists()


def test_profile_build_name_checked_even_with_name(tmp_path, capsys):
    profile = _profile(tmp_path, {f"build_name: {NAME}": 'build_name: "../x"'})
    rc, _, err = _build(capsys, profile, tmp_path / "out", "--name", "fine")
    assert rc == 2
    one_error_line(err, str(profile), "build_name")


@pytest.mark.parametrize("duplicate", ["model: Qwen3-32B\n", "build_name: other\n", "template: qwen3\n"])
def test_duplicate_key_in_a_profile_is_refused(duplicate, tmp_path, capsys):
    profile = _profile(tmp_path, {"hub:": duplicate + "hub:"})
    rc, stdout, err = _build(capsys, profile, tmp_path / "out")
    assert rc == 2 and stdout == ""
    key = duplicate.split(":")[0]
    one_error_line(err, str(profile), "duplicate key", repr(key), "line")


def test_duplicate_nested_key_in_a_profile_is_refused(tmp_path, capsys):
    profile = _profile(tmp_path, {"  row_tokens: 8192": "  row_tokens: 8192\n  row_tokens: 4096"})
    rc, _, err = _build(capsys, profile, tmp_path / "out")
    assert rc == 2
    one_error_line(err, str(profile), "duplicate key", "'row_tokens'")


def test_duplicate_key_in_a_rule_is_refused(tmp_path, capsys):
    rule = (resource_dir("masks") / "qwen3_5.yaml").read_text(encoding="utf-8")
    rule = rule.replace("end_of_turn:", 'end_of_turn: "<|endoftext|>"\nend_of_turn:', 1)
    profile = _profile(tmp_path, {}, rule_text=rule)
    rc, _, err = _build(capsys, profile, tmp_path / "out")
    assert rc == 2
    one_error_line(err, str(tmp_path / "masks" / "qwen3_5.yaml"), "duplicate key", "'end_of_turn'")


def test_verify_rebuild_keep_into_a_nonempty_directory_names_keep(tmp_path, capsys):
    out = tmp_path / "first"
    rc, _, err = _build(capsys, MODEL, out)
    assert rc == 0, err
    keep = tmp_path / "keep"
    keep.mkdir()
    rows = built(out, ".parquet")  # its name states the build's parameters; a rebuild names its files the same
    (keep / rows.name).write_bytes(b"an older rebuild")
    rc, stdout, err = cli(capsys, "verify", built(out, ".build.yaml"), "--rebuild", "--keep", keep, "--source", "sample",
                          "--workers", 1)
    assert rc == 2
    line = one_error_line(err, "--keep", str(keep))
    assert "--overwrite" not in line
    assert (keep / rows.name).read_bytes() == b"an older rebuild"


HIDE_TORCH = '''
import importlib.machinery, sys
class _NoTorch(importlib.machinery.PathFinder):
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            return None
        return super().find_spec(name, path, target)
sys.meta_path[:] = [_NoTorch if f is importlib.machinery.PathFinder else f for f in sys.meta_path]
'''


def _tokenizer_dirs(tmp_path: Path) -> dict[str, Path]:
    from helpers.shared import shared_file
    from helpers.family_vocabs import save_stand_in_dir

    shared_file("fixtures", "templates", "minimax_m2.jinja")
    broken = save_stand_in_dir("minimax_m2", tmp_path / "broken", template="{% if %}")
    return {"NEMOTRON": save_stand_in_dir("nemotron3_nano", tmp_path / "nemotron"), "BROKEN": broken,
            "MINIMAX": save_stand_in_dir("minimax_m2", tmp_path / "minimax")}


@pytest.mark.parametrize("argv,rc", [
    (["build", "--model", "Qwen3-32B", "--tokenizer", "NEMOTRON", "--source", "SOURCE", "--out", "OUT"], 2),
    (["build", "--model", "MiniMax-M2", "--tokenizer", "BROKEN", "--source", "SOURCE", "--out", "OUT"], 2),
    (["encode", "--model", "MiniMax-M2", "--tokenizer", "BROKEN"], 2),
    (["build", "--model", "MiniMax-M2", "--tokenizer", "/nonexistent/tok", "--source", "SOURCE", "--out", "OUT"], 2),
    (["build", "--model", "MiniMax-M2", "--tokenizer", "MINIMAX", "--source", "SOURCE", "--out", "OUT"], 0),
])
def test_no_transformers_advisory_without_torch(argv, rc, tmp_path):
    """transformers says "PyTorch was not found" when imported without torch: never on sftpack's stderr."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(HIDE_TORCH, encoding="utf-8")
    source = tmp_path / "s.jsonl"
    source.write_text('{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}\n' * 8)
    paths = {**_tokenizer_dirs(tmp_path), "SOURCE": source, "OUT": tmp_path / "out"}
    argv = [str(paths.get(a, a)) for a in argv]
    if argv[0] == "build":
        argv += ["--rows", "1", "--row-tokens", "16", "--workers", "1", "--no-progress"]
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{REPO}", "HF_HUB_OFFLINE": "1"}
    env.pop("TRANSFORMERS_NO_ADVISORY_WARNINGS", None)
    check = subprocess.run([sys.executable, "-c", "import transformers.utils.import_utils as u; print(u.is_torch_available())"],
                           env=env, capture_output=True, text=True, timeout=120)
    assert check.stdout.strip() == "False", check.stderr  # torch is hidden
    done = subprocess.run([sys.executable, "-m", "sftpack", *argv], env=env, capture_output=True, text=True, timeout=300,
                          input='[{"role": "user", "content": "q"}]')
    assert done.returncode == rc, done.stderr
    assert "PyTorch" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    if rc:
        lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("sftpack: warning:")]
        assert len(lines) == 1 and lines[0].startswith("sftpack: error: "), done.stderr
