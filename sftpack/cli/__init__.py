"""``sftpack`` command line: a thin shell over the library. Exit codes: 0 ok, 1 check failed, 2 usage/input error.

A command is a module of this package with ``add(subparsers) -> parser`` (its arguments) and ``run(args) -> exit
code`` (what it does), listed in :data:`COMMANDS`; libraries load inside ``run``, after the command line has
installed its signal handlers."""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import traceback

from sftpack.base.arguments import command_line
from sftpack.base.errors import CheckFailed, UsageError, one_line
from sftpack.base.refs import close_matches, did_you_mean
from sftpack.base.version import sftpack_version
from sftpack.builder import interrupts
from sftpack.cli import (
    build,
    convert,
    diff,
    encode,
    fetch_tokenizer,
    hash,
    inspect,
    loss,
    models,
    new_model,
    verify,
)

# The commands, in the order `sftpack --help` lists them.
COMMANDS = (build, models, new_model, fetch_tokenizer, hash, convert, encode, verify, inspect, diff, loss)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own usage errors: one line, exit 2, with a "did you mean"
        print(f"sftpack: error: {one_line(message + self._suggestion(message), 4000)} (see `{self.prog} --help`)",
              file=sys.stderr)
        raise SystemExit(2)

    def parse_args(self, args=None, namespace=None):
        args, extras = self.parse_known_args(args, namespace)
        if extras:  # named by the command whose flags they miss, with the flags they were likely meant to be
            command = self._commands().get(getattr(args, "command", None), self)
            command.error(f"unrecognized arguments: {' '.join(extras)}")
        return args

    def _commands(self) -> dict:
        actions = [a for a in self._actions if isinstance(a, argparse._SubParsersAction)]
        return dict(actions[0].choices) if actions else {}

    def _suggestion(self, message: str) -> str:
        """What an unknown subcommand or flag was likely meant to be (argparse lists the choices itself)."""
        choice = re.search(r"invalid choice: '([^']*)'", message)
        if choice and message.startswith("argument COMMAND"):
            return did_you_mean(choice[1], self._commands())
        if message.startswith("unrecognized arguments: "):
            flags = [a for a in self._option_string_actions if a.startswith("--") and a not in ("--help", "--version")]
            wrong = [word.split("=")[0] for word in message.split()[2:] if word.startswith("-")]
            hints = [(w, " or ".join(m)) for w in wrong if (m := close_matches(w, flags))]
            if len(hints) == 1:
                return f"; did you mean {hints[0][1]}?"
            return f"; did you mean {', '.join(f'{m} for {w}' for w, m in hints)}?" if hints else ""
        return ""


def make_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="sftpack", description="Build, verify and feed fixed-length packed SFT rows.")
    parser.add_argument("--version", action="version", version=f"sftpack {sftpack_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for command in COMMANDS:
        command.add(sub).set_defaults(func=command.run)
    return parser


class _WarningLines(logging.Handler):
    """``sftpack: warning: ...`` on the stderr of the moment (tests and pipes swap sys.stderr)."""

    def emit(self, record):
        print(f"sftpack: {record.levelname.lower()}: {record.getMessage()}", file=sys.stderr)


def _install_warning_lines() -> None:
    logger = logging.getLogger("sftpack")
    if not any(isinstance(h, _WarningLines) for h in logger.handlers):
        logger.addHandler(_WarningLines(logging.WARNING))


def _one_line(kind: str, error: BaseException) -> None:
    # SFTPACK_DEBUG=1: the traceback (with its chained causes) too, for a bug report
    if os.environ.get("SFTPACK_DEBUG", "") not in ("", "0"):
        traceback.print_exception(error, file=sys.stderr)
    limit = 4000 if getattr(error, "whole", False) else 400  # a known list is given whole, never cut mid-name
    print(f"sftpack: {kind}: {one_line(error, limit)}", file=sys.stderr)  # one printable line, whatever it says


def main(argv=None) -> int:
    """The command line. Without ``argv`` it is the program (console script, ``python -m sftpack``): it keeps its
    SIGINT/SIGTERM handlers to the very end and leaves the process itself, see :func:`_exit`. With ``argv`` (tests,
    notebooks) it returns the exit code and puts the previous handlers back."""
    words = [str(w) for w in (argv if argv is not None else sys.argv[1:])]
    _RUNNING[:] = [next((w for w in words if not w.startswith("-")), "")]  # known before parsing: a signal may come
    if argv is not None:
        previous = interrupts.install()
        try:
            return _run(argv)
        finally:
            interrupts.restore(previous)
    try:  # inside the try: a signal right after the handlers are installed is an interruption, never a traceback
        interrupts.install()  # SIGINT and SIGTERM: clean up (temporaries, workers), exit 130 / 143
        code = _run(None)
    except KeyboardInterrupt as e:  # before the handlers were installed
        code = _interrupted(e)
    _exit(code)


def _run(argv) -> int:
    _install_warning_lines()
    with command_line():  # errors name flags (--overwrite), not Python arguments (overwrite=True)
        return _run_command(argv)


def _run_command(argv) -> int:
    try:
        args = make_parser().parse_args(argv)
        code = args.func(args)
        interrupts.check()  # a signal whose raise was lost in a finalizer, see sftpack.builder.interrupts
        return code
    except UsageError as e:
        _one_line("error", e)
        return 2
    except CheckFailed as e:
        _one_line("check failed", e)
        return 1
    except KeyboardInterrupt as e:  # interrupts.Interrupted, or Ctrl-C where no handler of ours was installed
        return _interrupted(e)
    except BrokenPipeError:
        return 0
    except Exception as e:
        if not _unreadable_input(e):
            raise  # a bug: the traceback is what a report needs
        _one_line("error", RuntimeError(f"{type(e).__name__}: {e}"))
        return 2


def _unreadable_input(e: Exception) -> bool:
    """A file the command was given cannot be read (I/O error, a corrupt parquet page pyarrow chokes on)."""
    pa = sys.modules.get("pyarrow")
    return isinstance(e, OSError) or (pa is not None and isinstance(e, pa.lib.ArrowException))


_RUNNING: list[str] = []  # the command being run, for what an interruption says of its outputs
ATOMIC = {"build": "a build writes its outputs only when it completes",
          "convert": "convert writes its outputs only when it completes",
          "verify": "verify writes nothing; a --keep rebuild only when it completes"}


def _interrupted(e: KeyboardInterrupt) -> int:
    said = ATOMIC.get(_RUNNING[-1] if _RUNNING else "")
    print("sftpack: interrupted" + (f" ({said})" if said else ""), file=sys.stderr)
    return e.exit_code if isinstance(e, interrupts.Interrupted) else 130


def _exit(code: int) -> None:
    """Flush, run the atexit handlers and leave without the interpreter's teardown: freeing a loaded tokenizer
    (millions of objects) takes 0.3 s alone and seconds on a busy machine, during which a Ctrl-C would find the
    outputs long written but the process still there."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # `sftpack ... | head`: the reader is gone
        pass
    try:
        sys.stderr.flush()
    except OSError:
        pass
    import atexit

    atexit._run_exitfuncs()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
