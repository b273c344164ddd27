"""Small, deterministic stand-in tokenizers for tests (no downloads).

``gemma_test_tokenizer()`` is a SentencePiece-style BPE shaped like Gemma 4's: spaces become ``▁``, words
keep their leading ``▁``, characters outside the vocabulary fall back to ``<0xXX>`` byte tokens, and Gemma
4's special tokens sit at their real ids (``<pad>`` 0, ``<eos>`` 1, ``<bos>`` 2, ``<unk>`` 3, ``<|turn>``
105, ``<turn|>`` 106, ...; ``"\\n"`` is 107 as in the real vocabulary). Like Gemma's, its post-processor
prepends ``<bos>`` when ``add_special_tokens`` is on. The merges are learned by a tiny pure-Python BPE over
a fixed corpus, so the vocabulary does not depend on the ``tokenizers`` version.

    >>> tok = gemma_test_tokenizer()
    >>> tok.encode("<|turn>user\\nHi<turn|>", add_special_tokens=False).ids[0]
    105
    >>> tok.decode(tok.encode("héllo 世界 🙂").ids, skip_special_tokens=True)
    'héllo 世界 🙂'
"""

from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors

from helpers import SHARED

SHARED_GEMMA4_TEMPLATE = SHARED / "fixtures" / "templates" / "gemma4.jinja"

# Gemma 4's special tokens at their real ids (see ../shared/fixtures/templates/README.md). Every other id below
# the first ordinary token is a placeholder, so that these land exactly where the real vocabulary has them.
GEMMA_SPECIAL_IDS = {
    "<pad>": 0, "<eos>": 1, "<bos>": 2, "<unk>": 3,
    "<|tool>": 46, "<tool|>": 47, "<|tool_call>": 48, "<tool_call|>": 49,
    "<|tool_response>": 50, "<tool_response|>": 51, '<|"|>': 52,
    "<|think|>": 98, "<|channel>": 100, "<channel|>": 101, "<|turn>": 105, "<turn|>": 106,
}
GEMMA_NEWLINE_ID = 107
_NUM_SPECIAL = 107  # ids 0..106 are special tokens or placeholders

_GEMMA_CORPUS = (
    "The quick brown fox jumps over the lazy dog. The model answers the user in a short turn.\n",
    "Please write a function that returns the sum of two numbers, then explain it step by step.\n",
    "Sure! Here is the answer: the sum of 2 and 3 is 5. Let me know if you need anything else.\n",
    "def add(a, b):\n    return a + b\n\nfor i in range(10):\n    print(add(i, i))\n",
    'import json\nwith open("data.json") as f:\n    data = json.load(f)\nprint(data["name"])\n',
    "你好，世界！今天天气很好。我们一起学习语言模型和中文分词。\n",
    "用户提出了一个问题，模型给出了回答。这是一个简单的测试句子。\n",
)
_NUM_MERGES = 400


def merge_pair(symbols: tuple, pair: tuple) -> tuple:
    """``symbols`` with every non-overlapping occurrence of ``pair``, left to right, joined into one symbol."""
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def _normalizer():
    return normalizers.Replace(" ", "▁")


def _pre_tokenizer():
    # Words start with their "▁", like SentencePiece pieces; no merge crosses a word boundary.
    return pre_tokenizers.Split(Regex("▁"), behavior="merged_with_next")


def learn_merges(words: Counter, num_merges: int) -> list[tuple[str, str]]:
    """Plain BPE: repeatedly merge the most frequent adjacent pair (ties: smallest pair), stop below 2."""
    segmented = {tuple(word): count for word, count in words.items()}
    merges: list[tuple[str, str]] = []
    for _ in range(num_merges):
        pairs: Counter = Counter()
        for symbols, count in segmented.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        if pairs[best] < 2:
            break
        merges.append(best)
        merged: dict = {}
        for symbols, count in segmented.items():
            out = merge_pair(symbols, best)
            merged[out] = merged.get(out, 0) + count
        segmented = merged
    return merges


@lru_cache(maxsize=None)
def _gemma_tokenizer_json() -> str:
    normalizer, pre = _normalizer(), _pre_tokenizer()
    words: Counter = Counter()
    for text in _GEMMA_CORPUS:
        for word, _ in pre.pre_tokenize_str(normalizer.normalize_str(text)):
            words[word] += 1
    merges = learn_merges(words, _NUM_MERGES)

    by_id = {i: token for token, i in GEMMA_SPECIAL_IDS.items()}
    vocab_list = [by_id.get(i, f"<unused_{i}>") for i in range(_NUM_SPECIAL)]
    vocab_list.append("\n")  # id 107, as in Gemma
    vocab_list += [f"<0x{b:02X}>" for b in range(256)]
    alphabet = {chr(c) for c in range(33, 127)} | {"▁"} | {ch for word in words for ch in word}
    vocab_list += sorted(alphabet - set(vocab_list))
    vocab_list += [a + b for a, b in merges]
    vocab: dict[str, int] = {}
    for token in vocab_list:
        vocab.setdefault(token, len(vocab))  # a merge may rebuild an existing token; keep the first id

    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A:0 <bos>:1 $B:1", special_tokens=[("<bos>", GEMMA_SPECIAL_IDS["<bos>"])]
    )
    # Registered as special added tokens: "<|turn>" in input text is cut out as one token before normalization.
    tok.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in vocab_list[:_NUM_SPECIAL]])
    return tok.to_str()


def gemma_test_tokenizer() -> Tokenizer:
    """A fresh copy of the small Gemma-4-shaped tokenizer (see the module docstring)."""
    return Tokenizer.from_str(_gemma_tokenizer_json())


def save_gemma_test_tokenizer_dir(path) -> Path:
    """Write a Hugging Face tokenizer directory that ``AutoTokenizer.from_pretrained(path)`` loads.

    Its ``chat_template`` is the launch-era ``gemma4.jinja`` read from ../shared (raises when that is absent).
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    template = SHARED_GEMMA4_TEMPLATE.read_text(encoding="utf-8")
    gemma_test_tokenizer().save(str(path / "tokenizer.json"))
    special = {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>"}
    config = {
        # The generic fast class loads tokenizer.json as is (a model-specific class may rebuild parts of it).
        "tokenizer_class": "PreTrainedTokenizerFast",
        **special,
        "model_max_length": 1_000_000,
        "chat_template": template,
    }
    (path / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=2), encoding="utf-8")
    (path / "special_tokens_map.json").write_text(json.dumps(special, indent=2), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------------------
# Kimi K2.x: a small tiktoken vocabulary + tokenizer_config.json, laid out like moonshotai/Kimi-K2.x's files.

import base64 as _kimi_base64  # noqa: E402  (this section is independent of the Gemma one above)
import re as _kimi_re  # noqa: E402

SHARED_KIMI_TEMPLATE = (
    SHARED / "fixtures" / "templates"
    / "kimi_k26.kite1.0_renamed.jinja"
)
KIMI_FIRST_SPECIAL_ID = 163584  # the real vocabulary has 163,584 BPE ranks; special ids follow them
# Kimi K2.5/K2.6 tokenizer_config.json added_tokens_decoder: name -> (real id, "special" flag).
KIMI_ADDED_TOKENS = {
    "[BOS]": (163584, True), "[EOS]": (163585, True), "<|im_end|>": (163586, True), "<|im_user|>": (163587, True),
    "<|im_assistant|>": (163588, True), "<|start_header_id|>": (163590, True), "<|end_header_id|>": (163591, True),
    "[EOT]": (163593, True), "<|im_system|>": (163594, True),
    "<|tool_calls_section_begin|>": (163595, False), "<|tool_calls_section_end|>": (163596, False),
    "<|tool_call_begin|>": (163597, False), "<|tool_call_argument_begin|>": (163598, False),
    "<|tool_call_end|>": (163599, False), "<|im_middle|>": (163601, True), "<|media_begin|>": (163602, True),
    "<|media_content|>": (163603, True), "<|media_end|>": (163604, True), "<|media_pad|>": (163605, True),
    "<think>": (163606, False), "</think>": (163607, False), "[UNK]": (163838, True), "[PAD]": (163839, True),
}
_KIMI_CORPUS = (
    "The quick brown fox jumps over the lazy dog. The assistant answers the user's question in a short turn.\n",
    "Please write a function that returns the sum of two numbers, then explain it step by step. It's easy!\n",
    "Sure! Here is the answer: the sum of 12345 and 67890 is 80235. In 2024 there were 366 days; 12345 again.\n",
    "def add(a, b):\n    return a + b\n\nfor i in range(10):\n    print(add(i, i))\n",
    'import json\nwith open("data.json") as f:\n    data = json.load(f)\nprint(data["name"], 12345)\n',
    "你好，世界！今天天气很好。我们一起学习语言模型和中文分词。你好世界，你好！\n",
    "用户提出了一个问题，模型给出了回答。这是一个简单的测试句子。世界你好。\n",
    "system user assistant think: Let me think about the question before I answer the user.\n",
)
_KIMI_NUM_MERGES = 300
# Training pieces: letter runs and punctuation runs with at most one leading space, whole digit runs (so that
# merges such as "12345" exist and the Kimi pattern's 3-digit split is visible) and whitespace runs.
_KIMI_TRAIN_SPLIT = _kimi_re.compile(r" ?[^\W\d_]+|\d+| ?[^\w\s]+|\s+")


@lru_cache(maxsize=None)
def kimi_test_ranks() -> tuple[tuple[bytes, int], ...]:
    """The small Kimi vocabulary as ``(token bytes, rank)`` pairs: the 256 single bytes at ranks 0..255, then
    the merges of a deterministic byte-level BPE over a fixed corpus (most frequent pair first, ties: smallest
    pair; it goes on through pairs seen once until it has ``_KIMI_NUM_MERGES`` new tokens)."""
    words: Counter = Counter()
    for text in _KIMI_CORPUS:
        for piece in _KIMI_TRAIN_SPLIT.findall(text):
            words[tuple(bytes([b]) for b in piece.encode("utf-8"))] += 1
    ranks = {bytes([b]): b for b in range(256)}
    while len(ranks) < 256 + _KIMI_NUM_MERGES:
        pairs: Counter = Counter()
        for symbols, count in words.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))
        ranks.setdefault(best[0] + best[1], len(ranks))
        merged: Counter = Counter()
        for symbols, count in words.items():
            merged[merge_pair(symbols, best)] += count
        words = merged
    return tuple(sorted(ranks.items(), key=lambda item: item[1]))


def kimi_test_files(dirpath) -> None:
    """Write ``tiktoken.model`` and ``tokenizer_config.json`` of a small Kimi-style tokenizer into ``dirpath``.

    Kimi's named special tokens keep their order and gaps but move down to follow the small vocabulary: a
    token at real id ``r`` gets ``n_ranks + (r - 163584)``. The config names ``[BOS]``/``[EOS]``/``[PAD]``/
    ``[UNK]`` like the real one and carries ``kimi_k26.kite1.0_renamed.jinja`` from ../shared as its
    ``chat_template`` (the key is left out when ../shared is absent).
    """
    path = Path(dirpath)
    path.mkdir(parents=True, exist_ok=True)
    ranks = kimi_test_ranks()
    lines = "".join(f"{_kimi_base64.b64encode(token).decode('ascii')} {rank}\n" for token, rank in ranks)
    (path / "tiktoken.model").write_text(lines, encoding="ascii")
    n_ranks = len(ranks)
    decoder = {
        str(n_ranks + real_id - KIMI_FIRST_SPECIAL_ID): {
            "content": name, "lstrip": False, "normalized": False, "rstrip": False, "single_word": False,
            "special": special,
        }
        for name, (real_id, special) in KIMI_ADDED_TOKENS.items()
    }
    config = {
        "added_tokens_decoder": decoder,
        "bos_token": "[BOS]",
        "eos_token": "[EOS]",
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "tokenizer_class": "TikTokenTokenizer",
        "model_max_length": 1_000_000,
    }
    if SHARED_KIMI_TEMPLATE.exists():
        config["chat_template"] = SHARED_KIMI_TEMPLATE.read_text(encoding="utf-8")
    (path / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=2), encoding="utf-8")
