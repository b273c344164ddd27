"""Source code for fenced blocks: Python (functions, classes, nested blocks, docstrings), six C-like languages
from one grammar, and SQL queries."""

from __future__ import annotations

import random

from .draw import below, between, pick
from .lexicon import plural_or_same
from .prose import camel_name, paragraph, phrase, snake_name
from .tables import IDENT_WORDS


def python_expression(rng: random.Random, names: list[str]) -> str:
    x = rng.getrandbits(64)
    n = names[(x >> 10) % len(names)]
    r = x & 1023
    k = (x >> 20) & 127
    w = IDENT_WORDS[(x >> 27) % len(IDENT_WORDS)]
    if r < 143:
        return str(k)
    if r < 246:
        return f'"{w}"'
    if r < 328:
        return f"len({n})"
    if r < 410:
        return f"{n} * {2 + k % 9}"
    if r < 492:
        return f"{n}[{k % 6}]"
    if r < 594:
        v = "xyvkei"[(x >> 40) % 6]
        return f"[{v} for {v} in {n} if {v} > {k % 51}]"
    if r < 676:
        return f'{n}.get("{w}", {k % 10})'
    if r < 799:
        return f"{w}_{IDENT_WORDS[(x >> 40) % len(IDENT_WORDS)]}({n}, {1 + k % 9})"
    if r < 881:
        return f"sum({n}) / max(len({n}), 1)"
    if r < 952:
        return f'f"{phrase(rng, 2)} {{{n}}}"'
    return f'{{"{w}": {n}, "{IDENT_WORDS[(x >> 40) % len(IDENT_WORDS)]}": {k % 100}}}'


EXCEPTIONS = ("ValueError", "KeyError", "TypeError", "OSError", "ZeroDivisionError", "RuntimeError")


def python_block(rng: random.Random, ind: int, depth: int, names: list[str], n: int) -> list[str]:
    pad = "    " * ind
    lines: list[str] = []
    for _ in range(n):
        x = rng.getrandbits(64)
        r = x & 1023
        target = names[(x >> 10) % len(names)]
        w = IDENT_WORDS[(x >> 20) % len(IDENT_WORDS)]
        k = (x >> 32) & 1023
        sub = 1 + (x >> 42) % 3
        if depth < 3 and r < 307:
            kind = (x >> 48) % 6
            if kind <= 1:
                lines.append(f"{pad}for {w} in {target}:")
                lines += python_block(rng, ind + 1, depth + 1, names + [w], sub + (x >> 56) % 2)
            elif kind == 2:
                lines.append(f"{pad}if {target} > {k % 101}:")
                lines += python_block(rng, ind + 1, depth + 1, names, sub)
                if (x >> 56) & 3 == 0:
                    lines.append(f"{pad}elif {target} == {python_expression(rng, names)}:")
                    lines += python_block(rng, ind + 1, depth + 1, names, 1)
                if (x >> 58) & 1:
                    lines.append(f"{pad}else:")
                    lines += python_block(rng, ind + 1, depth + 1, names, 1 + (x >> 59) % 2)
            elif kind == 3:
                lines.append(f"{pad}while {target} < {k}:")
                lines += python_block(rng, ind + 1, depth + 1, names, sub)
            elif kind == 4:
                lines.append(f"{pad}try:")
                lines += python_block(rng, ind + 1, depth + 1, names, sub)
                lines.append(f"{pad}except {EXCEPTIONS[(x >> 56) % 6]} as exc:")
                lines.append(f'{pad}    logger.warning("{phrase(rng, 3)}: %s", exc)')
            else:
                lines.append(f'{pad}with open({target}, "r", encoding="utf-8") as handle:')
                lines += python_block(rng, ind + 1, depth + 1, names + ["handle"], sub)
        elif r < 563:
            v = w if (x >> 48) & 3 else f"{w}_{IDENT_WORDS[(x >> 50) % len(IDENT_WORDS)]}"
            lines.append(f"{pad}{v} = {python_expression(rng, names)}")
            names = names + [v]
        elif r < 645:
            lines.append(f"{pad}{target} += {python_expression(rng, names)}")
        elif r < 748:
            lines.append(f"{pad}{target}.append({python_expression(rng, names)})")
        elif r < 860:
            lines.append(f"{pad}# {phrase(rng, 4 + k % 8)}")
        else:
            lines.append(f'{pad}print(f"{phrase(rng, 2)}: {{{target}}}")')
    return lines


def python_function(rng: random.Random, ind: int = 0, method: bool = False) -> list[str]:
    pad = "    " * ind
    name = snake_name(rng, 2 + below(rng, 2))
    args = list(dict.fromkeys(pick(rng, IDENT_WORDS) for _ in range(1 + below(rng, 3))))
    hints = rng.random() < 0.5
    types = ("int", "float", "str", "list[int]", "dict[str, int]", "list[str]", "bool")
    shown = [f"{a}: {pick(rng, types)}" if hints else a for a in args]
    if method:
        shown = ["self"] + shown
    ret = f" -> {pick(rng, types)}" if hints else ""
    lines = [f"{pad}def {name}({', '.join(shown)}){ret}:"]
    if rng.random() < 0.7:
        doc = paragraph(rng, 6 + below(rng, 10))
        if rng.random() < 0.4:
            lines += [f'{pad}    """{doc}', "", f"{pad}    Args:"]
            lines += [f"{pad}        {a}: {phrase(rng, 3 + below(rng, 5))}." for a in args]
            lines += [f'{pad}    """']
        else:
            lines.append(f'{pad}    """{doc}"""')
    lines += python_block(rng, ind + 1, 0, args, 2 + below(rng, 7))
    lines.append(f"{pad}    return {python_expression(rng, args)}")
    return lines


def python_program(rng: random.Random, nlines: int) -> str:
    imports = ("import os", "import sys", "import json", "import math", "import re",
               "from collections import defaultdict", "from typing import Optional", "import numpy as np",
               "import pandas as pd", "from dataclasses import dataclass", "import random")
    x = rng.getrandbits(2 * len(imports))
    lines = sorted(["import logging"] + [imp for k, imp in enumerate(imports) if (x >> (2 * k)) & 3 == 0])
    lines += ["", "logger = logging.getLogger(__name__)", ""]
    while len(lines) < nlines:
        lines.append("")
        if rng.random() < 0.25:
            lines.append(f"class {camel_name(rng, 2)}:")
            lines.append(f'    """{paragraph(rng, 8 + below(rng, 12))}"""')
            lines.append("")
            args = [pick(rng, IDENT_WORDS) for _ in range(1 + below(rng, 3))]
            lines.append(f"    def __init__(self, {', '.join(args)}):")
            lines += [f"        self.{a} = {a}" for a in args]
            for _ in range(1 + below(rng, 3)):
                lines.append("")
                lines += python_function(rng, 1, method=True)
        else:
            lines += python_function(rng)
        lines.append("")
    lines += ["", 'if __name__ == "__main__":']
    lines += python_block(rng, 1, 2, ["sys.argv", "data"], 2 + below(rng, 3))
    return "\n".join(lines)


C_LIKE = {
    "javascript": dict(ind="  ", decl="const {v} = {e};", forl="for (const {x} of {n}) {{", cond="if ({n}.length > {k}) {{",
                       out="console.log(`{p}: ${{{v}}}`);", func="function {c}({a}) {{", ret="return {e};", close="}}",
                       comment="// {p}", pre=""),
    "typescript": dict(ind="  ", decl="const {v}: number = {e};", forl="for (const {x} of {n}) {{",
                       cond="if ({n}.length > {k}) {{", out="console.log(`{p}: ${{{v}}}`);",
                       func="export function {c}({a}: number[]): number {{", ret="return {e};", close="}}",
                       comment="// {p}", pre="import {{ readFileSync }} from \"fs\";\n\n"),
    "cpp": dict(ind="    ", decl="auto {v} = {e};", forl="for (const auto& {x} : {n}) {{", cond="if ({n}.size() > {k}) {{",
                out="std::cout << \"{p}: \" << {v} << std::endl;", func="int {s}(const std::vector<int>& {a}) {{",
                ret="return {e};", close="}}", comment="// {p}",
                pre="#include <iostream>\n#include <vector>\n#include <string>\n\n"),
    "java": dict(ind="    ", decl="int {v} = {e};", forl="for (int {x} : {n}) {{", cond="if ({n}.length > {k}) {{",
                 out="System.out.println(\"{p}: \" + {v});", func="public static int {c}(int[] {a}) {{",
                 ret="return {e};", close="}}", comment="// {p}", pre="import java.util.*;\n\n"),
    "rust": dict(ind="    ", decl="let mut {v} = {e};", forl="for {x} in {n}.iter() {{", cond="if {n}.len() > {k} {{",
                 out="println!(\"{p}: {{}}\", {v});", func="fn {s}({a}: &[i32]) -> i32 {{", ret="{e}",
                 close="}}", comment="// {p}", pre="use std::collections::HashMap;\n\n"),
    "go": dict(ind="\t", decl="{v} := {e}", forl="for _, {x} := range {n} {{", cond="if len({n}) > {k} {{",
               out="fmt.Println(\"{p}:\", {v})", func="func {c}({a} []int) int {{", ret="return {e}", close="}}",
               comment="// {p}", pre="package main\n\nimport \"fmt\"\n\n"),
}


def c_like_expression(rng: random.Random, names: list[str]) -> str:
    n = pick(rng, names)
    r = rng.random()
    if r < 0.3:
        return str(between(rng, 0, 1000))
    if r < 0.5:
        return f"{n} + {between(rng, 1, 50)}"
    if r < 0.7:
        return f"{n} * {between(rng, 2, 9)}"
    if r < 0.85:
        return f"{n}[{between(rng, 0, 7)}]"
    return f"{camel_name(rng, 2)[0].lower()}{camel_name(rng, 1)}({n})"


def c_like_block(rng, syn, depth, names, n) -> list[str]:
    pad = syn["ind"] * depth
    lines = []
    for _ in range(n):
        r = rng.random()
        if depth < 4 and r < 0.3:
            if rng.random() < 0.5:
                x = pick(rng, IDENT_WORDS)
                lines.append(pad + syn["forl"].format(x=x, n=pick(rng, names)))
                lines += c_like_block(rng, syn, depth + 1, names + [x], 1 + below(rng, 3))
            else:
                lines.append(pad + syn["cond"].format(n=pick(rng, names), k=between(rng, 0, 20)))
                lines += c_like_block(rng, syn, depth + 1, names, 1 + below(rng, 3))
            lines.append(pad + syn["close"].format())
        elif r < 0.7:
            v = pick(rng, IDENT_WORDS)
            lines.append(pad + syn["decl"].format(v=v, e=c_like_expression(rng, names)))
            names = names + [v]
        elif r < 0.85:
            lines.append(pad + syn["out"].format(p=phrase(rng, 2), v=pick(rng, names)))
        else:
            lines.append(pad + syn["comment"].format(p=phrase(rng, 3 + below(rng, 7))))
    return lines


def c_like_program(rng: random.Random, lang: str, nlines: int) -> str:
    syn = C_LIKE[lang]
    lines = [syn["pre"].format().rstrip("\n"), ""] if syn["pre"] else []
    while len(lines) < nlines:
        a = pick(rng, IDENT_WORDS)
        c = camel_name(rng, 2)
        lines.append(syn["func"].format(c=c[0].lower() + c[1:], s=snake_name(rng, 2), a=a))
        lines += c_like_block(rng, syn, 1, [a], 2 + below(rng, 6))
        lines.append(syn["ind"] + syn["ret"].format(e=c_like_expression(rng, [a])))
        lines.append(syn["close"].format())
        lines.append("")
    if lang == "java":
        head, body = lines[:1], lines[1:]
        lines = head + ["", f"public class {camel_name(rng, 2)} {{"] + ["    " + ln if ln else "" for ln in body] + ["}"]
    return "\n".join(lines).rstrip("\n")


def sql_query(rng: random.Random) -> str:
    t1, t2 = plural_or_same(pick(rng, IDENT_WORDS)), plural_or_same(pick(rng, IDENT_WORDS))
    c1, c2, c3 = pick(rng, IDENT_WORDS), pick(rng, IDENT_WORDS), pick(rng, IDENT_WORDS)
    return (f"SELECT a.{c1}, COUNT(*) AS {c1}_count, AVG(b.{c2}) AS avg_{c2}\n"
            f"FROM {t1} AS a\nJOIN {t2} AS b ON b.{c1}_id = a.id\n"
            f"WHERE b.{c3} > {between(rng, 1, 500)}\n  AND a.created_at >= '{between(rng, 2015, 2024)}-01-01'\n"
            f"GROUP BY a.{c1}\nHAVING COUNT(*) > {between(rng, 1, 20)}\nORDER BY {c1}_count DESC\n"
            f"LIMIT {pick(rng, (5, 10, 20, 100))};")


def any_program(rng: random.Random, nlines: int) -> tuple[str, str]:
    """``(language, source)`` of about ``nlines`` lines: Python 60%, a C-like language 35%, SQL 5%."""
    r = rng.random()
    if r < 0.6:
        return "python", python_program(rng, nlines)
    if r < 0.95:
        lang = pick(rng, tuple(C_LIKE))
        return lang, c_like_program(rng, lang, nlines)
    return "sql", sql_query(rng)
