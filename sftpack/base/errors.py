"""Errors a user can cause. The CLI prints them as one line and exits 2; they never show a traceback."""


class UsageError(ValueError):
    """Bad arguments or unusable input (exit code 2). A ``ValueError``: what a Python caller catches for a bad
    argument. ``whole``: a message sftpack built from a list it knows (the known models), printed uncut."""

    def __init__(self, *args, whole: bool = False):
        super().__init__(*args)
        self.whole = whole


class CheckFailed(Exception):
    """A check (verify, pins) failed (exit code 1)."""


def one_line(text: str, limit: int = 400) -> str:
    r"""``text`` as one printable line for a terminal: runs of whitespace (newlines included) become one space,
    other control characters are escaped, and a message longer than ``limit`` characters is cut.

    >>> one_line("Couldn't deserialize thrift: TProtocolException: Invalid data\n\x07")
    "Couldn't deserialize thrift: TProtocolException: Invalid data \\x07"
    """
    text = " ".join(str(text).split())
    text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return text if len(text) <= limit else text[: limit - 1] + "…"
