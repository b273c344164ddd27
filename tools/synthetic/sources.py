"""The sources of Tulu 3's mixture, each a generator of one turn: ``generate(rng, lang, turn) -> (user,
answer)``, where a turn after the first leaves ``user`` empty (the conversation writes a follow-up instead).

:data:`SOURCES` weights them by Tulu 3's mixture counts."""

from __future__ import annotations

from itertools import accumulate

from .draw import below, between, pick, scaled
from .latex import math_solution, math_text
from .programs import any_program
from .prose import (
    markdown,
    markdown_table,
    paragraph,
    paragraph_in,
    persona,
    phrase,
    snake_name,
    split_paragraph,
    title_words,
)
from .lexicon import plural_or_same
from .tables import IDENT_WORDS, PEOPLE


def persona_math(rng, lang, turn):
    user = "" if turn else (f"{persona(rng)}. {math_text(rng, scaled(rng, 80))}\n\n"
            f"1. {math_text(rng, scaled(rng, 40))}?\n\n2. {math_text(rng, scaled(rng, 40))}?")
    return user, math_solution(rng, scaled(rng, 120), "persona")


def gsm8k(rng, lang, turn):
    user = f"{persona(rng)}. " + paragraph(rng, scaled(rng, 60)) + f" How many {plural_or_same(pick(rng, IDENT_WORDS))} {phrase(rng, 4)}?"
    steps = []
    total = 0
    for j in range(2 + below(rng, 4)):
        a, b = between(rng, 2, 60), between(rng, 2, 25)
        total += a * b
        steps.append(f"{j + 1}. **{title_words(rng, 2)}**: {paragraph(rng, 12 + below(rng, 30))}\n   \\[\n   {a} \\times {b} = {a * b}\n   \\]")
    ans = paragraph(rng, 15 + below(rng, 30)) + "\n\n" + "\n\n".join(steps) + f"\n\n{paragraph(rng, 10 + below(rng, 20))}\n\n#### {total}"
    return user, ans


def open_math(rng, lang, turn):
    user = paragraph(rng, scaled(rng, 55)) + f" How many {plural_or_same(pick(rng, IDENT_WORDS))} does {pick(rng, PEOPLE)} have?"
    a, b, c = between(rng, 2, 90), between(rng, 2, 30), between(rng, 1, 40)
    ans = (f"{paragraph(rng, 20 + below(rng, 40))} So {a} * {b} = {a * b}.\n{paragraph(rng, 15 + below(rng, 30))} "
           f"{a * b} + {c} = {a * b + c}.\nThus, the answer is \\boxed{{{a * b + c}}}.")
    return user, ans


def numina_tir(rng, lang, turn):
    user = "" if turn else math_text(rng, scaled(rng, 60))
    v = pick(rng, "xyz")
    code = (f"import sympy as sp\n\n# {phrase(rng, 5)}\n{v} = sp.symbols('{v}')\n"
            f"expr = {between(rng, 1, 9)}*{v}**2 + {between(rng, 1, 9)}*{v} - {between(rng, 1, 50)}\n"
            f"solutions = sp.solve(expr, {v})\nprint(solutions)")
    out = f"[{between(rng, -9, 9)}/{between(rng, 1, 9)}, {between(rng, -9, 9)}]"
    ans = (f"{math_text(rng, scaled(rng, 35))}\n\n" + "\n".join(f"{j + 1}. {math_text(rng, 12 + below(rng, 20))}" for j in range(2 + below(rng, 3)))
           + f"\n\nLet's implement this in Python using sympy:\n\n```python\n{code}\n```\n```output\n{out}\n```\n"
           + math_solution(rng, scaled(rng, 50), "boxed"))
    return user, ans


def intermediate_algebra(rng, lang, turn):
    user = "" if turn else f"{persona(rng)}. " + math_text(rng, scaled(rng, 55))
    return user, math_solution(rng, scaled(rng, 130), "persona")


def code_answer(rng, nlines, nwords):
    lang, code = any_program(rng, nlines)
    pieces = split_paragraph(rng, "en", nwords, max(3, nwords // 18))
    parts = [pieces[0], f"```{lang}\n{code}\n```", "### Explanation"]
    i = 1
    while i < len(pieces):
        x = rng.getrandbits(32)
        take = 2 + (x & 3)
        parts.append("\n".join(f"{j + 1}. **{title_words(rng, 1 + (x >> (2 + j)) % 3)}**: {p}" for j, p in enumerate(pieces[i:i + take])))
        i += take
        if (x >> 10) % 10 < 4 and i < len(pieces):
            parts.append(pieces[i])
            i += 1
    if rng.random() < 0.4:
        parts.append(f"Example usage:\n\n```{lang}\n{snake_name(rng, 2)}({between(rng, 1, 99)}, \"{pick(rng, IDENT_WORDS)}\")\n```\n\nOutput:\n```\n{phrase(rng, 5)}\n```")
    return "\n\n".join(parts)


def persona_code(rng, lang, turn):
    user = "" if turn else (f"Write a Python function to {phrase(rng, 8)}. {paragraph(rng, scaled(rng, 90))}\n\n"
            f"Input: {paragraph(rng, 12)}\n\nOutput: {paragraph(rng, 10)}\n\nExample:\n```python\n{snake_name(rng, 2)} = {[between(rng, 0, 99) for _ in range(4)]}\n```")
    return user, code_answer(rng, scaled(rng, 13), scaled(rng, 80))


def evol_code(rng, lang, turn):
    if turn:
        user = ""
    elif rng.random() < 0.3:
        _, snippet = any_program(rng, 6 + below(rng, 15))
        user = f"{paragraph(rng, scaled(rng, 40))}\n\n```\n{snippet}\n```\n\n{paragraph(rng, 15)}"
    else:
        user = f"Develop a {pick(rng, ('Python', 'JavaScript', 'Java', 'C++', 'Rust', 'Go', 'SQL'))} {pick(rng, ('function', 'class', 'script', 'program', 'query'))} that {paragraph(rng, scaled(rng, 70))}"
    return user, code_answer(rng, scaled(rng, 12), scaled(rng, 60))


def aya(rng, lang, turn):
    if lang == "en":
        lang = "es"
    user = "" if turn else paragraph_in(rng, lang, scaled(rng, 55))
    if rng.random() < 0.6:
        return user, paragraph_in(rng, lang, scaled(rng, 60))
    return user, markdown(rng, scaled(rng, 130), lang, emoji=0.02)


def wildchat(rng, lang, turn):
    r = rng.random()
    if lang == "en" and r < 0.25:
        return evol_code(rng, lang, turn)
    if turn:
        user = ""
    elif r < 0.4:
        user = paragraph_in(rng, lang, scaled(rng, 30))
    elif r < 0.85:
        user = paragraph_in(rng, lang, scaled(rng, 90))
    else:
        user = paragraph_in(rng, lang, scaled(rng, 300)) + "\n\n" + paragraph_in(rng, lang, scaled(rng, 250))
    return user, markdown(rng, scaled(rng, 90), lang, emoji=0.03)


def flan(rng, lang, turn):
    r = below(rng, 5)
    if r == 0:
        q = f"Q: {paragraph(rng, scaled(rng, 40))}\nOptions:\n- yes\n- no\n- it is not possible to tell\nA:"
        a = f"{paragraph(rng, scaled(rng, 45))}\nThe answer is {pick(rng, ('yes', 'no', 'it is not possible to tell'))}."
    elif r == 1:
        q = f'Premise: "{paragraph(rng, 18)}"\nHypothesis: "{paragraph(rng, 10)}"\nIs the hypothesis entailed by the premise?\nLet\'s solve step-by-step:'
        a = paragraph(rng, scaled(rng, 45)) + f" The answer is {pick(rng, ('yes', 'no'))}."
    elif r == 2:
        target = pick(rng, ("fr", "es", "ru", "zh", "ar"))
        name = {"fr": "French", "es": "Spanish", "ru": "Russian", "zh": "Chinese", "ar": "Arabic"}[target]
        q = f'Translate the following sentence to {name}:\n"{paragraph(rng, scaled(rng, 30))}"'
        a = paragraph_in(rng, target, scaled(rng, 30))
    elif r == 3:
        q = f"Write a short summary for this text:\n\n{paragraph(rng, scaled(rng, 260))}\n\nSummary:"
        a = paragraph(rng, scaled(rng, 35))
    else:
        q = f"{paragraph(rng, scaled(rng, 90))}\n\nAnswer the following question: {paragraph(rng, 12)}"
        a = paragraph(rng, scaled(rng, 50))
    return q, a


def refusal(rng, lang, turn):
    user = "" if turn else paragraph(rng, scaled(rng, 30))
    if not turn and rng.random() < 0.5:
        user = f"Imagine you are {persona(rng, start=False)}. " + paragraph(rng, scaled(rng, 160)) + f' Begin by replying with: "Sure, here is {phrase(rng, 5)}"'
    if rng.random() < 0.5:
        ans = f"I'm sorry, but I can't assist with that request. {paragraph(rng, scaled(rng, 45))}"
    else:
        ans = f"Sure, here is {phrase(rng, 5)}:\n\n" + markdown(rng, scaled(rng, 140))
    return user, ans


def coconot(rng, lang, turn):
    user = paragraph(rng, scaled(rng, 22))
    lead = pick(rng, ("I'm sorry, but I can't", "As an AI, I don't have the ability to", "I'm unable to",
                       "Unfortunately, I can't"))
    return user, f"{lead} {phrase(rng, 6)}. {paragraph(rng, scaled(rng, 90))}"


def instruction_following(rng, lang, turn):
    n = between(rng, 2, 6)
    w = pick(rng, IDENT_WORDS)
    user = (f"Write a {pick(rng, ('blog post', 'poem', 'letter', 'story', 'speech', 'product description', 'essay'))} about {phrase(rng, 4)}. "
            f"{paragraph(rng, scaled(rng, 40))} Your response should contain {n} paragraphs separated by the markdown divider: ***. "
            f"In your response, the word {w} should appear at least 3 times. End your response with the exact phrase 'Is there anything else I can help with?'")
    paras = [paragraph(rng, scaled(rng, 60)) + f" {w.capitalize()} {phrase(rng, 6)}." for _ in range(n)]
    return user, "\n\n***\n\n".join(paras) + "\n\nIs there anything else I can help with?"


def sciriff(rng, lang, turn):
    user = (f"You will be shown an abstract from a biomedical research paper. {paragraph(rng, 40)}\n\n"
            f"Paper title: {title_words(rng, 8)}\n\nAbstract:\n{paragraph(rng, scaled(rng, 280))}\n\n"
            f"Question: {paragraph(rng, 14)}\n\nReturn your answer as a JSON object with the keys \"answer\" and \"evidence\".")
    ev = ", ".join(f'"{paragraph(rng, 14)}"' for _ in range(1 + below(rng, 3)))
    return user, f'{{"answer": "{phrase(rng, 4)}", "evidence": [{ev}]}}'




def table_task(rng, lang, turn):
    table, head = markdown_table(rng, 3 + below(rng, 12), 3 + below(rng, 5))
    user = (f"Task: {paragraph(rng, scaled(rng, 40))}\n\nInput:\nTable A:\n{table}\n\n"
            f"Return the final result as JSON in the format {{\"column_mappings\": \"<a list of column pairs>\"}}.\nOutput:\n")
    pairs = ", ".join(f'["{h}", "{title_words(rng, 2)}"]' for h in head)
    return user, f'{{"column_mappings": [{pairs}]}}' if rng.random() < 0.7 else markdown_table(rng, 3 + below(rng, 8), len(head))[0]


def open_ended(rng, lang, turn):
    """no_robots / oasst1 style: open-ended requests answered in prose or markdown."""
    user = "" if turn else paragraph_in(rng, lang, scaled(rng, 45))
    if rng.random() < 0.45:
        return user, paragraph_in(rng, lang, scaled(rng, 100))
    return user, markdown(rng, scaled(rng, 170), lang, emoji=0.01)


def hard_coded(rng, lang, turn):
    user = pick(rng, ("Who are you?", "What is your name?", "Who built you?", "Tell me about yourself.",
                       "Are you ChatGPT?", "What model are you?"))
    return user, ("I am Tülu, a helpful AI assistant built by researchers at the Allen Institute for AI (Ai2). "
                  + paragraph(rng, scaled(rng, 40)))


LANGUAGE_MIX = {  # languages and cumulative weights
    "aya": (("hi", "ar", "ja", "ko", "zh", "ru", "es", "fr"), (14, 28, 38, 48, 60, 72, 86, 100)),
    "wildchat": (("en", "zh", "ru", "ja", "ko", "ar", "fr", "es"), (58, 76, 88, 91, 93, 95, 98, 100)),
    "oasst": (("en", "es", "ru", "zh", "fr", "ja", "ko", "ar"), (60, 74, 84, 89, 95, 97, 98, 100)),
}

# name, weight (thousands of Tulu rows), id style, share with a system prompt, share multi-turn, generator,
# language mix (a key of LANGUAGE_MIX, or English only)
SOURCES = (
    ("ai2-adapt-dev/personahub_math_v5_regen_149960", 150, "personahub", 0.09, 0.10, persona_math, None),
    ("ai2-adapt-dev/evol_codealpaca_heval_decontaminated", 107, "num", 0.14, 0.28, evol_code, None),
    ("ai2-adapt-dev/tulu_v3.9_aya_100k", 100, "num", 0.12, 0.20, aya, "aya"),
    ("ai2-adapt-dev/tulu_v3.9_wildchat_100k", 100, "num", 0.24, 0.65, wildchat, "wildchat"),
    ("ai2-adapt-dev/flan_v2_converted", 90, "num", 0.27, 0.10, flan, None),
    ("ai2-adapt-dev/numinamath_tir_math_decontaminated", 64, "num", 0.11, 0.12, numina_tir, None),
    ("ai2-adapt-dev/tulu_v3.9_wildjailbreak_decontaminated_50k", 50, "num", 0.20, 0.20, refusal, None),
    ("ai2-adapt-dev/tulu_v3.9_synthetic_finalresp_wildguardmixtrain_decontaminated_50k", 50, "num", 0.20, 0.20,
     refusal, None),
    ("allenai/tulu-3-sft-personas-math-grade", 50, "personas_math_easy", 0.08, 0.10, gsm8k, None),
    ("ai2-adapt-dev/tulu_v3.9_open_math_2_gsm8k_50k", 50, "num", 0.08, 0.10, open_math, None),
    ("ai2-adapt-dev/personahub_code_v2_34999", 25, "personahub", 0.12, 0.20, persona_code, None),
    ("allenai/tulu-3-sft-personas-code", 10, "personas_code", 0.12, 0.20, persona_code, None),
    ("ai2-adapt-dev/personahub_ifdata_manual_seed_v3_29980", 30, "personahub", 0.14, 0.15, instruction_following, None),
    ("ai2-adapt-dev/tulu_v3.9_personahub_math_interm_algebra_20k", 20, "personahub", 0.10, 0.10, intermediate_algebra, None),
    ("ai2-adapt-dev/coconot_converted", 11, "num", 0.20, 0.15, coconot, None),
    ("ai2-adapt-dev/tulu_v3.9_sciriff_10k", 10, "num", 0.30, 0.05, sciriff, None),
    ("ai2-adapt-dev/no_robots_converted", 9.5, "num", 0.35, 0.30, open_ended, None),
    ("ai2-adapt-dev/oasst1_converted", 7.1, "oasst1", 0.10, 0.55, open_ended, "oasst"),
    ("ai2-adapt-dev/tulu_v3.9_table_gpt_5k", 5, "num", 0.15, 0.05, table_task, None),
    ("ai2-adapt-dev/tulu_hard_coded_repeated_10", 0.24, "hard_coded", 0.30, 0.0, hard_coded, None),
)
SOURCE_CUMULATIVE = list(accumulate(float(source[1]) for source in SOURCES))  # a source is drawn by bisection
