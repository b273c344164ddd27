"""Small stand-in tokenizers for the GLM, MiniMax and Nemotron families (no downloads), each carrying its family's real special
tokens at their real ids, as ``small_vocabs`` does for Gemma 4 and Kimi.

Each is a byte-level BPE ``tokenizer.json`` (a GPT-2-style split regex, then bytes as printable characters)
whose merges are learned by a tiny pure-Python BPE over a fixed corpus, so the vocabulary does not depend on
the ``tokenizers`` version. Ordinary tokens take ids from ``first_ordinary_id`` on (Nemotron's vocabulary
reserves ids 0-999 for special tokens and starts its 256 byte tokens at 1000, so ``"\\n"`` is 1010 there as in
the real one); special tokens sit at their real ids, with gaps left empty. Ids come from
../shared/fixtures/templates/README.md and third-party test fixtures (see each table); treat them as
believed, not verified against the hub files.

    >>> tok = stand_in_tokenizer("minimax_m2")
    >>> tok.encode("]~b]ai\\nHi[e~[", add_special_tokens=False).ids[0], tok.token_to_id("[e~[")
    (200019, 200020)
    >>> tok.decode(tok.encode("héllo 世界 🙂").ids)
    'héllo 世界 🙂'
"""

from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

from helpers import SHARED
from helpers.small_vocabs import learn_merges  # the same plain BPE learner
from helpers.trl_templates import trl_template

TEMPLATES = SHARED / "fixtures" / "templates"

# MiniMax-M2: ids from a third-party MiniMax-M2 mock tokenizer (torchspec tests); EOS [e~[ is 200020 there too.
MINIMAX_SPECIAL_IDS = {
    "]!p~[": 200000, "]~b]": 200019, "[e~[": 200020, "]!d~[": 200021, "]~!b[": 200034,
    "<think>": 200050, "</think>": 200051, "<minimax:tool_call>": 200052, "</minimax:tool_call>": 200053,
}
# Nemotron-3-Nano: <s> 1, </s> 2, <|im_start|> 10, <|im_end|> 11, <think> 12, </think> 13, "\n" 1010 (a
# third-party Nemotron-3-Nano test double; the Nemotron-H vocabulary layout).
NEMOTRON_SPECIAL_IDS = {
    "<unk>": 0, "<s>": 1, "</s>": 2, "<|im_start|>": 10, "<|im_end|>": 11, "<think>": 12, "</think>": 13,
}
# GLM-4.5 / GLM-4.7-Flash (one vocabulary): the GLM-4 ids published in several test fixtures, plus
# <think> 151350 and </think> 151351.
GLM_SPECIAL_IDS = {
    "<|endoftext|>": 151329, "[MASK]": 151330, "[gMASK]": 151331, "[sMASK]": 151332, "<sop>": 151333,
    "<eop>": 151334, "<|system|>": 151335, "<|user|>": 151336, "<|assistant|>": 151337, "<|observation|>": 151338,
    "<|begin_of_image|>": 151339, "<|end_of_image|>": 151340, "<|begin_of_video|>": 151341,
    "<|end_of_video|>": 151342, "<think>": 151350, "</think>": 151351,
}

# Inkling-Small: the special tokens its template writes (../shared's inkling.jinja). No Inkling vocabulary is
# available offline, so no id is known but those its names carry (<|unused_200053|>, <|unused_200054|>): the others
# are placed just below them, and the EOS is the token that ends sampling (placeholders, not the hub files').
INKLING_SPECIAL_IDS = {t: 200000 + i for i, t in enumerate((
    "<|message_system|>", "<|message_user|>", "<|message_model|>", "<|message_tool|>", "<|content_text|>",
    "<|content_thinking|>", "<|end_message|>", "<|content_model_end_sampling|>", "<|content_xml|>",
    "<|content_invoke_tool_json|>", "<|content_image|>", "<|content_audio_input|>", "<|audio_end|>"))}
INKLING_SPECIAL_IDS.update({"<|unused_200053|>": 200053, "<|unused_200054|>": 200054})

# family -> (special ids, first ordinary id, tokenizer_config token fields, template file)
FAMILIES = {
    "inkling": (INKLING_SPECIAL_IDS, 0, {"eos_token": "<|content_model_end_sampling|>"}, "inkling.jinja"),
    "minimax_m2": (MINIMAX_SPECIAL_IDS, 0, {"bos_token": "]~!b[", "eos_token": "[e~[", "unk_token": "]!d~["}, "minimax_m2.jinja"),
    "nemotron3_nano": (NEMOTRON_SPECIAL_IDS, 1000, {"bos_token": "<s>", "eos_token": "<|im_end|>", "unk_token": "<unk>"},
                       "nemotron3_nano.jinja"),
    "glm4_5": (GLM_SPECIAL_IDS, 0, {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"}, "glm4_5.jinja"),
    "glm4_7_flash": (GLM_SPECIAL_IDS, 0, {"eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"}, "glm4_7_flash.jinja"),
}

SPLIT = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
_CORPUS = (
    "The quick brown fox jumps over the lazy dog. The assistant answers the user's question in a short turn.\n",
    "Please write a function that returns the sum of two numbers, then explain it step by step. It's easy!\n",
    "Sure! Here is the answer: the sum of 12345 and 67890 is 80235. In 2024 there were 366 days.\n",
    "def add(a, b):\n    return a + b\n\nfor i in range(10):\n    print(add(i, i))\n",
    "你好，世界！今天天气很好。我们一起学习语言模型和中文分词。\n",
    "system user assistant think: Let me think about the question before I answer the user.\n",
)
_NUM_MERGES = 300


def _bytes_to_unicode() -> dict[int, str]:
    # GPT-2's byte -> printable character map (byte-level BPE vocabularies spell bytes with these).
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def _pre_tokenizer():
    return pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(SPLIT), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])


@lru_cache(maxsize=None)
def _tokenizer_json(family: str) -> str:
    specials, first_id, _, _ = FAMILIES[family]
    return _bpe_json(tuple(specials.items()), first_id)


@lru_cache(maxsize=None)
def _bpe_json(special_items: tuple, first_id: int) -> str:
    specials = dict(special_items)
    pre = _pre_tokenizer()
    words: Counter = Counter()
    for text in _CORPUS:
        for word, _ in pre.pre_tokenize_str(text):
            words[word] += 1
    merges = learn_merges(words, _NUM_MERGES)
    vocab: dict[str, int] = {}
    for token in [_bytes_to_unicode()[b] for b in range(256)] + [a + b for a, b in merges]:
        if token not in vocab:  # a merge may rebuild an existing token; keep the first id
            vocab[token] = first_id + len(vocab)
    assert not set(vocab.values()) & set(specials.values())
    vocab.update(specials)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tok.pre_tokenizer = pre
    tok.decoder = decoders.ByteLevel()
    # Special added tokens: "[e~[" in input text is cut out as one token, whatever surrounds it.
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in sorted(specials, key=specials.get)])
    return tok.to_str()


def stand_in_tokenizer(family: str) -> Tokenizer:
    """A fresh copy of the family's small stand-in tokenizer."""
    return Tokenizer.from_str(_tokenizer_json(family))


def save_stand_in_dir(family: str, path, template: str | None = None) -> Path:
    """A Hugging Face tokenizer directory (``tokenizer.json``, ``tokenizer_config.json`` with the family's
    bos/eos names and its official chat template from ../shared, or ``template`` when given)."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    _, _, tokens, template_file = FAMILIES[family]
    stand_in_tokenizer(family).save(str(path / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", **tokens, "model_max_length": 1_000_000}
    if template is None and (TEMPLATES / template_file).exists():
        template = (TEMPLATES / template_file).read_text(encoding="utf-8")
    elif template is None:  # without ../shared: TRL's byte-identical copy, where it ships one
        template, _ = trl_template(template_file)
    if template is not None:
        config["chat_template"] = template
    (path / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=2), encoding="utf-8")
    return path


# The control tokens a chat template writes as string literals: <|im_start|>, <|turn>, <turn|>, <think>, [gMASK],
# DeepSeek's full-width <｜Assistant｜>.
_TEMPLATE_TOKEN = r"<\|[A-Za-z_0-9]+\|?>|<[A-Za-z_0-9]+\|>|</?[a-z_]+>|\[[A-Za-z]+\]|<｜[^｜<>]+｜>"


def save_template_stand_in_dir(path, template: str, eos_token: str, bos_token: str | None = None) -> Path:
    """A tokenizer directory for any chat template: the small byte-level BPE with every control token the template
    names as a special token (ids from 300000 on, in order of appearance), and the template itself."""
    import re

    names = list(dict.fromkeys(re.findall(_TEMPLATE_TOKEN, template) + [eos_token] + ([bos_token] if bos_token else [])))
    specials = {name: 300000 + i for i, name in enumerate(names)}
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    Tokenizer.from_str(_bpe_json(tuple(specials.items()), 0)).save(str(path / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": eos_token, "model_max_length": 1_000_000,
              "chat_template": template, **({"bos_token": bos_token} if bos_token else {})}
    (path / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=2), encoding="utf-8")
    return path
