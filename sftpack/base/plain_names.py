"""Names that become file names (a build's ``--name``, a profile's ``build_name``): checked once, the same way.

    >>> plain_name_problem("qwen35-tulu3", "--name") is None
    True
    >>> plain_name_problem("../x", "--name")
    "--name '../x': a plain file name is needed (no '/', not empty, not starting with '.', printable)"
"""

from __future__ import annotations

NAME_MAX = 255  # bytes in a file name (Linux, macOS)


def plain_name_problem(value: str, flag: str) -> str | None:
    """What is wrong with ``value`` as the stem of the files a build writes (``flag`` names where it came from),
    or None: no '/', not empty, not hidden, nothing a terminal would interpret, short enough for every file
    name made from it."""
    if not value or "/" in value or value.startswith(".") or not value.isprintable():
        return f"{flag} {value!r}: a plain file name is needed (no '/', not empty, not starting with '.', printable)"
    longest = len(f".{value}.trl.build.yaml.tmp".encode())  # the longest file name made from it (a TRL record)
    if longest > NAME_MAX:
        return f"{flag}: {len(value)} characters is too long (file names made from it must fit in {NAME_MAX} bytes)"
    return None
