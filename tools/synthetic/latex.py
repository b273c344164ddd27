"""Mathematics: LaTeX formulas, prose with inline formulas and worked solutions in the styles of Tulu's math
sources."""

from __future__ import annotations

import random

from .draw import between
from .prose import paragraph, phrase, split_paragraph, title_words


def polynomial(rng: random.Random, v: str) -> str:
    x = rng.getrandbits(48)
    deg = 1 + (x & 3)
    x >>= 2
    out = ""
    for p in range(deg, -1, -1):
        c = 1 + (x & 15) % 15
        keep, neg = (x >> 4) & 3, (x >> 6) & 3 == 0
        x >>= 8
        if p != deg and not keep:
            continue
        coef = "" if c == 1 else str(c)
        body = f"{coef}{v}^{{{p}}}" if p > 1 else f"{coef}{v}" if p == 1 else str(c)
        out = (("-" if neg else "") + body) if not out else f"{out} {'-' if neg else '+'} {body}"
    return out


def make_formula(rng: random.Random) -> str:
    x = rng.getrandbits(32)
    v = "xyztnkab"[x & 7]
    a, b, c = 1 + ((x >> 3) & 15) % 12, 1 + ((x >> 7) & 31) % 20, 1 + ((x >> 12) & 63) % 50
    r = ((x >> 18) & 255) % 13
    if r <= 1:
        return polynomial(rng, v)
    if r == 2:
        return f"\\frac{{{a}{v} + {b}}}{{{c}}}"
    if r == 3:
        return f"\\sqrt{{{a}{v}^2 + {b}}}"
    if r == 4:
        return f"\\sum_{{i=1}}^{{{c}}} {a} i^{{2}}"
    if r == 5:
        return f"\\int_{{0}}^{{{b}}} \\left({polynomial(rng, v)}\\right) \\, d{v}"
    if r == 6:
        return f"\\frac{{d}}{{d{v}}}\\left({polynomial(rng, v)}\\right)"
    if r == 7:
        return f"{a}\\sin({b}{v}) + \\cos\\left(\\frac{{\\pi}}{{{a + 1}}}\\right)"
    if r == 8:
        return f"e^{{{a}{v}}} - \\ln({b}{v})"
    if r == 9:
        return f"\\begin{{pmatrix}} {a} & {b} \\\\ {c} & {a + b} \\end{{pmatrix}}"
    if r == 10:
        return f"\\lim_{{{v} \\to \\infty}} \\frac{{{a}{v}^2}}{{{b}{v}^2 + {c}}}"
    if r == 11:
        return f"P(X = {a}) = \\binom{{{a + c}}}{{{a}}} p^{{{a}}} (1-p)^{{{c}}}"
    return f"{a}{v} + {b} \\leq {c}"


FORMULA_POOL_BITS = 13
# drawing from a fixed pool is ~10x faster than making each formula
FORMULA_POOL = (lambda rng: tuple(make_formula(rng) for _ in range(1 << FORMULA_POOL_BITS)))(random.Random("sftpack-tex"))


def formula(rng: random.Random) -> str:
    return FORMULA_POOL[rng.getrandbits(FORMULA_POOL_BITS)]


def with_formulas(rng: random.Random, text: str) -> str:
    """``text`` with inline LaTeX (``$...$`` or ``\\( ... \\)``) inserted at word breaks, about every 130 characters."""
    m = 1 + len(text) // 130
    step = len(text) // (m + 1)
    out = []
    last = 0
    bits = rng.getrandbits(24 * m)
    for j in range(1, m + 1):
        x = bits & 0xFFFFFF
        bits >>= 24
        p = text.find(" ", j * step + (x >> 15) % (step // 2 + 1))
        if p <= last:
            continue
        tex = FORMULA_POOL[x & 8191]
        out.append(text[last:p])
        out.append(f" \\( {tex} \\)" if (x >> 13) & 3 == 0 else f" ${tex}$")
        last = p
    out.append(text[last:])
    return "".join(out)


def math_text(rng: random.Random, nwords: int) -> str:
    """Prose with inline LaTeX."""
    return with_formulas(rng, paragraph(rng, nwords))


def math_solution(rng: random.Random, nwords: int, style: str) -> str:
    pieces = split_paragraph(rng, "en", nwords, max(3, nwords // 16))
    blocks = [f"To solve the problem, we {phrase(rng, 6)}. " + pieces[0]]
    part = 1
    i = 1
    while i < len(pieces):
        x = rng.getrandbits(32)
        if x & 3 == 0:
            blocks.append(f"### Part {part}: {title_words(rng, 2 + (x >> 2) % 4)}")
            part += 1
        take = 1 + (x >> 4) % 2
        blocks.append(with_formulas(rng, " ".join(pieces[i:i + take])))
        i += take
        rhs = formula(rng) if (x >> 6) & 1 else str(((x >> 7) & 511) - 50)
        blocks.append(f"\\[\n{formula(rng)} = {rhs}\n\\]" if (x >> 16) & 1 else f"$$ {formula(rng)} = {rhs} $$")
        if (x >> 17) % 10 < 3 and i < len(pieces):
            take = 2 + (x >> 21) % 3
            blocks.append("\n".join(f"{j + 1}. {with_formulas(rng, p)}" for j, p in enumerate(pieces[i:i + take])))
            i += take
    answer = between(rng, -20, 2000) if rng.random() < 0.7 else f"\\frac{{{between(rng, 1, 30)}}}{{{between(rng, 2, 40)}}}"
    if style == "persona":
        blocks.append(f"Final Answer: The final answer is ${answer}$. I hope it is correct.")
    elif style == "gsm":
        blocks.append(f"#### {answer}")
    else:
        blocks.append(f"Therefore, the answer is \\(\\boxed{{{answer}}}\\).")
    return "\n\n".join(blocks)
