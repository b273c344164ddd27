"""sftpack: build, verify and feed the fixed-length packed SFT rows that verified training recipes are measured on.

Pipeline (one module per step): ``source`` (read) -> ``conversation`` (check) -> ``render`` -> ``mask`` ->
``vocab`` (tokenize) -> ``pack`` -> ``write``; ``pipeline`` runs them (``sftpack.build``), ``rows`` hashes and reads the result.
"""

from importlib import import_module

# The public names are imported on first use: `sftpack` (the command line) then installs its SIGINT/SIGTERM
# handlers before numpy, pyarrow and the tokenizers load, so an early Ctrl-C is a clean interruption too.
_EXPORTS = {
    "BuildConfig": "config", "build": "pipeline", "permutation": "pipeline", "diff_rows": "diff",
    "encode_conversation": "encode", "get_encoder": "encode", "hash_rows": "rows", "read_provenance": "rows",
    "read_rows": "rows", "rows_sha256_of": "rows",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
