"""sftpack: build, verify and feed the fixed-length packed SFT rows that verified training recipes are measured on.

Layers, lowest first (each imports only from itself and those below): ``base`` (errors, YAML, hashing),
``tokenizers``, ``families`` (registry, profiles, renderers, mask, encoder), ``sources`` (the source readers),
``rows`` (the rows formats), ``builder`` (the build pipeline: ``sftpack.build``), ``checks`` (verify, inspect,
diff), ``trainer`` (rollout, loss), ``cli``.
"""

from importlib import import_module

# The public names are imported on first use: `sftpack` (the command line) then installs its SIGINT/SIGTERM
# handlers before numpy, pyarrow and the tokenizers load, so an early Ctrl-C is a clean interruption too.
_EXPORTS = {
    "BuildConfig": "builder.config", "build": "builder.pipeline", "permutation": "builder.pipeline",
    "diff_rows": "checks.diff", "encode_conversation": "families.encode", "get_encoder": "families.encode",
    "hash_rows": "rows", "read_provenance": "rows",
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
