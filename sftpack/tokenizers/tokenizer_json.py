"""The ``tokenizer.json`` tokenizer format (:data:`sftpack.tokenizers.registry.TOKENIZER_FORMATS`): any Hugging Face
``tokenizer.json``, through tiktoken when it is a byte-level BPE tiktoken can express (proved on a probe text),
else through ``tokenizers``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.base.hashing import file_sha256
from sftpack.tokenizers import encodings
from sftpack.tokenizers.hf_vocab import HFVocab
from sftpack.tokenizers.tiktoken_vocab import TiktokenVocab
from sftpack.tokenizers.vocab import Vocab, VocabInfo


def load_tokenizer_json_files(request) -> Vocab:
    """The ``tokenizer.json`` format: through tiktoken when it can express it, else ``tokenizers``."""
    path = request.path
    tokenizer_json = path if path.is_file() else request.directory / "tokenizer.json"
    if not tokenizer_json.exists():
        raise UsageError(f"--tokenizer {path}: no tokenizer.json there")
    request.files["tokenizer.json"] = file_sha256(tokenizer_json).sha256
    info = request.info("tokenizer.json given with --tokenizer")
    try:
        return load_tokenizer_json(tokenizer_json, request.eos_token, info)
    except UsageError:
        raise
    except Exception as e:  # tokenizers raises its own Exception subclass on a malformed file
        raise UsageError(f"--tokenizer {path}: cannot load tokenizer.json ({e})") from e


def load_tokenizer_json(path: str | Path, eos_token: str, info: VocabInfo) -> Vocab:
    """A ``tokenizer.json``: through tiktoken when it is a byte-level BPE tiktoken can express (proved on a
    probe text), else through ``tokenizers``."""
    key = ("tokenizer.json", file_sha256(path).sha256, Path(path).stem)
    tok, enc, nfc = encodings.memo(key, lambda: _parse(Path(path)))
    hf = HFVocab(tok, eos_token, info)
    fast = TiktokenVocab(enc, eos_token, info, nfc=nfc) if enc is not None else None
    if fast is not None and _same_encoding(fast, hf):
        return fast
    return hf


def _parse(path: Path) -> tuple:
    """The ``tokenizers`` tokenizer of ``path``, and its tiktoken encoding with whether it normalizes to NFC (None,
    False where tiktoken cannot express it): made once per process for each file's bytes."""
    from tokenizers import Tokenizer

    return (Tokenizer.from_file(str(path)), *_tiktoken_from_tokenizer_json(path))


_PROBE = (
    "Hello, world! It's 2024: the año → 東京タワー. \n\n  def f(x):\n\treturn x**2  # 😀👍🏽\n"
    "Ünïcödé ﬁ e\u0301 Ω Å \u200b\u200d עברית العربية हिन्दी 한국어 Русский 12345678 ...!!! \r\n"
    "<|im_start|>user\nq<|im_end|>\n<think>\n\n</think>\n\n   spaces   \t\ttabs\n\n\n"
)


def _same_encoding(a: Vocab, b: Vocab) -> bool:
    for text in (_PROBE, _PROBE * 3, _PROBE.upper(), _PROBE.replace(" ", "")):
        if not np.array_equal(a.encode(text), b.encode(text)):
            return False
    return True


def _bytes_to_unicode() -> dict[int, str]:
    # GPT-2's byte <-> printable character map used by byte-level BPE vocabularies.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def _tiktoken_from_tokenizer_json(path: Path) -> tuple:
    import tiktoken

    spec = json.loads(path.read_text(encoding="utf-8"))
    model = spec.get("model") or {}
    if model.get("type") != "BPE" or model.get("byte_fallback"):
        return None, False
    normalizer = spec.get("normalizer")
    if normalizer is None:
        nfc = False
    elif normalizer.get("type") == "NFC":
        nfc = True
    else:
        return None, False
    pre = spec.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers", [pre]) if pre.get("type") == "Sequence" else [pre]
    pattern = None
    for step in steps:
        if step.get("type") == "Split" and "Regex" in (step.get("pattern") or {}):
            if step.get("behavior", "Isolated") != "Isolated" or step.get("invert"):
                return None, False  # tiktoken only isolates the regex matches
            pattern = step["pattern"]["Regex"]
        elif step.get("type") == "ByteLevel":
            if step.get("add_prefix_space") or (step.get("use_regex", True) and pattern is None):
                return None, False
        else:
            return None, False
    if pattern is None:
        return None, False
    decode = {c: b for b, c in _bytes_to_unicode().items()}
    try:
        ranks = {bytes(decode[c] for c in token): rank for token, rank in model["vocab"].items()}
    except KeyError:
        return None, False
    added = spec.get("added_tokens", [])
    if any(t.get("lstrip") or t.get("rstrip") or t.get("single_word") for t in added):
        return None, False  # tiktoken matches special tokens literally, without stripping around them
    specials = {t["content"]: t["id"] for t in added}
    try:
        enc = tiktoken.Encoding(path.stem, pat_str=pattern, mergeable_ranks=ranks, special_tokens=specials)
    except ValueError:  # a pattern tiktoken's regex engine does not accept: the tokenizers path
        return None, False
    return enc, nfc
