"""quicktok against tiktoken, token for token, for every family with an offline vocabulary: the bundled sample,
generated adversarial text (every Unicode code point, marks, long runs, special-token text) and the official
templates' renders. tiktoken is the reference; quicktok must give its tokens on every text the backend routes to
it, and the routing must send the rest to tiktoken."""

from __future__ import annotations

import logging
import random
import sys
import unicodedata

import numpy as np
import pytest

from helpers.unsafe import unsafe_table
from sftpack.tokenizers import backend
from sftpack.tokenizers.backend import quicktok_for

pytest.importorskip("quicktok")

# family -> (a model of it, the offline loader's module:function)
FAMILIES = {
    "qwen3_5": "Qwen3.5-122B-A10B",
    "qwen3": "Qwen3-30B-A3B",
    "gpt_oss": "gpt-oss-20b",
}
MARKS = {"qwen3_5"}  # families whose regex quicktok implements only on texts without combining marks
CHUNK = 128


@pytest.fixture(scope="module")
def engines(request, o200k_caches):
    """family -> (vocabulary, its tiktoken encoding, its quicktok engine)."""
    from sftpack.tokenizers.loading import load_vocab
    from sftpack.families.profiles import load_profile

    loaded = {}
    for family, model in FAMILIES.items():
        vocab = load_vocab(load_profile(model), hub=False)
        loaded[family] = (vocab, vocab.enc, quicktok_for(vocab.enc))
    return loaded


def agree(enc, fast, texts: list[str]) -> list[str]:
    """The texts quicktok accepts whose tokens differ from tiktoken's (empty: they agree)."""
    allowed = frozenset(enc._special_tokens)
    ok = fast.exact(texts)
    return [t for t, accepted in zip(texts, ok) if accepted
            and fast.encode_to_numpy(t).tolist() != enc.encode(t, allowed_special=allowed)]


def test_quicktok_is_used_for_the_families_whose_regex_it_implements(engines):
    from sftpack.tokenizers.offline import load_offline_deepseek

    for family, (vocab, enc, fast) in engines.items():
        assert fast is not None, family
    deepseek = load_offline_deepseek()
    assert getattr(deepseek, "enc", None) is None or quicktok_for(deepseek.enc) is None  # a regex it lacks
    assert quicktok_for(engines["qwen3"][1], "tiktoken") is None  # forced


def _sample_texts(family: str, vocab) -> list[str]:
    from sftpack.families.conversation import Skip
    from sftpack.families.encode import make_encoder
    from sftpack.families.profiles import load_profile
    from sftpack.sources import open_source

    encoder = make_encoder(load_profile(FAMILIES[family]), vocab)
    texts = []
    for item in open_source("sample").take(np.arange(len(open_source("sample")))):
        try:
            texts.append(encoder.render_text(item[1]))
        except (Skip, Exception):
            continue
    return texts


@pytest.mark.parametrize("family", FAMILIES)
def test_bundled_sample_token_for_token(engines, family):
    vocab, enc, fast = engines[family]
    texts = _sample_texts(family, vocab)
    assert len(texts) > 100
    assert agree(enc, fast, texts) == []
    accepted = fast.exact(texts)
    assert accepted.mean() > 0.9, f"quicktok took only {accepted.mean():.0%} of the sample"
    # the batch form the build uses: one call on CHUNK joined conversations
    allowed = frozenset(enc._special_tokens)
    for start in range(0, len(texts), CHUNK):
        chunk = [t for t, ok in zip(texts[start : start + CHUNK], accepted[start : start + CHUNK]) if ok]
        joined = "".join(chunk)
        assert fast.encode_to_numpy(joined).tolist() == enc.encode(joined, allowed_special=allowed)


def _snippets(points) -> str:
    # each code point beside letters, digits, spaces, newlines, apostrophes and case changes: the contexts in
    # which a pre-tokenizer's character classes decide where a piece ends
    return "".join(f"a{c}1{c} {c}{c}\n'{c}A{c}b{c}\t{c}x " for c in map(chr, points))


@pytest.mark.parametrize("family", FAMILIES)
def test_every_code_point_quicktok_accepts_gives_tiktokens_tokens(engines, family):
    vocab, enc, fast = engines[family]
    unsafe = unsafe_table(family in MARKS)
    points = np.flatnonzero(~unsafe)
    assert len(points) > 250_000  # every assigned character of the BMP and beyond
    blocks = [_snippets(points[i : i + 2048]) for i in range(0, len(points), 2048)]
    assert fast.exact(blocks).all()
    assert agree(enc, fast, blocks) == []


def test_routing_sends_unassigned_surrogates_and_qwen35_marks_to_tiktoken(engines):
    qwen35, qwen3 = engines["qwen3_5"][2], engines["qwen3"][2]
    unassigned = next(chr(c) for c in range(0x0378, 0x10000) if unicodedata.category(chr(c)) == "Cn")
    texts = ["plain ascii", "caf\u00e9", "cafe\u0301", f"x{unassigned}y", "a\ud800b", "\U000e0001", "\U00050000"]
    assert qwen35.exact(texts).tolist() == [True, True, False, False, False, True, False]
    assert qwen3.exact(texts).tolist() == [True, True, True, False, False, True, False]
    # per text, in a batch: one text with a mark does not send its neighbours to tiktoken
    assert qwen35.exact(["ok", "e\u0301", "ok \u00e9"]).tolist() == [True, False, True]


def _generated(special_tokens: list[str], seed: int) -> list[str]:
    """Seeded texts of everything at once: all Unicode categories, marks, long runs, special-token text."""
    rng = random.Random(seed)
    safe_points = np.flatnonzero(~unsafe_table(True))
    pieces = [" ", "  ", "\n", "\r\n", "\t", "'s", "'S", "'\u017f", "'ll", "'VE", "123456", "3.14", "x", "Hello",
              "\u00e9t\u00e9", "\u6771\u4eac", "\U0001f600\u200d\U0001f525", "\ufeff", "\u00a0", "\u2028", "/", "<|", "|>",
              "<", ">", "|"] + special_tokens[:40]
    texts = []
    for _ in range(300):
        parts = []
        for _ in range(rng.randrange(1, 60)):
            kind = rng.random()
            if kind < 0.4:
                parts.append(rng.choice(pieces))
            elif kind < 0.8:
                parts.append("".join(chr(int(rng.choice(safe_points))) for _ in range(rng.randrange(1, 12))))
            else:
                parts.append(rng.choice(pieces) * rng.randrange(1, 400))
        texts.append("".join(parts))
    return texts


LONG_RUNS = [" " * 10_000, "a" * 50_000, "1" * 1_001, "\n" * 5_000 + " \t" * 3_000, "!" * 20_000,
             "\u6771" * 20_000, "\U0001f600" * 5_000, "ab " * 20_000 + "\n", " " * 999 + "x" + "\n" * 999,
             "A" * 1000 + "a" * 1000 + "'S" * 500]


@pytest.mark.parametrize("family", FAMILIES)
def test_adversarial_text_token_for_token(engines, family):
    vocab, enc, fast = engines[family]
    specials = sorted(enc._special_tokens)
    texts = _generated(specials, seed=len(family)) + LONG_RUNS
    around = ["".join(specials), " ".join(specials), "\n".join(specials[:50]) + "\n",
              "abc" + specials[0] + "def" + specials[-1] + "ghi", specials[0][:-1], specials[0][:-1] + specials[0],
              specials[0][1:], specials[0] + specials[0][:3]]
    texts += around
    assert fast.exact(texts).mean() > 0.95
    assert agree(enc, fast, texts) == []
    # ordinary encoding (the NFC path encodes the text between special tokens as ordinary text)
    assert all(fast.encode_ordinary(t) == enc.encode_ordinary(t) for t, ok in zip(texts, fast.exact(texts)) if ok)


TEMPLATE_FILES = {"qwen3_5": "qwen3_5.jinja", "qwen3": "qwen3.jinja", "gpt_oss": "gpt_oss.jinja"}


@pytest.mark.parametrize("family", FAMILIES)
def test_official_template_renders_token_for_token(engines, family):
    from helpers.shared import jinja_render, official_template
    from sftpack.families.template_match import probe_conversations
    from sftpack.sources import open_source

    vocab, enc, fast = engines[family]
    template = official_template(TEMPLATE_FILES[family])
    conversations = probe_conversations() + [m for _, m in open_source("sample").take(np.arange(200))]
    texts = []
    for messages in conversations:
        try:
            texts.append(jinja_render(template, messages))
        except Exception:  # a template that refuses a conversation (the renderers skip those too)
            continue
    assert len(texts) > 100
    assert agree(enc, fast, texts) == []


def test_missing_package_falls_back_to_tiktoken_with_one_warning(engines, monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "quicktok", None)  # import quicktok raises ImportError
    monkeypatch.setattr(backend, "_warned", set())
    enc = engines["qwen3"][1]
    with caplog.at_level(logging.WARNING, logger="sftpack"):
        assert quicktok_for(enc) is None
        assert quicktok_for(enc) is None
    warnings = [r for r in caplog.records if "quicktok" in r.getMessage()]
    assert len(warnings) == 1 and "tiktoken" in warnings[0].getMessage()


def test_broken_package_falls_back_to_tiktoken_with_one_warning(engines, monkeypatch, caplog):
    import quicktok

    class Wrong:  # a build whose tokens are not tiktoken's
        def __init__(self, *args):
            self.n_vocab = engines["qwen3"][1].n_vocab

        def encode_batch(self, texts, threads, with_special):
            return np.zeros(1, dtype=np.uint32), np.array([0] + [1] * len(texts))

    monkeypatch.setattr(backend, "_warned", set())
    monkeypatch.setattr(backend, "_ENGINES", {})  # this process's engines: built again here, and kept afterwards
    monkeypatch.setattr(backend, "_KEYS", backend.weakref.WeakKeyDictionary())
    enc = engines["qwen3"][1]
    with caplog.at_level(logging.WARNING, logger="sftpack"):
        monkeypatch.setattr(quicktok, "Tokenizer", Wrong)
        assert quicktok_for(enc) is None
        backend.forget_engines()
        monkeypatch.setattr(quicktok, "Tokenizer", lambda *a: (_ for _ in ()).throw(RuntimeError("no data file")))
        assert quicktok_for(enc) is None
        assert quicktok_for(enc) is None
    warnings = [r.getMessage() for r in caplog.records if "quicktok" in r.getMessage()]
    assert len(warnings) == 2 and "differ" in warnings[0] and "no data file" in warnings[1]


def test_built_is_called_once_the_engine_is_made_before_its_check(engines, monkeypatch):
    """``built`` (where a build starts moving the tables onto huge pages) comes after quicktok's constructor and
    before the check against tiktoken, once per engine made; a vocabulary's tiktoken core is made by use_backend."""
    import quicktok

    from sftpack.tokenizers.engine_internals import deferred_encoding, mergeable_ranks, pattern, special_tokens

    monkeypatch.setattr(backend, "_ENGINES", {})
    monkeypatch.setattr(backend, "_KEYS", backend.weakref.WeakKeyDictionary())
    events = []
    check = backend._self_check
    monkeypatch.setattr(backend, "_self_check", lambda fast, enc: events.append("check") or check(fast, enc))
    constructor = quicktok.Tokenizer
    monkeypatch.setattr(quicktok, "Tokenizer", lambda *a: events.append("constructed") or constructor(*a))
    enc = engines["qwen3"][1]
    assert quicktok_for(enc, "auto", lambda: events.append("built")) is not None
    assert quicktok_for(enc, "auto", lambda: events.append("built")) is not None  # made already: not again
    assert events == ["constructed", "built", "check"]
    vocab = engines["qwen3"][0]
    deferred = deferred_encoding(enc.name, pattern(enc), mergeable_ranks(enc), special_tokens(enc))
    monkeypatch.setattr(vocab, "enc", deferred)
    vocab.use_backend("tiktoken")
    assert "_core_bpe" in vars(deferred)  # made here, before a build forks: its workers share it


def test_special_tokens_that_prefix_each_other_keep_tiktoken():
    import tiktoken

    ranks = {bytes([b]): b for b in range(256)}
    enc = tiktoken.Encoding("toy", pat_str=backend.QWEN2_PATTERN, mergeable_ranks=ranks,
                            special_tokens={"<x>": 256, "<x>y": 257})
    assert quicktok_for(enc) is None
    with pytest.raises(ValueError, match="unknown tokenizer backend"):
        quicktok_for(enc, "fast")


MIXED = [
    "<|im_start|>user\nplain ascii<|im_end|>\n<|im_start|>assistant\nanswer<|im_end|>\n",
    "<|im_start|>user\nक्षत्रिय हिन्दी<|im_end|>\n<|im_start|>assistant\nx\u0301 q\u0308<|im_end|>\n",  # marks, in NFC
    "<|im_start|>user\n東京 😀 café<|im_end|>\n<|im_start|>assistant\nΟΚ<|im_end|>\n",
    "<|im_start|>assistant\n\u0301 a mark first<|im_end|>\n",
]


@pytest.mark.parametrize("order", [[0, 1, 2, 3], [1, 0, 3, 2], [1, 3], [0, 2], [3, 0, 1, 2, 1, 0], [2, 1, 1, 1, 0]])
def test_a_batch_split_between_the_engines_gives_each_texts_own_tokens(engines, order, monkeypatch):
    """Texts with combining marks go to tiktoken, the rest to quicktok, one call each; the batch's tokens and
    masks are each text's own tiktoken tokens, in batch order, without falling back to encoding text by text."""
    vocab, enc, fast = engines["qwen3_5"]
    vocab.use_backend("auto")
    monkeypatch.setattr(vocab, "_one_by_one", lambda *a: pytest.fail("fell back to encoding text by text"))
    texts = [MIXED[i] for i in order]
    spans = [[(t.find("assistant\n") + 10, len(t))] for t in texts]
    assert all(unicodedata.is_normalized("NFC", t) for t in texts)  # else the batch is encoded text by text
    batch = vocab.encode_masked_batch(texts, spans)
    assert batch.fast.tolist() == [i in (0, 2) for i in order]
    bounds = np.concatenate(([0], np.cumsum(batch.lengths)))
    allowed = frozenset(enc._special_tokens)
    for k, text in enumerate(texts):
        expected = enc.encode(text, allowed_special=allowed)
        assert batch.tokens[bounds[k]:bounds[k + 1]].tolist() == expected
        # supervised: the tokens after "assistant\n" (its token and the header's are not)
        header = len(enc.encode(text[:spans[k][0][0]], allowed_special=allowed))
        assert batch.masks[bounds[k]:bounds[k + 1]].tolist() == [0] * header + [1] * (len(expected) - header)


def test_only_the_pieces_with_marks_go_to_tiktoken(engines):
    """A Qwen3.5 text with a combining mark in one message: that message's text goes to tiktoken, its other pieces
    to quicktok, and the batch's tokens are still each text's own tiktoken tokens; the text counts for tiktoken."""
    vocab, enc, fast = engines["qwen3_5"]
    vocab.use_backend("auto")
    marked = "<|im_start|>user\nplain<|im_end|>\n<|im_start|>assistant\nx\u0301 y<|im_end|>\n"
    texts = [marked, MIXED[0], MIXED[3]]
    plan = vocab.plan_batch(texts, [[] for _ in texts])
    run = plan.run
    separator = [t for t, i in fast.special_tokens.items() if i == run.separator][0]
    # the pieces between special tokens that hold a mark, and nothing else, each followed by the separator
    assert run.slow_text.split(separator) == ["assistant\nx\u0301 y", "assistant\n\u0301 a mark first", ""]
    assert [run.pieces[j] for j in run.slow.tolist()] == ["", ""]
    assert "user\nplain" in run.pieces
    batch = vocab.encode_planned(plan)
    assert batch.fast.tolist() == [False, True, False]
    allowed = frozenset(enc._special_tokens)
    assert batch.tokens.tolist() == [t for text in texts for t in enc.encode(text, allowed_special=allowed)]


def test_join_runs_puts_tiktokens_pieces_back_in_place():
    """Hand-made engine outputs: tiktoken's pieces first, last, side by side and next to empty pieces land where
    their text was, between the special tokens."""
    # text: [S1] a [S2] B [S3] C [S4] d   (upper case: tiktoken's pieces; piece 0 is the empty text before S1)
    run = backend.Run(None, ["", "a", "", "", "d"], np.array([101, 102, 103, 104], np.uint32),
                      np.array([2, 3]), "B|C|", 99)
    quick = (np.array([11, 12, 14], np.uint32), np.array([0, 0, 2, 2, 2, 3]))  # a -> 11 12, d -> 14
    slow = np.array([21, 99, 31, 32, 99], np.uint32)  # B -> 21, C -> 31 32
    assert backend.join_runs(run, (quick, slow)).tolist() == [101, 11, 12, 102, 21, 103, 31, 32, 104, 14]
    # the first piece slow, and the last
    run = backend.Run(None, ["", "b"], np.array([101], np.uint32), np.array([0, 1]), "A|B|", 99)
    quick = (np.zeros(0, np.uint32), np.array([0, 0, 0]))
    assert backend.join_runs(run, (quick, np.array([1, 2, 99, 3, 99], np.uint32))).tolist() == [1, 2, 101, 3]
    with pytest.raises(ValueError, match="do not end where the pieces end"):
        backend.join_runs(run, (quick, np.array([1, 2, 99, 3], np.uint32)))


def test_wide_byte_positions_give_the_same_batch(engines, monkeypatch):
    """A batch of 2 GiB or more has its byte positions as int64: the same tokens and mask as with int32."""
    from sftpack.tokenizers import tiktoken_vocab as vocab_module

    vocab, enc, fast = engines["qwen3_5"]
    vocab.use_backend("auto")
    texts = [MIXED[i] for i in (0, 1, 2, 3, 0)]
    spans = [[(t.find("assistant\n") + 10, len(t))] for t in texts]
    narrow = vocab.encode_masked_batch(texts, spans)
    monkeypatch.setattr(vocab_module, "NARROW_BYTES", 0)
    wide = vocab.encode_masked_batch(texts, spans)
    assert narrow.masks.sum() > 0 and narrow.masks.dtype == wide.masks.dtype == np.uint8
    for field in ("lengths", "tokens", "masks"):
        assert getattr(narrow, field).tolist() == getattr(wide, field).tolist()

