"""The runnable examples in sftpack's docstrings run, against whichever sftpack is imported (the installed
package in CI, so collection never mixes it up with the source tree)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import sftpack

MODULES = sorted(m.name for m in pkgutil.walk_packages(sftpack.__path__, "sftpack.") if not m.name.endswith("__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
