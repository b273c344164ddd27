"""A new family is its renderer, its rule, its profile and its registry entry, and nothing else in sftpack: a toy
family with an offline vocabulary, a template option and a tokenizer-file quirk is written into a temporary
directory, registered the way a plugin registers, and built, verified and inspected with, offline."""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from helpers.rows_fixtures import offline
from helpers.outputs import built
from sftpack.cli import main
from sftpack.families.registry import FAMILIES, register_family

# The family's module: its renderer, its offline vocabulary and its registry entry. The template option
# `greeting` is a word the template writes before the first turn; `toy_tokenizer.py` is tokenizer code shipped
# beside the vocabulary, recorded and pin-checked but never run.
TOY_FAMILY = '''
"""Toy chat format: <|g|>GREETING, then <|u|>content<|e|> and <|a|>content<|e|>."""
from sftpack.families.family import Family, TemplateOption
from sftpack.families.render import TemplateError, TurnWriter
from sftpack.tokenizers.registry import OfflineTokenizer
from sftpack.tokenizers.hf_vocab import HFVocab
from sftpack.tokenizers.vocab import VocabInfo

HEADERS = {"user": "<|u|>", "assistant": "<|a|>"}
SPECIALS = ["<unk>", "</s>", "<|u|>", "<|a|>", "<|e|>", "<|g|>"]
CHARS = "abcdefghijklmnopqrstuvwxyz .?"


def render(messages, greeting):
    out = TurnWriter("<|g|>" + greeting)
    for index, message in enumerate(messages):
        if message["role"] not in HEADERS:
            raise TemplateError("toy: user and assistant only")
        out.turn(index, message["role"], HEADERS[message["role"]], message["content"] + "<|e|>")
    return out.rendered()


def check_greeting(value):
    if not (isinstance(value, str) and value.isalpha() and value.islower()):
        raise ValueError(value)


def load_offline(eos_token):
    from tokenizers import AddedToken, Regex, Tokenizer, models, pre_tokenizers

    tokenizer = Tokenizer(models.WordLevel({t: i for i, t in enumerate(SPECIALS + list(CHARS))}, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\\s\\S]"), behavior="isolated")
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIALS])
    return HFVocab(tokenizer, eos_token, VocabInfo("the toy vocabulary, built in", "offline-reconstruction"))


FAMILY = Family(
    render=render,
    options={"greeting": TemplateOption(check=check_greeting, expected="a lowercase word",
                                        record="greeting {value} pinned by the profile")},
    offline={"toy-builtin": OfflineTokenizer(load_offline, "the toy vocabulary built into its family")},
    informational_files=("toy_tokenizer.py",),
)
'''
TOY_RULE = {"name": "toy", "role": "assistant", "header": "<|a|>", "end_of_turn": "<|e|>",
            "example": {"turn": "<|a|>ok<|e|>", "supervised_chars": "ok<|e|>"}}
# loss_mask is left out: it defaults to the family's name
TOY_PROFILE = {"model": "Toy-1M", "hub": {"repo": "example/toy-1m", "revision": None}, "template": "toy",
               "build_name": "toy-rows", "template_options": {"greeting": "hello"},
               "tokenizer": {"eos_token": "</s>", "offline": "toy-builtin"}}
SPECIALS = ["<unk>", "</s>", "<|u|>", "<|a|>", "<|e|>", "<|g|>"]
CHARS = "abcdefghijklmnopqrstuvwxyz .?"
CONVERSATIONS = [
    [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok."}],
    [{"role": "user", "content": "why?"}, {"role": "assistant", "content": "yes"}],
]


def toy_ids(pieces: list[tuple[str, int]]) -> tuple[list[int], list[int]]:
    """Tokens and mask of (text, supervised) pieces by hand: one token per special token or character."""
    ids, mask = [], []
    for text, supervised in pieces:
        for piece in [text] if text in SPECIALS else list(text):
            ids.append(SPECIALS.index(piece) if piece in SPECIALS else len(SPECIALS) + CHARS.index(piece))
            mask.append(supervised)
    return ids, mask


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy family's four pieces in ``tmp_path``; the profile file's path."""
    (tmp_path / "toy_family.py").write_text(TOY_FAMILY, encoding="utf-8")
    (tmp_path / "masks").mkdir()
    (tmp_path / "masks" / "toy.yaml").write_text(yaml.safe_dump(TOY_RULE), encoding="utf-8")
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / "Toy-1M.yaml").write_text(yaml.safe_dump(TOY_PROFILE), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "toy_family", raising=False)
    import toy_family

    register_family("toy", toy_family.FAMILY)  # the registry entry
    yield tmp_path / "configs" / "Toy-1M.yaml"
    del FAMILIES["toy"]


def expected_row(order: list[int]) -> tuple[list[int], list[int]]:
    conversations = {
        0: toy_ids([("<|g|>", 0), ("hello", 0), ("<|u|>", 0), ("hi", 0), ("<|e|>", 0), ("<|a|>", 0), ("ok.", 1),
                    ("<|e|>", 1)]),
        1: toy_ids([("<|g|>", 0), ("hello", 0), ("<|u|>", 0), ("why?", 0), ("<|e|>", 0), ("<|a|>", 0), ("yes", 1),
                    ("<|e|>", 1)]),
    }
    first, second = (conversations[k] for k in order)
    ids, mask = first[0] + [SPECIALS.index("</s>")] + second[0], first[1] + [0] + second[1]
    mask[0] = 0  # position 0 of a row is never a target
    return ids, mask


def test_a_toy_family_builds_verifies_and_inspects_offline(toy, tmp_path, capsys):
    source = tmp_path / "src.jsonl"
    source.write_text("".join(json.dumps({"id": f"c{k}", "messages": m}) + "\n" for k, m in enumerate(CONVERSATIONS)))
    ids, mask = expected_row(np.random.default_rng(42).permutation(2).tolist())
    out = tmp_path / "out"
    with offline():
        rc = main(["build", "--model", str(toy), "--source", str(source), "--rows", "1", "--row-tokens", str(len(ids)),
                   "--out", str(out), "--workers", "1", "--no-progress"])
        captured = capsys.readouterr()
        assert rc == 0, captured.err
        assert "tokenizer     the toy vocabulary, built in" in captured.out  # the summary names the vocabulary
        row = pq.read_table(built(out, ".parquet")).to_pylist()[0]
        assert np.frombuffer(row["tokens"], "<i4").tolist() == ids and list(row["loss_mask"]) == mask
        record = yaml.safe_load(built(out, ".build.yaml").read_text())
        assert record["loss_mask"] == "toy"
        assert record["renderer"] == ("native toy renderer (official template; the tokenizer has no chat_template); "
                                      "greeting hello pinned by the profile")
        assert main(["verify", str(built(out, ".build.yaml")), "--rows", str(built(out, ".parquet"))]) == 0
        capsys.readouterr()
        assert main(["inspect", str(built(out, ".parquet")), "--row", "0", "--model", str(toy), "--json"]) == 0
    view = json.loads(capsys.readouterr().out)
    assert view["tokens"] == ids and view["eos_token"] == "</s>"
    text = "".join(segment["text"] for segment in view["segments"]).replace(" ", "")  # the toy decoder spaces tokens
    assert "<|g|>hello<|u|>hi<|e|><|a|>ok.<|e|>" in text and "<|g|>hello<|u|>why?<|e|><|a|>yes<|e|>" in text


def test_the_tokenizer_file_quirk_is_recorded_and_never_run(toy, tmp_path, capsys):
    """Given with --tokenizer, the family's informational file is hashed into the record, never executed."""
    import toy_family

    directory = tmp_path / "tok"
    directory.mkdir()
    toy_family.load_offline("</s>").tok.save(str(directory / "tokenizer.json"))
    marker = tmp_path / "ran"
    (directory / "toy_tokenizer.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n", encoding="utf-8")
    with offline():
        rc = main(["build", "--model", str(toy), "--tokenizer", str(directory), "--source", "sample", "--rows", "1",
                   "--row-tokens", "64", "--out", str(tmp_path / "out"), "--workers", "1", "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    record = yaml.safe_load(built(tmp_path / "out", ".build.yaml").read_text())
    assert record["tokenizer_files"]["toy_tokenizer.py"] == hashlib.sha256((directory / "toy_tokenizer.py").read_bytes()).hexdigest()
    assert not marker.exists()


@pytest.mark.parametrize("change, message", [
    ({"template_options": {"greeting": "Hello!"}}, "key 'template_options.greeting': expected a lowercase word, got 'Hello!'"),
    ({"template_options": {}}, "key 'template_options.greeting' is missing"),
    ({"tokenizer": {"eos_token": "</s>", "offline": "toy-other"}},
     "key 'tokenizer.offline': unknown value 'toy-other' (allowed: "),
])
def test_the_family_checks_its_profiles(toy, tmp_path, capsys, change, message):
    toy.write_text(yaml.safe_dump({**TOY_PROFILE, **change}), encoding="utf-8")
    rc = main(["build", "--model", str(toy), "--source", "sample", "--out", str(tmp_path / "out"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1
