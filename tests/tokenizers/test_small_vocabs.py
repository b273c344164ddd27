"""The small Gemma-4-shaped test tokenizer: real special ids, lossless round trips, loads in transformers."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.shared import official_template
from helpers.small_vocabs import (
    GEMMA_NEWLINE_ID,
    GEMMA_SPECIAL_IDS,
    gemma_test_tokenizer,
    save_gemma_test_tokenizer_dir,
)
from sftpack.families.gemma4 import render

MIXED = [
    "Hello, world! The quick brown fox.",
    "def add(a, b):\n    return a + b\n",
    "你好，世界！今天天气很好。",
    "emoji 😀👍🏽 👨‍👩‍👧 and rare CJK 龘 and Cyrillic Привет",
    "  leading and trailing spaces  \n\n\ttabs\r\n",
    "שלום مرحبا \u200f\u3000",
    "",
]


def test_gemma_special_ids():
    tok = gemma_test_tokenizer()
    for token, token_id in GEMMA_SPECIAL_IDS.items():
        assert tok.token_to_id(token) == token_id
        assert tok.id_to_token(token_id) == token
    assert tok.token_to_id("\n") == GEMMA_NEWLINE_ID
    assert tok.token_to_id("<0x00>") is not None and tok.token_to_id("<0xFF>") is not None
    specials = {t.content for t in tok.get_added_tokens_decoder().values() if t.special}
    assert set(GEMMA_SPECIAL_IDS) <= specials


def test_gemma_special_tokens_are_split_out_of_text():
    tok = gemma_test_tokenizer()
    enc = tok.encode("a<|turn>model\nb<turn|>\n<|channel>c<channel|><bos>", add_special_tokens=False)
    for token in ["<|turn>", "<turn|>", "<|channel>", "<channel|>", "<bos>"]:
        assert GEMMA_SPECIAL_IDS[token] in enc.ids
    assert enc.ids[enc.tokens.index("<turn|>") + 1] == GEMMA_NEWLINE_ID
    # Like Gemma, plain encoding prepends <bos>.
    assert tok.encode("hi").ids[0] == GEMMA_SPECIAL_IDS["<bos>"]


@pytest.mark.parametrize("text", MIXED)
def test_gemma_round_trip(text):
    tok = gemma_test_tokenizer()
    ids = tok.encode(text, add_special_tokens=False).ids
    assert tok.decode(ids, skip_special_tokens=False) == text


def test_gemma_byte_fallback_and_spaces():
    tok = gemma_test_tokenizer()
    tokens = tok.encode("a 😀", add_special_tokens=False).tokens
    assert ["<0xF0>", "<0x9F>", "<0x98>", "<0x80>"] == tokens[-4:]
    assert "▁" in "".join(tokens) and " " not in "".join(tokens)
    assert "<unk>" not in tokens


def test_gemma_tokenizer_is_deterministic():
    # A separate interpreter (fresh hash seed) must build exactly the same tokenizer.json.
    code = "from helpers import small_vocabs; print(small_vocabs.gemma_test_tokenizer().to_str())"
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1], capture_output=True,
                         text=True, check=True, env={"PYTHONHASHSEED": "12345"}).stdout.strip()
    assert json.loads(out) == json.loads(gemma_test_tokenizer().to_str())


def test_gemma_tokenizer_dir_loads_with_chat_template(tmp_path):
    official_template("gemma4.jinja")  # skips when ../shared is absent
    from transformers import AutoTokenizer

    save_gemma_test_tokenizer_dir(tmp_path)
    hf = AutoTokenizer.from_pretrained(str(tmp_path))
    assert (hf.bos_token, hf.eos_token, hf.pad_token) == ("<bos>", "<eos>", "<pad>")
    assert (hf.bos_token_id, hf.eos_token_id, hf.pad_token_id) == (2, 1, 0)
    assert hf.convert_tokens_to_ids("<|turn>") == 105 and hf.convert_tokens_to_ids("<turn|>") == 106

    conversations = [
        [{"role": "user", "content": "Hi 你好 😀"}, {"role": "assistant", "content": "<|channel>x<channel|> Yo "}],
        [{"role": "system", "content": " Be brief. "}, {"role": "user", "content": "q"},
         {"role": "assistant", "content": ""}, {"role": "user", "content": "<turn|>"},
         {"role": "assistant", "content": "\n\nfine\n"}],
    ]
    for messages in conversations:
        text = hf.apply_chat_template(messages, tokenize=False)
        assert text == render(messages).text
        ids = hf(text, add_special_tokens=False)["input_ids"]
        assert ids[0] == 2 and ids.count(2) == 1  # the template's <bos> only, no doubled BOS
        assert hf.decode(ids) == text
