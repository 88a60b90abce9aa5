"""The tokenizer against BERT's reference tokenizer (transformers' pure-Python BertTokenizerLegacy) as the oracle.

Uncased: the default model's vocabulary, through its tokenizer.json and through vocab.txt alone. Cased: a small
vocabulary built here (no cased BERT vocabulary is installed), through vocab.txt and through our saved tokenizer.json.
"""

from __future__ import annotations

import json
import random
import shutil
import unicodedata

import pytest
from transformers.models.bert import tokenization_bert_legacy as legacy

from bertviz_app.catalog import minilm_path
from bertviz_app.tokenizer import Tokenizer, TokenizerError, truncate_longest_first
from texts import HARD, PAIRS


def _reference(vocab_file, lower: bool):
    return legacy.BertTokenizerLegacy(str(vocab_file), do_lower_case=lower)


def _cased_vocab_lines() -> list[str]:
    lines = ["[PAD]"] + [f"[unused{i}]" for i in range(5)] + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = ["Hello", "hello", "HELLO", "The", "the", "quick", "brown", "fox", "café", "Café", "naïve", "Ångström",
             "résumé", "ΟΔΟΣ", "ΟΔΟ", "ος", "ΣΟΦΟΣ", "un", "##aff", "##able", "token", "##ization", "O", "Neill",
             "script", "alert", "amp", "中", "文", "テキスト", "한국어", "한", "##국", "##어", "mask", "MASK", "Mask"]
    pieces = ["##ing", "##s", "##ed", "##ly", "##ς", "##Σ", "##ΟΣ", "##é", "##e", "##\u0301"]
    chars = sorted({c for s in HARD for c in s if not c.isspace() and ord(c) < 0x3000} |
                   set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"))
    for token in words + pieces + chars + ["##" + c for c in chars if c.isalnum()]:
        if token not in lines:
            lines.append(token)
    return lines


@pytest.fixture(scope="module")
def uncased(tmp_path_factory):
    """(reference, ours through tokenizer.json, ours through vocab.txt alone)."""
    folder = minilm_path()
    vocab_only = tmp_path_factory.mktemp("uncased_vocab_only")
    shutil.copy(folder / "vocab.txt", vocab_only / "vocab.txt")
    shutil.copy(folder / "tokenizer_config.json", vocab_only / "tokenizer_config.json")
    return _reference(folder / "vocab.txt", True), Tokenizer.from_folder(folder), Tokenizer.from_folder(vocab_only)


@pytest.fixture(scope="module")
def cased(tmp_path_factory):
    """(reference, ours through vocab.txt, ours through the tokenizer.json we saved)."""
    vocab_folder = tmp_path_factory.mktemp("cased_vocab")
    (vocab_folder / "vocab.txt").write_text("".join(t + "\n" for t in _cased_vocab_lines()), encoding="utf-8")
    (vocab_folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": False}))
    from_vocab = Tokenizer.from_folder(vocab_folder)
    json_folder = tmp_path_factory.mktemp("cased_json")
    from_vocab.save(json_folder)
    (json_folder / "vocab.txt").unlink()
    from_json = Tokenizer.from_folder(json_folder)
    assert from_json.do_lower_case is False
    return _reference(vocab_folder / "vocab.txt", False), from_vocab, from_json


def _ref_encode(ref, text, text_pair=None, max_length=512) -> dict:
    out = ref(text, text_pair, truncation="longest_first", max_length=max_length, return_token_type_ids=True,
              return_special_tokens_mask=True)
    return {"ids": out["input_ids"], "tokens": ref.convert_ids_to_tokens(out["input_ids"]),
            "segment_ids": out["token_type_ids"], "special_tokens_mask": out["special_tokens_mask"],
            "attention_mask": out["attention_mask"]}


def _ours(tok, text, text_pair=None, max_length=512) -> dict:
    enc = tok.encode(text, text_pair, max_tokens=max_length)
    return {"ids": enc.ids, "tokens": enc.tokens, "segment_ids": enc.segment_ids,
            "special_tokens_mask": enc.special_tokens_mask, "attention_mask": enc.attention_mask}


def _check_same(setup, text, text_pair=None, max_length=512):
    ref, first, second = setup
    expected = _ref_encode(ref, text, text_pair, max_length)
    assert _ours(first, text, text_pair, max_length) == expected
    assert _ours(second, text, text_pair, max_length) == expected


# --- equality with the reference ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text", HARD)
def test_single_matches_reference_uncased(uncased, text):
    _check_same(uncased, text)


@pytest.mark.parametrize("text", HARD)
def test_single_matches_reference_cased(cased, text):
    _check_same(cased, text)


@pytest.mark.parametrize("text, text_pair", PAIRS + [(HARD[i], HARD[-1 - i]) for i in range(0, len(HARD), 3)])
def test_pair_matches_reference(uncased, cased, text, text_pair):
    _check_same(uncased, text, text_pair)
    _check_same(cased, text, text_pair)


def test_random_strings_match_reference(uncased, cased):
    # Characters from every class that has differed between the tokenizers library and the reference.
    alphabet = ("aAbBzZ09 \t\n.,!?'-[]#<>&é\u0301\u0308ΣσςΟΔ中文한\u1100\u1161"
                "\u200b\u200d\ufeff\x00\x07\x85\u2028\u2e55\u166d😀👩\U0001FAE8\U0002B820\uf900İ\u212bKß")
    rng = random.Random(0)
    for _ in range(150):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        _check_same(uncased, text)
        _check_same(cased, text)


def test_encodings_are_consistent(uncased):
    ref, ours, _ = uncased
    enc = ours.encode("Hello there!", "General Kenobi.")
    n = len(enc)
    assert enc.positions == list(range(n))
    assert len(enc.offsets) == len(enc.sequence_ids) == len(enc.tokens) == n
    assert enc.sequence_ids[0] is None and enc.sequence_ids[-1] is None
    assert [s is None for s in enc.sequence_ids] == [bool(m) for m in enc.special_tokens_mask]
    sep = enc.tokens.index("[SEP]")
    assert set(enc.sequence_ids[1:sep]) == {0} and set(enc.sequence_ids[sep + 1:-1]) == {1}
    assert enc.segment_ids == [0] * (sep + 1) + [1] * (n - sep - 1)
    assert enc.is_pair and enc.truncation is None


# --- truncation -------------------------------------------------------------------------------------------------
def test_truncate_longest_first_matches_reference_grid(uncased):
    ref = uncased[0]
    for len_a in range(0, 12):
        for len_b in [None] + list(range(0, 12)):
            for budget in range(1, 25):
                excess = len_a + (len_b or 0) - budget
                if excess > len_a + (len_b or 0):
                    continue
                a, b = list(range(len_a)), (list(range(100, 100 + len_b)) if len_b is not None else None)
                kept_a, kept_b, _ = ref.truncate_sequences(a, b, num_tokens_to_remove=max(0, excess),
                                                           truncation_strategy="longest_first")
                cut = truncate_longest_first(len_a, len_b, budget)
                assert cut == (len_a - len(kept_a), (len_b or 0) - len(kept_b or [])), (len_a, len_b, budget)


def test_truncation_end_to_end_grid(uncased, cased):
    # Each 'a' (and 'b') is one token in both vocabularies.
    for len_a in range(0, 7):
        for len_b in range(0, 7):
            for max_length in range(4, 12):
                text, pair = " ".join("a" * len_a), " ".join("b" * len_b)
                _check_same(uncased, text, pair, max_length)
                _check_same(cased, text, pair, max_length)
                enc = uncased[1].encode(text, pair, max_tokens=max_length)
                assert len(enc) == min(max_length, len_a + len_b + 3)
                if len_a + len_b + 3 > max_length:
                    t = enc.truncation
                    assert t is not None and t.removed_a + t.removed_b == len_a + len_b + 3 - max_length
                    assert t.original_length == len_a + len_b + 3 and "removed" in str(t)
                else:
                    assert enc.truncation is None


def test_long_inputs_truncate_like_the_reference(uncased, cased):
    long_a = "The café's naïve Ångström measured 3.14 units! " * 60  # about 900 tokens
    long_b = "中文字符 and 👍🏽 <b>bold</b> " * 50
    for setup in (uncased, cased):
        _check_same(setup, long_a)
        _check_same(setup, long_a, long_b)
        _check_same(setup, long_b, long_a)
        _check_same(setup, long_a, "short")
        _check_same(setup, long_a, long_a)  # a tie: the odd token comes from B
    enc = uncased[1].encode(long_a, long_b)
    assert len(enc) == 512 and enc.truncation.removed_a > 0 and enc.truncation.removed_b > 0
    single = uncased[1].encode(long_a)
    assert len(single) == 512 and single.truncation.removed_b == 0
    assert single.truncation.original_length == len(uncased[1].tokenize(long_a)) + 2


def test_max_length_too_small_is_refused(uncased):
    with pytest.raises(ValueError, match="max_tokens"):
        uncased[1].encode("a", "b", max_tokens=3)
    with pytest.raises(TypeError):
        uncased[1].encode(["not", "a", "string"])


# --- offsets ----------------------------------------------------------------------------------------------------
def _normalize(ref, span: str) -> str:
    return "".join(ref.basic_tokenizer.tokenize(span))


@pytest.mark.parametrize("which", ["uncased", "cased"])
def test_offsets_point_at_the_token(request, which):
    ref, ours, _ = request.getfixturevalue(which)
    for text in HARD + [p for pair in PAIRS for p in pair]:
        enc = ours.encode(text, "tail " + text)
        last_end = {0: 0, 1: 0}
        for i, token in enumerate(enc.tokens):
            seq = enc.sequence_ids[i]
            if seq is None:
                assert enc.offsets[i] == (0, 0)
                continue
            source = text if seq == 0 else "tail " + text
            start, end = enc.offsets[i]
            assert 0 <= start < end <= len(source), (text, token)
            assert start >= last_end[seq] or enc.offsets[i - 1] == (start, end), (text, token)  # ordered
            last_end[seq] = end
            span = enc.span_text(i)
            assert span == source[start:end]
            if token in ("[MASK]", "[CLS]", "[SEP]", "[PAD]") or (token == "[UNK]" and span == token):
                assert span.replace("\u200b", "") == token  # typed by the user ('[MA\u200bSK]' included)
            elif token != "[UNK]":
                assert token.removeprefix("##") in _normalize(ref, span), (text, token, span)


def test_offsets_are_exact_for_plain_words(uncased):
    _, ours, _ = uncased
    text = "Unaffable tokenization, isn't it? (42)"
    enc = ours.encode(text)
    for i, token in enumerate(enc.tokens[1:-1], start=1):
        assert enc.span_text(i).lower() == token.removeprefix("##")
    # the pieces of one word tile it without gaps
    word = [o for o, seq in zip(enc.offsets, enc.sequence_ids) if seq == 0 and o[1] <= len("Unaffable")]
    assert len(word) > 1 and word[0][0] == 0 and word[-1][1] == len("Unaffable")
    assert all(a[1] == b[0] for a, b in zip(word, word[1:]))


def test_offsets_of_accented_and_decomposed_words(uncased):
    _, ours, _ = uncased
    for text in ("café", "cafe\u0301", "Ångström", "A\u030angstro\u0308m"):
        enc = ours.encode(text)
        # the pieces cover the whole word, combining marks included
        assert enc.offsets[1][0] == 0 and enc.offsets[-2][1] == len(text)
        assert unicodedata.normalize("NFD", "".join(enc.span_text(i) for i in range(1, len(enc) - 1))) == \
            unicodedata.normalize("NFD", text)


# --- construction and saving ------------------------------------------------------------------------------------
@pytest.mark.parametrize("which", ["uncased", "cased"])
def test_save_round_trip(request, tmp_path, which):
    ref, ours, _ = request.getfixturevalue(which)
    ours.save(tmp_path)
    again = Tokenizer.from_folder(tmp_path)
    saved_ref = _reference(tmp_path / "vocab.txt", ours.do_lower_case)
    vocab_only = tmp_path / "vocab_only"
    vocab_only.mkdir()
    shutil.copy(tmp_path / "vocab.txt", vocab_only / "vocab.txt")
    shutil.copy(tmp_path / "tokenizer_config.json", vocab_only / "tokenizer_config.json")
    again_vocab = Tokenizer.from_folder(vocab_only)
    for text, pair in [(t, None) for t in HARD] + PAIRS:
        expected = _ref_encode(ref, text, pair)
        assert _ref_encode(saved_ref, text, pair) == expected
        assert _ours(again, text, pair) == expected
        assert _ours(again_vocab, text, pair) == expected
    assert again.vocab == ours.vocab and again.do_lower_case == ours.do_lower_case


def test_default_model_files_are_read_without_its_padding(uncased):
    # The default model's tokenizer.json pads and truncates to 128; we must do neither.
    spec = json.loads((minilm_path() / "tokenizer.json").read_text())
    assert spec["padding"] is not None and spec["truncation"]["max_length"] == 128
    enc = uncased[1].encode("short")
    assert len(enc) == 3 and "[PAD]" not in enc.tokens
    long = uncased[1].encode("word " * 300)
    assert len(long) == 302 and long.truncation is None


def test_vocab_round_trip_of_ids(uncased):
    ref, ours, _ = uncased
    ids = ours.encode("The café [MASK] sat.").ids
    assert ours.convert_ids_to_tokens(ids) == ref.convert_ids_to_tokens(ids)
    assert ours.vocab_size == len(ref.vocab)
    assert ours.mask_token_id == ref.mask_token_id and ours.cls_token_id == ref.cls_token_id
    assert ours.decode(ids) == ref.decode(ids, skip_special_tokens=True)


def test_bad_folders_raise_with_a_hint(tmp_path):
    with pytest.raises(TokenizerError, match="neither tokenizer.json nor vocab.txt"):
        Tokenizer.from_folder(tmp_path)
    (tmp_path / "vocab.txt").write_text("hello\nworld\n")
    with pytest.raises(TokenizerError, match=r"\[UNK\]"):
        Tokenizer.from_folder(tmp_path)
    bpe = tmp_path / "bpe"
    bpe.mkdir()
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models
    HFTokenizer(models.BPE()).save(str(bpe / "tokenizer.json"))
    with pytest.raises(TokenizerError, match="WordPiece"):
        Tokenizer.from_folder(bpe)


@pytest.mark.parametrize("settings, message", [
    ({"strip_accents": [1]}, r"tokenizer_config.json: strip_accents must be true, false or null, got \[1\]; fix or "
                             r"remove it"),
    ({"do_lower_case": "no"}, r'tokenizer_config.json: do_lower_case must be true or false, got "no"'),
    ({"tokenize_chinese_chars": None}, r"tokenize_chinese_chars must be true or false, got null"),
    ([], r"tokenizer_config.json must hold a JSON object, got a list"),
])
def test_tokenizer_config_settings_are_type_checked(tmp_path, settings, message):
    shutil.copy(minilm_path() / "vocab.txt", tmp_path / "vocab.txt")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(settings))
    with pytest.raises(TokenizerError, match=message):
        Tokenizer.from_folder(tmp_path)


@pytest.mark.parametrize("name", ["tokenizer.json", "vocab.txt"])
def test_tokenizer_files_are_read_with_a_size_cap(tmp_path, name):
    with open(tmp_path / name, "wb") as f:  # sparse: no disk space, but reading it whole would take 20 GB of memory
        f.truncate(20 * 2**30)
    with pytest.raises(TokenizerError, match=rf"{name} is larger than the 64 MiB a {name} may have here"):
        Tokenizer.from_folder(tmp_path)
    (tmp_path / name).unlink()
    (tmp_path / name).symlink_to("/dev/zero")
    with pytest.raises(TokenizerError, match=rf"{name} is a device \(a link to /dev/zero\), not a regular file"):
        Tokenizer.from_folder(tmp_path)


def test_vocab_txt_with_windows_line_ends_reads_as_before(tmp_path):
    lines = (minilm_path() / "vocab.txt").read_bytes().decode("utf-8").removesuffix("\n").split("\n")
    (tmp_path / "vocab.txt").write_bytes("".join(line + "\r\n" for line in lines).encode())
    assert Tokenizer.from_folder(tmp_path).vocab == Tokenizer.from_vocab(minilm_path() / "vocab.txt").vocab


@pytest.mark.parametrize("kind", ["wordpiece", "bpe"])
@pytest.mark.parametrize("where", ["added", "vocab"])
def test_a_giant_token_is_refused_before_tokenizers_parses_it(tmp_path, monkeypatch, kind, where):
    """A 60 MB added token (under the 64 MiB cap) took `tokenizers` to 5 GB of memory before it was refused."""
    from tokenizers import Tokenizer as HFTokenizer
    from tokenizers import models, normalizers, pre_tokenizers

    from bertviz_app.tokenizer import FamilyTokenizer

    if kind == "wordpiece":
        backend = HFTokenizer(models.WordPiece({"[UNK]": 0, "[CLS]": 1, "[SEP]": 2, "a": 3}, unk_token="[UNK]"))
        backend.normalizer, backend.pre_tokenizer = normalizers.BertNormalizer(), pre_tokenizers.BertPreTokenizer()
        load = Tokenizer.from_tokenizer_json
    else:
        backend, load = HFTokenizer(models.BPE({"<unk>": 0, "a": 1}, [], unk_token="<unk>")), None
    giant = "x" * 2_000_000
    if where == "added":
        backend.add_tokens([giant])
    spec = json.loads(backend.to_str())
    if where == "vocab":
        spec["model"]["vocab"][giant] = len(spec["model"]["vocab"])
    (tmp_path / "tokenizer.json").write_text(json.dumps(spec))
    parsed = []
    monkeypatch.setattr(HFTokenizer, "from_str", lambda text: parsed.append(1))
    with pytest.raises(TokenizerError, match=r"tokenizer.json has a token of 2,000,000 characters \(\"xxxxx"):
        load(tmp_path / "tokenizer.json") if load else FamilyTokenizer.from_folder(tmp_path)
    assert parsed == []


@pytest.mark.parametrize("which", ["uncased", "cased"])
def test_the_ascii_shortcut_splits_as_the_general_path(request, which):
    # Printable ASCII goes through one regular expression; the step-by-step path must give the same words and spans.
    _, ours, _ = request.getfixturevalue(which)
    basic = ours._basic
    rng = random.Random(1)
    alphabet = "".join(chr(c) for c in range(32, 127)) + "\t\n\r" + "aeiouAEIOU09  "
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        assert basic._ascii_words(text, 0, len(text)) == basic._words(text, 0, len(text)), text
        assert basic.words(text) == [w for w in basic.words(text + "\x00")], text  # NUL is dropped, no shortcut
