"""Hard strings for tokenizers, shared by the tests that tokenize (test_tokenizer.py against BERT's reference,
test_static_browser.py against the page's own WordPiece in Chromium)."""

HARD = [
    # plain, numbers, apostrophes, HTML
    "The quick brown fox jumps over the lazy dog.",
    "unaffable unbelievably tokenization",
    "3.14159 1,000,000 2024-01-31 12:30pm 1e-9",
    "don't won't it's O'Neill rock 'n' roll",
    "<script>alert(1)</script> &amp; &lt;b&gt; <a href='x'>",
    # accents, composed and decomposed
    "café naïve Ångström résumé",
    "cafe\u0301 nai\u0308ve A\u030angstro\u0308m",
    "\u212b \u2126 \u1f71 \u0958 K",  # singletons and composition exclusions that NFC changes
    # Greek final sigma: Python's str.lower gives 'ς' at the end of a word
    "ΟΔΟΣ ΣΟΦΟΣ. ΑΣ.Β Σ",
    # CJK, Japanese, Korean, compatibility ideographs, the range the tokenizers library mistypes
    "中文字符 日本語のテキスト 한국어",
    "\uf900\u2f800 a\U0002B820b \U0002B91F\U0002B920",
    "한국어 \u1112\u1161\u11ab",  # Hangul as conjoining jamo (NFC composes them)
    # emoji, ZWJ sequences, skin tones, flags; U+1FAE8 is newer than some Unicode tables
    "👩‍👩‍👧 👍🏽 🇫🇷🇯🇵 🏳️‍🌈 🫨 smile😀face",
    # control and zero-width characters
    "a\x00b c\x07d e\u200bf g\u200dh \ufeffi j\tk\nl\rm n\x85o p\u2028q r\u2029s",
    "\ufffd\x1c\x1d\x1e\x1f\x0b\x0c end",
    # punctuation runs and punctuation from recent Unicode versions
    "!!!???... --->> ...!?!? (((x))) ¿qué? «guillemets» — – …",
    "a\u2e55b c\u166dd e\U00010eadf g\u061dh",
    # mixed scripts
    "Hello мир שלום مرحبا नमस्ते γειά σου ¡hola!",
    # special tokens, in the way a user may type them
    "[MASK]", "[mask]", "[Mask]", "the [MASK] sat on [MASK].", "x[MASK]y[SEP]z", "[MA\u200bSK] [CLS ]",
    "[UNK] [PAD] [CLS] [SEP]",
    # whitespace only, empty, and a word over WordPiece's 100-character limit
    "", "   \t\n  ", "x" * 150, "é" * 101 + " ok", "ab" * 50,
]

PAIRS = [
    ("", "a second sentence"),
    ("a first sentence", ""),
    ("", ""),
    ("How old are you?", "I'm 6 years old."),
    ("café [MASK]", "ΟΔΟΣ 中文"),
]
