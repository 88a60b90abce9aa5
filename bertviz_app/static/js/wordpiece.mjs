// BERT's tokenizer in the page: the same words and pieces as bertviz_app/tokenizer.py (which follows the
// reference tokenizer of transformers, not the `tokenizers` library: see its docstring for where those differ).
// Words are split here with the browser's Unicode tables (String.normalize, toLowerCase and \p{...} classes play
// the part of Python's unicodedata), then greedy longest-match WordPiece over the vocabulary. No offsets: the page
// shows tokens, not spans.

const CJK = [[0x4e00, 0x9fff], [0x3400, 0x4dbf], [0x20000, 0x2a6df], [0x2a700, 0x2b73f], [0x2b740, 0x2b81f],
  [0x2b820, 0x2ceaf], [0xf900, 0xfaff], [0x2f800, 0x2fa1f]];
const CONTROL = /^\p{C}$/u;
const SPACE_CATEGORY = /^[\p{Zs}\p{Zl}\p{Zp}]$/u;
const PUNCTUATION = /^\p{P}$/u;
const MARK = /\p{Mn}/gu;
// What Python's str.isspace() adds to Zs, Zl and Zp (all of them control characters, dropped before this matters,
// except inside the normalized text of a word).
const PY_SPACE = new Set(["\t", "\n", "\v", "\f", "\r", "\x1c", "\x1d", "\x1e", "\x1f", "\x85"]);

export const SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];

function isControl(ch) {
  return ch !== "\t" && ch !== "\n" && ch !== "\r" && CONTROL.test(ch);
}

function isSpace(ch) {
  return ch === " " || PY_SPACE.has(ch) || SPACE_CATEGORY.test(ch);
}

function isPunctuation(ch) {
  const cp = ch.codePointAt(0);
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126)) {
    return true;
  }
  return PUNCTUATION.test(ch);
}

function isCJK(ch) {
  const cp = ch.codePointAt(0);
  return CJK.some(([lo, hi]) => cp >= lo && cp <= hi);
}

/**
 * The settings a tokenizer runs with, filled in and checked: {vocab: [token, ...] (index = id), lowercase,
 * stripAccents (null: as lowercase), chineseChars, unkToken, prefix ("##"), maxInputCharsPerWord} in; out the same
 * with the vocabulary as a Map (ids), and the specials it holds (longest first) with a RegExp that finds them.
 */
export function readSettings(settings) {
  const vocab = new Map(settings.vocab.map((t, i) => [t, i]));
  const lowercase = settings.lowercase !== false;
  const unk = settings.unkToken || "[UNK]";
  for (const t of ["[CLS]", "[SEP]", unk]) {
    if (!vocab.has(t)) throw new Error(`the vocabulary has no ${t}; it is not a BERT vocabulary`);
  }
  const specials = SPECIAL_TOKENS.filter((t) => vocab.has(t)).sort((a, b) => b.length - a.length);
  return { vocab, list: settings.vocab, lowercase, stripAccents: settings.stripAccents ?? lowercase,
    chineseChars: settings.chineseChars !== false, unk, prefix: settings.prefix ?? "##",
    maxChars: settings.maxInputCharsPerWord || 100, specialSet: new Set(specials),
    specialRe: specials.length
      ? new RegExp(specials.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|"), "g") : null };
}

function normalize(piece, opts) {
  let out = piece.normalize("NFC");
  if (opts.lowercase) out = out.toLowerCase();
  if (opts.stripAccents) out = out.normalize("NFD").replace(MARK, "");
  return out;
}

/** One whitespace-separated piece (code points) into words, pushed on `out`: specials that appear only after
 * cleaning stay whole; otherwise every punctuation character is a word of its own. */
function pieceWords(chars, opts, out) {
  const raw = chars.join("");
  if (opts.specialSet.has(raw.normalize("NFC"))) {
    out.push(raw.normalize("NFC"));
    return;
  }
  let word = "";
  for (const ch of normalize(raw, opts)) {
    if (isSpace(ch) || isPunctuation(ch)) {
      if (word) out.push(word);
      word = "";
      if (isPunctuation(ch)) out.push(ch);
    } else {
      word += ch;
    }
  }
  if (word) out.push(word);
}

/** Text without specials into words, pushed on `out`: split at spaces and around CJK characters, controls dropped. */
function chunkWords(text, opts, out) {
  let current = [];
  const flush = () => { if (current.length) pieceWords(current, opts, out); current = []; };
  for (const ch of text) { // code points, as Python iterates a str
    if (ch > " " && ch < "\x7f") { current.push(ch); continue; }
    if (ch === "\x00" || ch === "\ufffd" || isControl(ch)) continue; // dropped without splitting
    const cjk = opts.chineseChars && isCJK(ch);
    if (isSpace(ch) || cjk) {
      flush();
      if (cjk) out.push(ch);
      continue;
    }
    current.push(ch);
  }
  flush();
}

/** Words of `text`: { text, special } with specials written in the input found first, longest first. */
export function splitWords(text, opts) {
  const out = [];
  const specialsAt = [];
  let pos = 0;
  if (opts.specialRe) {
    for (const match of text.matchAll(opts.specialRe)) {
      chunkWords(text.slice(pos, match.index), opts, out);
      specialsAt.push(out.length);
      out.push(match[0]);
      pos = match.index + match[0].length;
    }
  }
  chunkWords(text.slice(pos), opts, out);
  const isSpecial = new Set(specialsAt);
  return out.map((w, i) => ({ text: w, special: isSpecial.has(i) }));
}

/** One word's pieces, greedy longest match first; [unk] alone for a word too long or one the vocabulary misses. */
export function wordPieces(word, opts) {
  const chars = Array.from(word);
  if (chars.length > opts.maxChars) return [opts.unk];
  const pieces = [];
  let start = 0;
  while (start < chars.length) {
    let end = chars.length;
    let found = null;
    while (start < end) {
      const sub = (start > 0 ? opts.prefix : "") + chars.slice(start, end).join("");
      if (opts.vocab.has(sub)) { found = sub; break; }
      end -= 1;
    }
    if (found === null) return [opts.unk];
    pieces.push(found);
    start = end;
  }
  return pieces;
}

function tokenize(text, opts) {
  return splitWords(text, opts).flatMap((w) => (w.special ? [w.text] : wordPieces(w.text, opts)));
}

/** [CLS] a [SEP] (b [SEP]), truncated longest first to maxTokens as tokenizer.py does:
 *  { tokens, ids, segments, special (0/1), truncated: tokens removed }. */
function encode(a, b, maxTokens, opts) {
  const ta = tokenize(a, opts);
  const tb = b === null || b === undefined || !String(b).trim() ? null : tokenize(b, opts);
  const nSpecial = tb ? 3 : 2;
  const [cutA, cutB] = truncateLongestFirst(ta.length, tb ? tb.length : 0, maxTokens - nSpecial);
  const tokens = ["[CLS]", ...ta.slice(0, ta.length - cutA), "[SEP]"];
  const segments = new Array(tokens.length).fill(0);
  if (tb) {
    const kept = [...tb.slice(0, tb.length - cutB), "[SEP]"];
    tokens.push(...kept);
    segments.push(...kept.map(() => 1));
  }
  const last = tokens.length - 1;
  const special = tokens.map((t, i) => (i === 0 || i === last || (tb && i === ta.length - cutA + 1) ? 1 : 0));
  return { tokens, ids: tokens.map((t) => opts.vocab.get(t) ?? opts.vocab.get(opts.unk)), segments, special,
    truncated: cutA + cutB };
}

/**
 * createTokenizer(settings, as readSettings takes them) -> { tokenize(text), encode(a, b, maxTokens), words(text),
 *   id(token), token(id), vocabSize }
 */
export function createTokenizer(settings) {
  const opts = readSettings(settings);
  return {
    tokenize: (text) => tokenize(text, opts),
    encode: (a, b = null, maxTokens = 512) => encode(a, b, maxTokens, opts),
    words: (text) => splitWords(text, opts).map((w) => w.text),
    vocabSize: opts.list.length,
    id: (token) => opts.vocab.get(token),
    token: (id) => opts.list[id] ?? opts.unk,
  };
}

/** How many tokens to remove from A and from B so both fit into `budget` (tokenizer.truncate_longest_first). */
export function truncateLongestFirst(lenA, lenB, budget) {
  const excess = Math.max(0, lenA + lenB - budget);
  if (lenB === 0) return [excess, 0];
  const first = Math.min(Math.abs(lenA - lenB), excess);
  const rest = excess - first;
  const half = Math.floor(rest / 2);
  return lenA > lenB ? [first + half, rest - half] : [half, first + rest - half];
}
