"""The installed sftpack version, as the build record and ``--version`` report it."""


def sftpack_version() -> str:
    """The installed package's version ("source checkout" when run from a checkout without an install)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sftpack")
    except PackageNotFoundError:
        return "source checkout"
