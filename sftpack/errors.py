"""Errors a user can cause. The CLI prints them as one line and exits 2; they never show a traceback."""


class UsageError(Exception):
    """Bad arguments or unusable input (exit code 2)."""


class CheckFailed(Exception):
    """A check (verify, pins) failed (exit code 1)."""
