"""The ``tokenizer.json`` tokenizer format (:data:`sftpack.tokenizers.registry.TOKENIZER_FORMATS`): any Hugging Face
``tokenizer.json``, through tiktoken when it is a byte-level BPE tiktoken can express (proved on a probe text),
else through ``tokenizers``."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import numpy as np

from sftpack.base.cache import cache_dir, publish, staging_dir
from sftpack.base.errors import UsageError
from sftpack.base.hashing import file_sha256
from sftpack.base.version import sftpack_version
from sftpack.tokenizers import encodings
from sftpack.tokenizers.engine_internals import build_core, pattern, special_tokens
from sftpack.tokenizers.hf_vocab import HFVocab
from sftpack.tokenizers.ranks_cache import cached_ranks
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
    probe text against ``tokenizers``), else through ``tokenizers``. Once proved, its tiktoken form is kept in
    sftpack's cache under the file's sha256 (:func:`_read_form`), and a later process takes it from there without
    parsing the file with either library (Qwen3.5's: 2.5 s of one core, 0.1 s from the cache)."""
    path = Path(path)
    sha256 = file_sha256(path).sha256
    enc, nfc, proved = encodings.memo(("tokenizer.json", sha256, path.stem), lambda: _tiktoken_form(path, sha256))
    if enc is not None and (eos_token in special_tokens(enc) or not proved):  # else tokenizers names what is wrong
        fast = TiktokenVocab(enc, eos_token, info, nfc=nfc)
        if proved or encodings.memo(("tokenizer.json proof", sha256, path.stem),
                                    lambda: _prove(fast, HFVocab(_tokenizer(path, sha256), eos_token, info), sha256)):
            return fast
    return HFVocab(_tokenizer(path, sha256), eos_token, info)


def _tokenizer(path: Path, sha256: str):
    """The ``tokenizers`` tokenizer of ``path``: made once per process for each file's bytes."""
    from tokenizers import Tokenizer

    return encodings.memo(("tokenizers", sha256), lambda: Tokenizer.from_file(str(path)))


def _tiktoken_form(path: Path, sha256: str) -> tuple:
    """``(encoding, nfc, proved)``: the file's tiktoken encoding (None where tiktoken cannot express it), whether it
    normalizes to NFC, and whether it was proved equal to ``tokenizers`` (its form read from the cache)."""
    kept = _read_form(sha256)
    if kept is not None:
        pat_str, specials, nfc = kept
        return encodings.encoding(sha256, path.stem, pat_str, specials,
                                  lambda: cached_ranks(path.read_bytes(), sha256, _ranks_of_file)), nfc, True
    form = _tiktoken_from_tokenizer_json(path)
    if form is None:
        return None, False, False
    pat_str, specials, ranks, nfc = form
    enc = encodings.encoding(sha256, path.stem, pat_str, specials, lambda: cached_ranks(b"", sha256, lambda _: ranks))
    try:
        build_core(enc)
    except ValueError:  # a pattern tiktoken's regex engine does not accept: the tokenizers path
        return None, False, False
    return enc, nfc, False


def _prove(fast: TiktokenVocab, hf: HFVocab, sha256: str) -> bool:
    """Whether tiktoken's form of a file encodes as ``tokenizers`` does; when it does, the form is kept."""
    if not _same_encoding(fast, hf):
        return False
    _write_form(sha256, pattern(fast.enc), dict(special_tokens(fast.enc)), fast.nfc)
    return True


# A proved form: cache_dir()/tokenizer-json/<the file's sha256>-<FORMAT>-<the versions it was proved with>/, holding
# FORM (its pattern, special tokens and NFC; its ranks are the ranks cache's entry under the same sha256) and SUMS.
FORMAT = 1  # what sftpack derives from a tokenizer.json and how an entry is laid out; a new one never reads an old one
FORM, SUMS = "form.json", "SHA256SUMS"


def _form_entry(sha256: str) -> Path:
    """The entry of a file's form, proved by this ``tokenizers`` and this sftpack: either changed, proved again."""
    from importlib.metadata import version

    proved_by = hashlib.sha256(f"tokenizers {version('tokenizers')}; sftpack {sftpack_version()}".encode()).hexdigest()
    return cache_dir() / "tokenizer-json" / f"{sha256}-{FORMAT}-{proved_by[:16]}"


def _read_form(sha256: str) -> tuple[str, dict[str, int], bool] | None:
    """``(pattern, special tokens, nfc)`` of a file whose tiktoken form was proved, if its entry is there and whole."""
    entry = _form_entry(sha256)
    try:
        data = (entry / FORM).read_bytes()
        sums = (entry / SUMS).read_text()
        if set(os.listdir(entry)) != {FORM, SUMS} or sums != f"{hashlib.sha256(data).hexdigest()}  {FORM}\n":
            return None
        form = json.loads(data)
        pat_str, specials, nfc = form["pattern"], form["special_tokens"], form["nfc"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not (isinstance(pat_str, str) and isinstance(nfc, bool) and isinstance(specials, dict)
            and all(isinstance(k, str) and type(v) is int for k, v in specials.items())):
        return None
    return pat_str, specials, nfc


def _write_form(sha256: str, pat_str: str, specials: dict[str, int], nfc: bool) -> None:
    entry = _form_entry(sha256)
    data = json.dumps({"pattern": pat_str, "special_tokens": specials, "nfc": nfc}, ensure_ascii=False).encode()
    try:
        staging = staging_dir(entry)
    except OSError:  # a cache that cannot be written: the file is parsed and proved each time, as without it
        return
    try:
        (staging / FORM).write_bytes(data)
        (staging / SUMS).write_text(f"{hashlib.sha256(data).hexdigest()}  {FORM}\n")
        publish(staging, entry, replace=entry.exists())
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)


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


def _ranks_of_file(data: bytes) -> dict[bytes, int]:
    """The ranks of a ``tokenizer.json`` whose tiktoken form was proved (its form read from the cache)."""
    form = _tiktoken_from_tokenizer_json_spec(json.loads(data.decode("utf-8")))
    if form is None:
        raise UsageError("tokenizer.json: its tiktoken form was kept, but its ranks cannot be read again")
    return form[2]


def _tiktoken_from_tokenizer_json(path: Path) -> tuple | None:
    """``(pattern, special tokens, ranks, nfc)`` of a ``tokenizer.json`` tiktoken can express, else None."""
    return _tiktoken_from_tokenizer_json_spec(json.loads(path.read_text(encoding="utf-8")))


def _tiktoken_from_tokenizer_json_spec(spec: dict) -> tuple | None:
    model = spec.get("model") or {}
    if model.get("type") != "BPE" or model.get("byte_fallback"):
        return None
    normalizer = spec.get("normalizer")
    if normalizer is None:
        nfc = False
    elif normalizer.get("type") == "NFC":
        nfc = True
    else:
        return None
    pre = spec.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers", [pre]) if pre.get("type") == "Sequence" else [pre]
    pattern = None
    for step in steps:
        if step.get("type") == "Split" and "Regex" in (step.get("pattern") or {}):
            if step.get("behavior", "Isolated") != "Isolated" or step.get("invert"):
                return None  # tiktoken only isolates the regex matches
            pattern = step["pattern"]["Regex"]
        elif step.get("type") == "ByteLevel":
            if step.get("add_prefix_space") or (step.get("use_regex", True) and pattern is None):
                return None
        else:
            return None
    if pattern is None:
        return None
    decode = {c: b for b, c in _bytes_to_unicode().items()}
    try:
        ranks = {bytes(decode[c] for c in token): rank for token, rank in model["vocab"].items()}
    except KeyError:
        return None
    added = spec.get("added_tokens", [])
    if any(t.get("lstrip") or t.get("rstrip") or t.get("single_word") for t in added):
        return None  # tiktoken matches special tokens literally, without stripping around them
    specials = {t["content"]: t["id"] for t in added}
    return pattern, specials, ranks, nfc
