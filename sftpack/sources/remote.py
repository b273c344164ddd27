"""Sources in object storage (``s3://``, ``gs://``, ``hf://``, any ``fsspec`` URL): copied once into this machine's
cache and read from there by the local readers.

The build walks a seeded permutation of the whole source, so every encoding process reads rows from all over it:
reading them one range request at a time would cost a round trip per conversation. The object (a file, or a
directory of parquet shards) is copied whole into sftpack's cache (``sources/`` of
:func:`~sftpack.base.cache.cache_dir`) once per machine - under a lock, so that the processes of one node copy it
once between them - and read like any local file. The copy is named by the URL and the object's version (its ETag,
generation, or size and modification time), which the build record keeps as the source's revision: a node that
finds another version refuses (the workers compare their source with the driver's).
"""

from __future__ import annotations

import fcntl
import hashlib
import re
import shutil
from pathlib import Path

from sftpack.base.cache import cache_dir, publish, staging_dir
from sftpack.base.errors import UsageError

_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
# The fields fsspec's file systems give an object's version in, most specific first.
_VERSION_KEYS = ("listing", "VersionId", "ETag", "etag", "generation", "md5Hash", "sha256", "oid", "blob_id")


def is_url(spec: str) -> bool:
    """``--source`` is a URL (``s3://bucket/key``), not a path or a hub id.

    >>> is_url("s3://bucket/tulu.parquet"), is_url("tulu.parquet"), is_url("allenai/tulu-3-sft-mixture")
    (True, False, False)
    """
    return bool(_URL.match(spec)) and not spec.lower().startswith("file://")


def fetch(url: str) -> tuple[Path, str]:
    """This machine's copy of the object at ``url`` and its version; copied on first use."""
    fs, path, info = _stat(url)
    version = _version(info)
    key = hashlib.sha256(f"{url}\n{version}".encode()).hexdigest()[:24]
    root = cache_dir() / "sources"
    final = root / key
    name = Path(path.rstrip("/")).name or "source"
    if (final / name).exists():
        return final / name, version
    try:
        root.mkdir(parents=True, exist_ok=True)
        with open(root / f".{key}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another process of this machine may be copying it: wait for it
            if not (final / name).exists():
                staging = staging_dir(final)
                try:
                    _copy(fs, path, info, staging / name)
                except BaseException:
                    shutil.rmtree(staging, ignore_errors=True)
                    raise
                publish(staging, final)
    except OSError as e:
        raise UsageError(f"--source {url}: cannot copy it into {root} ({type(e).__name__}: {e})") from None
    return final / name, version


def _stat(url: str):
    try:
        import fsspec

        fs, path = fsspec.core.url_to_fs(url, skip_instance_cache=True)  # no listing cached from an earlier open
        info = fs.info(path)
        if info.get("type") == "directory":  # its version is its shards' names and versions
            listing = fs.ls(path, detail=True)
            shards = sorted((e["name"], _version(e)) for e in listing if e["name"].endswith(".parquet"))
            info = {**info, "shards": [name for name, _ in shards],
                    "listing": hashlib.sha256(repr(shards).encode()).hexdigest()}
        return fs, path, info
    except ImportError as e:  # the URL's file system is a package of its own: s3fs, gcsfs ...
        raise UsageError(f"--source {url}: cannot open it here ({e})") from None
    except FileNotFoundError:
        raise UsageError(f"--source {url}: no such object") from None
    except Exception as e:  # credentials, permissions, an endpoint that does not answer: the reason is in the error
        raise UsageError(f"--source {url}: cannot open it ({type(e).__name__}: {str(e)[:300]})") from None


def _version(info: dict) -> str:
    for key in _VERSION_KEYS:
        if info.get(key):
            return f"{key} {str(info[key]).strip(chr(34))}"
    return f"size {info.get('size')} modified {info.get('mtime') or info.get('LastModified') or info.get('updated')}"


def _copy(fs, path: str, info: dict, local: Path) -> None:
    """The object, or a directory's parquet shards, to ``local``."""
    if info.get("type") == "directory":
        local.mkdir()
        for shard in info["shards"]:
            fs.get(shard, str(local / Path(shard).name))
    else:
        fs.get(path, str(local))
