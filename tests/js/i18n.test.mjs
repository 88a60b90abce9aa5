// i18n.mjs: the page's language, the catalogue's lookups, lessons' own translations.
import assert from "node:assert/strict";
import { test } from "node:test";

import { ES } from "../../bertviz_app/views/js/catalog-es.mjs";
import { describeSelection } from "../../bertviz_app/views/js/describe.mjs";
import { chooseLanguage, language, missing, placeholders, setLanguage, t, translated }
  from "../../bertviz_app/views/js/i18n.mjs";
import { parseLesson } from "../../bertviz_app/views/js/lesson.mjs";

test("?lang= wins, then the browser's languages by their primary tag, then English", () => {
  assert.equal(chooseLanguage("?lang=es", ["en-US"]), "es");
  assert.equal(chooseLanguage("?lang=en", ["es-ES", "es"]), "en");
  assert.equal(chooseLanguage("", ["fr-FR", "es-MX", "en"]), "es");
  assert.equal(chooseLanguage("?lang=xx", ["de"]), "en");
  assert.equal(chooseLanguage("", []), "en");
});

test("a string is looked up by its English, its placeholders filled after; a missing one shows in English", () => {
  setLanguage("es");
  try {
    assert.equal(language(), "es");
    assert.equal(t("Analyze"), "Analizar");
    assert.equal(t("layer {layer}, head {head}", { layer: 3, head: 1 }), "capa 3, cabeza 1");
    // a value is inserted as it is: token text with braces is not read as a placeholder
    assert.equal(t("Where “{token}” attends most:", { token: "{head}" }), "Dónde atiende más «{head}»:");
    assert.equal(t("A string nobody catalogued"), "A string nobody catalogued");
    assert.ok(missing().includes("A string nobody catalogued"));
    assert.equal(t("Analyze", null, "en"), "Analyze");
  } finally {
    setLanguage("en");
  }
  assert.equal(setLanguage("xx"), "en");
});

test("every catalogue entry has a Spanish text with the English string's placeholders", () => {
  for (const [english, spanish] of Object.entries(ES)) {
    assert.ok(typeof spanish === "string" && spanish.trim(), english);
    assert.deepEqual(placeholders(spanish), placeholders(english), english);
  }
});

test("the text alternative is Spanish but its tokens are the model's", () => {
  const T = ["[CLS]", "the", "cat", "[SEP]"];
  const codes = new Uint8Array(16);
  [[0, 0], [1, 0], [2, 1], [3, 3]].forEach(([i, j]) => { codes[i * 4 + j] = 255; });
  const payload = { length: 4, tokens: T, layers: 1, heads: 1, key: "k",
    sets: { attention: { codes, max: 1, perHead: true, rowsSumToOne: false } } };
  setLanguage("es");
  try {
    assert.equal(describeSelection(payload, { layer: 0, head: 0, token: 2 }),
      "Capa 0, cabeza 0: la mayoría de los tokens atienden a [CLS] (2 de 4); ‘cat’ (token 2) atiende sobre todo a "
      + "‘the’ (token 1, 1.00).");
  } finally {
    setLanguage("en");
  }
});

test("a lesson plays its own translation of a caption, question and title where it has one", () => {
  const file = { title: "Pieces", translations: { es: { title: "Trozos" } }, steps: [
    { a: "The cat sat.", layer: 0, head: 0, token: 3, caption: "Look.", translations: { es: { caption: "Mira.",
      ask: "¿Cuál?" } }, question: { ask: "Which?", choices: ["cat", "the"], answer: "cat" } },
    { a: "The cat sat.", caption: "No translation." }] };
  assert.equal(translated(file, "title", "es"), "Trozos");
  setLanguage("es");
  try {
    const lesson = parseLesson(file);
    assert.equal(lesson.title, "Trozos");
    assert.equal(lesson.steps[0].caption, "Mira.");
    assert.deepEqual(lesson.steps[0].question, { ask: "¿Cuál?", choices: ["cat", "the"] }); // tokens stay
    assert.equal(lesson.steps[1].caption, "No translation.");
  } finally {
    setLanguage("en");
  }
  assert.equal(parseLesson(file).steps[0].caption, "Look.");
  assert.throws(() => parseLesson({ steps: [{ a: "x", translations: { es: { caption: 3 } } }] }),
    /Step 1's translations give a caption in "es" that is not text/);
});
