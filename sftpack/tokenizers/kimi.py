"""Kimi K2.x tokenizer from its files alone: ``tiktoken.model`` + ``tokenizer_config.json``, no hub code.

Moonshot ships a ``tokenization_kimi.py`` (``TikTokenTokenizer``, loaded with ``trust_remote_code``). What it
builds is a plain ``tiktoken.Encoding``, which this module rebuilds from the same facts:

* mergeable ranks: ``tiktoken.model``, one ``base64(token) rank`` line per token (163,584 for K2.x);
* the pre-tokenizer pattern ``KIMI_PAT_STR`` (its class attribute ``pat_str``: Han runs first, then letter
  runs that exclude Han through ``&&`` class intersections, digits in groups of up to 3, ...);
* special tokens at ids ``n_ranks .. n_ranks + 256 + 2 - 1`` (``num_reserved_special_tokens`` is 256 and
  the class reserves two more): each id named by ``added_tokens_decoder`` or else
  ``<|reserved_token_{id}|>``.

Its ``encode`` allows every special token's text in the input (``allowed_special="all"``) and first cuts the
text into 400,000-character chunks and then into pieces holding at most 25,000 consecutive whitespace or
non-whitespace characters; ``TiktokenVocab(long_input=...)`` reproduces that (``tests/helpers/kimi_reference.py`` is the step-for-step reference).

    >>> import base64, json, pathlib, tempfile
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "tiktoken.model").write_text("".join(
    ...     f"{base64.b64encode(bytes([i])).decode()} {i}\\n" for i in range(256)))
    >>> _ = (d / "tokenizer_config.json").write_text(json.dumps(
    ...     {"added_tokens_decoder": {"258": {"content": "<|im_end|>", "special": True}}}))
    >>> enc, added = load_kimi_encoding(d / "tiktoken.model", d / "tokenizer_config.json")
    >>> added, enc.n_vocab, enc.encode("hi<|im_end|>", allowed_special="all")
    ({'<|im_end|>': 258}, 514, [104, 105, 258])
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from pathlib import Path

from sftpack.tokenizers import encodings
from sftpack.tokenizers.ranks_cache import cached_ranks

# tokenization_kimi.py's TikTokenTokenizer.pat_str (the same in the Kimi-K2, K2.5 and Kimi-Linear copies).
KIMI_PAT_STR = "|".join(
    [
        r"""[\p{Han}]+""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*"""
        r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
NUM_RESERVED_SPECIAL_TOKENS = 256 + 2  # tokenization_kimi.py: num_reserved_special_tokens + 2
MAX_ENCODE_CHARS = 400_000  # tokenization_kimi.py: TIKTOKEN_MAX_ENCODE_CHARS
MAX_RUN_CHARS = 25_000  # tokenization_kimi.py: MAX_NO_WHITESPACES_CHARS


def read_tiktoken_ranks(path: str | Path) -> dict[bytes, int]:
    """``tiktoken.model`` as ``{token bytes: rank}``; the ranks must be exactly ``0 .. n-1``."""
    return parse_tiktoken_ranks(Path(path).read_bytes(), path)


def parse_tiktoken_ranks(data: bytes, path: str | Path) -> dict[bytes, int]:
    """The ranks of ``tiktoken.model``'s bytes ``data`` (errors name ``path`` and the line)."""
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split()
        try:
            token, rank = base64.b64decode(fields[0], validate=True), int(fields[1])
            if len(fields) != 2:
                raise ValueError
        except (ValueError, IndexError, binascii.Error):
            raise ValueError(f"{path}:{number}: expected 'base64-token rank'")
        if token in ranks:
            raise ValueError(f"{path}:{number}: token {token!r} is listed twice")
        ranks[token] = rank
    if sorted(ranks.values()) != list(range(len(ranks))):
        raise ValueError(f"{path}: ranks are not 0..{len(ranks) - 1} (special ids are numbered from the count)")
    return ranks


def load_kimi_encoding(
    tiktoken_model: str | Path, tokenizer_config: str | Path
) -> tuple[object, dict[str, int]]:
    """The Kimi ``tiktoken.Encoding`` and the ``{name: id}`` of every ``added_tokens_decoder`` entry.

    The encoding holds the ranks, ``KIMI_PAT_STR`` and as special tokens the 258 slots after the ranks
    (named from ``added_tokens_decoder``, else ``<|reserved_token_{id}|>``) plus any named entry beyond them.
    """
    data = Path(tiktoken_model).read_bytes()
    sha256 = hashlib.sha256(data).hexdigest()
    # once per process, and kept in binary in sftpack's cache: 151,643 base64 lines parse in 0.16 s, read back in 0.05
    ranks = encodings.memo(("tiktoken.model ranks", sha256),
                           lambda: cached_ranks(data, sha256, lambda d: parse_tiktoken_ranks(d, tiktoken_model)))
    config = json.loads(Path(tokenizer_config).read_text(encoding="utf-8"))
    added: dict[str, int] = {}
    for key, entry in (config.get("added_tokens_decoder") or {}).items():
        name = entry["content"] if isinstance(entry, dict) else str(entry)
        if name in added:
            raise ValueError(f"{tokenizer_config}: {name!r} is named at ids {added[name]} and {key}")
        added[name] = int(key)
    n_ranks = len(ranks)
    by_id = {token_id: name for name, token_id in added.items()}
    reserved = range(n_ranks, n_ranks + NUM_RESERVED_SPECIAL_TOKENS)
    specials = {by_id.get(i, f"<|reserved_token_{i}|>"): i for i in reserved}
    for name, token_id in added.items():
        if token_id < n_ranks:
            raise ValueError(f"{tokenizer_config}: {name!r} has id {token_id}, inside the {n_ranks} BPE ranks")
        if specials.setdefault(name, token_id) != token_id:
            raise ValueError(f"{tokenizer_config}: {name!r} collides with a reserved token name")
    if len(set(specials.values())) != len(specials):
        raise ValueError(f"{tokenizer_config}: two special tokens share an id")
    # made once per process; its core when first used (a build: before its workers fork)
    return encodings.encoding(sha256, Path(tiktoken_model).name, KIMI_PAT_STR, specials, lambda: ranks), added


def load_kimi_files(request):
    """The ``kimi-tiktoken`` tokenizer format (:data:`sftpack.tokenizers.registry.TOKENIZER_FORMATS`): ``tiktoken.model`` +
    ``tokenizer_config.json`` of ``request`` (a :class:`sftpack.tokenizers.loading.TokenizerFiles`)."""
    from sftpack.base.errors import UsageError
    from sftpack.tokenizers.tiktoken_vocab import TiktokenVocab

    directory, path = request.directory, request.path
    if not (directory / "tiktoken.model").exists():
        raise UsageError(f"--tokenizer {path}: {request.profile.model} needs tiktoken.model and tokenizer_config.json")
    model_file = request.hash("tiktoken.model")
    try:
        encoding, _ = load_kimi_encoding(model_file, directory / "tokenizer_config.json")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise UsageError(f"--tokenizer {path}: cannot load the Kimi tokenizer files ({e})") from e
    info = request.info("Kimi tokenizer files (tiktoken.model + tokenizer_config.json) given with --tokenizer")
    # Cut long texts as tokenization_kimi.py's encode does, so tokens equal the real tokenizer's.
    return TiktokenVocab(encoding, request.eos_token, info, nfc=False, long_input=(MAX_ENCODE_CHARS, MAX_RUN_CHARS))
