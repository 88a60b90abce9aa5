// A lesson (lesson.mjs): read from its file with one sentence for anything wrong, recorded from what the screen
// shows, stepped through by key or link, its steps checked against the model that plays them.

import assert from "node:assert/strict";
import { test } from "node:test";

import * as lesson from "../../bertviz_app/views/js/lesson.mjs";
import * as links from "../../bertviz_app/views/js/permalink.mjs";

const STEPS = [
  { a: "The cat sat on the mat.", b: "It was tired.", layer: 2, head: 5, token: 3, tab: "lines", caption: "one" },
  { a: "The cat sat on the mat.", layer: 0, head: "all", tab: "overview", caption: "<b>two</b>" },
  { a: "Paris is in France.", layer: 4, head: 1, token: 2, tab: "query_key", caption: "" },
];

test("a recorded lesson reads back as the steps it recorded", () => {
  const recorded = [
    lesson.recordStep({ a: "A.", b: "B.", model: "m" }, { layer: 1, head: 2, token: 3, view: "qk" }, "first"),
    lesson.recordStep({ a: "C.", b: "" }, { layer: 0, head: "all", token: null, view: "overview" }, "second"),
  ];
  assert.deepEqual(recorded[0], { a: "A.", b: "B.", model: "m", layer: 1, head: 2, token: 3, tab: "query_key",
    caption: "first" });
  const read = lesson.parseLesson(lesson.lessonText(recorded, "Heads"));
  assert.equal(read.title, "Heads");
  assert.deepEqual(read.steps, [
    { a: "A.", b: "B.", model: "m", selection: { layer: 1, head: 2, token: 3, view: "qk" }, caption: "first" },
    { a: "C.", b: "", model: null, selection: { layer: 0, head: "all", view: "overview" }, caption: "second" },
  ]);
  // a bare list of steps is a lesson too, and the caption stays the text it was (markup is the host's to show
  // as text)
  assert.equal(lesson.parseLesson(JSON.stringify(STEPS)).steps[1].caption, "<b>two</b>");
});

test("a bad lesson file is refused in one sentence that names the step", () => {
  const refused = (input) => {
    try {
      lesson.parseLesson(input);
    } catch (error) {
      assert.ok(!error.message.includes("\n") && error.message.endsWith("."), error.message);
      return error.message;
    }
    assert.fail("accepted");
  };
  assert.match(refused("{not json"), /not JSON/);
  assert.match(refused("{}"), /no list of "steps"/);
  assert.match(refused('{"steps": []}'), /no steps/);
  assert.match(refused([STEPS[0], { ...STEPS[1], tab: "heatmap" }]), /^Step 2 names the view "heatmap".*query_key/);
  assert.match(refused([{ ...STEPS[0], head: -1 }]), /^Step 1's head/);
  assert.match(refused([{ ...STEPS[0], layer: 1.5 }]), /^Step 1's layer/);
  assert.match(refused([STEPS[0], STEPS[1], { b: "only B" }]), /^Step 3 has no sentence A/);
  assert.match(refused([{ ...STEPS[0], caption: 7 }]), /caption is not text/);
  assert.match(refused([{ ...STEPS[0], a: "x".repeat(links.MAX_LINK_CHARS + 1) }]), /longer than 20,000/);
  assert.match(refused(Array(lesson.MAX_STEPS + 1).fill(STEPS[0])), /at most 200/);
  assert.match(refused(["a step"]), /^Step 1 is not an object/);
});

test("a step past the model's layers, heads or tokens is named, and one within passes", () => {
  const [one, two] = lesson.parseLesson(STEPS).steps;
  const dims = { layers: 6, heads: 12, length: 12 };
  assert.equal(lesson.checkStep(one, 0, dims), null);
  assert.equal(lesson.checkStep(two, 1, dims), null); // head "all"
  assert.equal(lesson.checkStep(one, 0, { ...dims, heads: 4 }), "Step 1 asks for head 5; this model has heads 0 to 3.");
  assert.match(lesson.checkStep(one, 0, { ...dims, layers: 2 }), /layer 2; this model has layers 0 to 1/);
  assert.match(lesson.checkStep(one, 0, { ...dims, length: 3 }), /token 3; its input has tokens 0 to 2/);
});

test("the link carries the lesson and its step, and a step past the end opens step 1 with a sentence", () => {
  const q = links.writeLink("threads=2", { a: "A." }, { layer: 1, head: 2, token: null, view: "lines" },
    { lesson: "heads", step: 3 });
  const read = links.readLink(q);
  assert.equal(read.lesson, "heads");
  assert.equal(read.step, 3);
  assert.equal(new URLSearchParams(q).get("threads"), "2");
  assert.deepEqual(lesson.stepOfLink(read.step, 5), { index: 2 });
  // leaving the lesson: the next link without `at` drops both
  const left = links.readLink(links.writeLink(q, { a: "A." }, { layer: 1, head: 2, view: "lines" }));
  assert.equal(left.lesson, undefined);
  assert.equal(left.step, undefined);
  assert.equal(links.readLink("a=x").lesson, undefined); // an ordinary link has neither key
  assert.deepEqual(lesson.stepOfLink(undefined, 5), { index: 0 });
  for (const step of [9, 0, "two"]) {
    const at = lesson.stepOfLink(step, 5);
    assert.equal(at.index, 0);
    assert.match(at.error, /the lesson has 5 steps, so it opens on step 1\.$/);
  }
  assert.equal(links.readLink("lesson=x&step=abc").step, "abc");
  assert.deepEqual(lesson.stepOfLink(links.readLink("lesson=x").step, 5), { index: 0 }); // no step: the first
});

test("lesson names are plain file names", () => {
  assert.ok(lesson.validName("Heads_1-a"));
  for (const bad of ["", "../x", "a/b", "a.js", "x".repeat(65), null]) assert.ok(!lesson.validName(bad), bad);
  assert.equal(lesson.nameFromFile("My lesson (2).json"), "My-lesson-2");
  assert.equal(lesson.nameFromFile("..json"), "lesson");
});

test("keys move between steps, but not from a box, a list or the overview", () => {
  const key = (k, target = { tagName: "BODY" }, extra = {}) => ({ key: k, target, ...extra });
  assert.equal(lesson.keyMove(key("ArrowRight"), 1, 5), 2);
  assert.equal(lesson.keyMove(key("PageDown"), 4, 5), 4); // stays on the last
  assert.equal(lesson.keyMove(key("ArrowLeft"), 0, 5), 0);
  assert.equal(lesson.keyMove(key("PageUp"), 3, 5), 2);
  assert.equal(lesson.keyMove(key("Home"), 3, 5), 0);
  assert.equal(lesson.keyMove(key("End"), 0, 5), 4);
  assert.equal(lesson.keyMove(key("a"), 0, 5), null);
  assert.equal(lesson.keyMove(key("ArrowRight", { tagName: "input" }), 0, 5), null);
  assert.equal(lesson.keyMove(key("ArrowRight", { tagName: "SELECT" }), 0, 5), null);
  assert.equal(lesson.keyMove(key("ArrowRight", { tagName: "DIV", closest: (s) => s === ".bv-scroller" }), 0, 5),
    null);
  assert.equal(lesson.keyMove(key("ArrowRight", undefined, { ctrlKey: true }), 0, 5), null);
});

test("the player plays the last step asked for, and shows a step's problem in words", async () => {
  const played = [];
  const shown = [];
  let release;
  const player = lesson.createPlayer(lesson.parseLesson(STEPS), {
    apply: (step, i) => {
      played.push(i);
      return i === 0 ? new Promise((r) => { release = r; }) : Promise.resolve({ layers: 6, heads: 4, length: 9 });
    },
    show: (s) => shown.push(s),
  });
  const first = player.go(0);
  player.next(); // asked while step 1 still plays: both wait, only the last asked plays
  player.go(2);
  release({ layers: 6, heads: 12, length: 12 });
  await first;
  assert.deepEqual(played, [0, 2]);
  assert.equal(player.index, 2);
  const last = shown.at(-1);
  assert.equal(last.busy, false);
  assert.equal(last.problem, null);
  assert.equal(shown.filter((s) => !s.busy).length, 1); // step 1's outcome was overtaken, never shown
  // a host that fails says why, in the caption's place
  const failing = lesson.createPlayer(lesson.parseLesson(STEPS), {
    apply: async () => { throw new Error("The model is not loaded."); }, show: (s) => shown.push(s) });
  await failing.go(1);
  assert.equal(shown.at(-1).problem, "The model is not loaded.");
  assert.equal(failing.key({ key: "ArrowRight", target: { tagName: "BODY" } }), true);
  await failing.go(2);
  assert.equal(failing.index, 2);
  assert.equal(failing.key({ key: "x", target: { tagName: "BODY" } }), false);
});

test("a step's question: refused in one sentence when it cannot be asked; its answer measured on screen", async () => {
  const asks = { ...STEPS[0], question: { ask: "Which token does 'sat' look at most?", choices: ["the", "cat"],
    answer: "the" } };
  const refused = (question, step = STEPS[0]) => {
    try { lesson.parseLesson([{ ...step, question }]); } catch (error) { return error.message; }
    return assert.fail("accepted");
  };
  assert.match(refused("cat?"), /^Step 1's question is not an object/);
  assert.match(refused({ ...asks.question, ask: "" }), /no "ask"/);
  assert.match(refused({ ...asks.question, choices: ["cat"] }), /2 to 5 choices/);
  assert.match(refused({ ...asks.question, choices: ["a", "b", "c", "d", "e", "f"] }), /2 to 5 choices/);
  assert.match(refused({ ...asks.question, choices: ["cat", "cat"] }), /same choice twice/);
  assert.match(refused({ ...asks.question, kind: "top1" }), /kind "top1"/);
  assert.match(refused(asks.question, STEPS[1]), /needs a layer, a head and a token/);

  // tokens 0..3; in layer 2, head 5 token 3 gives the most to token 2 ("cat"): the file's answer ("the") is not
  // what is marked, the numbers are
  const T = 4;
  const layers = 3;
  const heads = 6;
  const codes = new Uint8Array(layers * heads * T * T);
  const at = (l, h, i, j) => ((l * heads + h) * T + i) * T + j;
  codes[at(2, 5, 3, 1)] = 60;
  codes[at(2, 5, 3, 2)] = 190;
  codes[at(1, 5, 3, 1)] = 250; // another layer's strongest: not the step's
  const payload = { length: T, layers, heads, tokens: ["[CLS]", "the", "cat", "sat"],
    sets: { attention: { codes, max: 1, perHead: true, rowsSumToOne: true } } };
  const step = lesson.parseLesson([asks]).steps[0];
  assert.deepEqual(step.question, { ask: asks.question.ask, choices: ["the", "cat"] }); // no answer travels on
  assert.deepEqual(lesson.measuredAnswer(step, payload), { word: "cat", right: 1 });
  const other = lesson.parseLesson([{ ...asks, question: { ...asks.question, choices: ["the", "[CLS]"] } }]).steps[0];
  assert.deepEqual(lesson.measuredAnswer(other, payload), { word: "cat", right: -1 });

  // the player shows the question while the step plays (to hide the view), then with its measured answer
  const shown = [];
  const player = lesson.createPlayer(lesson.parseLesson([asks]), {
    apply: async () => ({ layers, heads, length: T, payload }), show: (s) => shown.push(s) });
  await player.go(0);
  assert.deepEqual(shown.map((s) => [s.busy, s.question]), [
    [true, { ask: asks.question.ask, choices: ["the", "cat"] }],
    [false, { ask: asks.question.ask, choices: ["the", "cat"], word: "cat", right: 1 }]]);
});

test("the list of ready lessons takes only cards that name a lesson, and says level, minutes and steps", async () => {
  const shelf = await import("../../bertviz_app/views/js/lesson-shelf.mjs");
  const cards = shelf.readCards([
    { name: "01-words", title: "Words <b>become</b> pieces", level: "beginner", minutes: 8, steps: 5 },
    { name: "../data/manifest", title: "a path" }, { name: "x".repeat(65) }, null, "02-a",
    { name: "02-b", minutes: -3, steps: 1.5, level: 7 },
  ]);
  assert.deepEqual(cards, [
    { name: "01-words", title: "Words <b>become</b> pieces", level: "beginner", minutes: 8, steps: 5 },
    { name: "02-b", title: "02-b", level: "", minutes: null, steps: null },
  ]);
  assert.equal(shelf.cardLine(cards[0]), "beginner · 8 min · 5 steps");
  assert.equal(shelf.cardLine(cards[1]), "");
  assert.deepEqual(shelf.readCards({ name: "01" }), []);
  assert.equal(shelf.readCards(Array(500).fill({ name: "a" })).length, 200);
});

test("the poll's server calls: a refusal is the server's sentence", async () => {
  const { pollServer } = await import("../../bertviz_app/views/js/lesson-poll.mjs");
  const sent = [];
  const server = pollServer(async (path, init) => {
    sent.push([path, init.body ? JSON.parse(init.body) : null]);
    return path.startsWith("/poll/tally")
      ? { ok: false, status: 403, json: async () => ({ error: "Only the page that opened a poll can see it." }) }
      : { ok: true, status: 200, json: async () => ({ key: "k", code: "ABCDE" }) };
  }, "http://10.0.0.2:7860");
  assert.deepEqual(await server.open({ ask: "Q?", choices: ["a", "b"], word: "a", right: 0 }), { key: "k",
    code: "ABCDE" });
  await assert.rejects(server.tally("k&x=1"), /^Error: Only the page that opened a poll can see it\.$/);
  assert.deepEqual(sent, [
    ["/poll/open", { ask: "Q?", choices: ["a", "b"], origin: "http://10.0.0.2:7860" }], // never the answer
    ["/poll/tally?key=k%26x%3D1", null]]);
});

test("the Lesson panel's question for a recorded step: kept in the file's form, or refused in one sentence", () => {
  const step = lesson.recordStep({ a: "The cat sat." }, { layer: 2, head: 5, token: 3, view: "lines" }, "Guess.");
  const typed = { ask: "Which token does “sat” look at most?", choices: "  the cat\t[SEP] ", answer: "cat" };
  const asked = lesson.askFirst(step, typed, 4);
  assert.deepEqual(asked, { ...step, question: { ask: typed.ask, choices: ["the", "cat", "[SEP]"], answer: "cat" } });
  // the file it is saved into reads back with the question asked (no answer travels to the players)
  const played = lesson.parseLesson(lesson.lessonText([asked])).steps[0];
  assert.deepEqual(played.question, { ask: typed.ask, choices: ["the", "cat", "[SEP]"] });
  assert.equal(lesson.askFirst(step, { ask: " ", choices: "", answer: "" }, 4), step); // nothing typed: no question
  const refused = (changes, on = step) => {
    try { lesson.askFirst(on, { ...typed, ...changes }, 4); } catch (error) {
      assert.ok(!error.message.includes("\n") && error.message.endsWith("."), error.message);
      return error.message;
    }
    return null;
  };
  assert.equal(refused({ choices: "cat" }), "Step 4's question needs 2 to 5 choices, each a token of at most 80 "
    + "characters.");
  assert.match(refused({ choices: "a b c d e cat" }), /2 to 5 choices/);
  assert.equal(refused({ answer: "dog" }), "Step 4's answer “dog” is not one of its choices.");
  assert.equal(refused({ answer: "" }), "Step 4's question needs its answer: one of its choices.");
  assert.equal(refused({ ask: "" }), "Step 4's question has no \"ask\".");
  assert.equal(refused({ ask: "?".repeat(301) }), "Step 4's question is longer than 300 characters.");
  assert.match(refused({ choices: `the ${"x".repeat(81)} cat` }), /at most 80 characters/);
  assert.match(refused({ choices: "cat the cat" }), /same choice twice/);
  assert.match(refused({}, { ...step, token: undefined }), /needs a layer, a head and a token/);
  assert.match(refused({}, { ...step, head: "all" }), /needs a layer, a head and a token/);
});

test("a recorded question's answer is the token the model's numbers on screen say", () => {
  // tokens 0..3; in layer 1, head 0 token 2 gives the most to token 3 ("sat")
  const T = 4;
  const codes = new Uint8Array(2 * 1 * T * T);
  codes[((1 * 1 + 0) * T + 2) * T + 1] = 90;
  codes[((1 * 1 + 0) * T + 2) * T + 3] = 200;
  const payload = { length: T, layers: 2, heads: 1, tokens: ["[CLS]", "the", "cat", "sat"],
    sets: { attention: { codes, max: 1, perHead: true, rowsSumToOne: true } } };
  const step = lesson.recordStep({ a: "x" }, { layer: 1, head: 0, token: 2, view: "lines" });
  const typed = { ask: "Which?", choices: "the sat" };
  assert.equal(lesson.askFirst(step, { ...typed, answer: "sat" }, 1, payload).question.answer, "sat");
  let said = null;
  try { lesson.askFirst(step, { ...typed, answer: "the" }, 1, payload); } catch (error) { said = error.message; }
  assert.equal(said, "Step 1's answer is “the”, but the model's numbers on screen say “sat” (the token it looks at "
    + "most in layer 1, head 0).");
});
