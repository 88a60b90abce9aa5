// A lesson: the steps a teacher prepared, played one after another in either host (the app's gradio-host page and
// the static page). A step is exactly what a permalink holds (permalink.mjs: a, b, model, layer, head, token, tab)
// plus a caption; a lesson file is JSON:
//   { "lesson": 1, "title": "...", "steps": [ { "a": "...", "b": "...", "layer": 2, "head": 5, "token": 3,
//     "tab": "lines", "caption": "..." }, ... ] }
// (a bare list of steps is read too). Everything here is pure but createPlayer, which takes the host's own apply
// (set the boxes, analyze if the input changed, select) and show (the caption) as functions.
//
// A step may ask before it shows: "question": { "ask": "...", "choices": ["the", "cat", ...], "answer": "cat" }
// asks which token the step's token (in its layer and head) gives the most attention; the views stay hidden until the
// student picks a choice or the teacher reveals. The answer marked is the one measured in the numbers on screen
// (measuredAnswer), never the file's: the file's "answer" is what bertviz_app/lessons.py checks against the model.
// The app's Lesson panel adds one to a step it records (askFirst).

import { layerMatrix } from "./data.mjs";
import { LINK_KEYS, MAX_LINK_CHARS, readLink } from "./permalink.mjs";
import { VIEWS, viewForTab } from "./registry.mjs";
import { t, translated } from "./i18n.mjs";

export const MAX_STEPS = 200;
export const MAX_CAPTION = 2000;
export const MAX_CHOICES = 5;
const MAX_ASK = 300;
const MAX_CHOICE = 80;
/** A lesson's name in a link and a file name of the static page's folder: no path, nothing to escape. */
export const NAME = /^[A-Za-z0-9_-]{1,64}$/;

const INT = (v) => Number.isInteger(v) && v >= 0;

/** Whether `name` can name a lesson (in `?lesson=` and as lessons/<name>.js). */
export function validName(name) {
  return typeof name === "string" && NAME.test(name);
}

/** A lesson's name made from a file name: "My lesson (2).json" -> "My-lesson-2". */
export function nameFromFile(fileName) {
  const name = String(fileName || "").replace(/\.[^.]*$/, "").replace(/[^A-Za-z0-9_-]+/g, "-")
    .replace(/^-+|-+$/g, "").slice(0, 64);
  return name || "lesson";
}

/** Why step `n` (1-based) cannot be played, in one sentence, or null when it can. */
function stepProblem(step, n) {
  // in the page's language (t): a teacher reads why a file will not play; the names of its fields stay as written
  if (!step || typeof step !== "object" || Array.isArray(step)) return t("Step {n} is not an object of a, b, layer, "
    + "head, token, tab and caption.", { n });
  if (typeof step.a !== "string" || !step.a.trim()) return t("Step {n} has no sentence A (\"a\").", { n });
  for (const box of ["a", "b"]) {
    if (step[box] === undefined || step[box] === null) continue;
    const which = box.toUpperCase();
    if (typeof step[box] !== "string") return t("Step {n}'s sentence {which} is not text.", { n, which });
    if ([...step[box]].length > MAX_LINK_CHARS) return t("Step {n}'s sentence {which} is longer than {most} "
      + "characters, the most a box takes.", { n, which, most: MAX_LINK_CHARS.toLocaleString("en") });
  }
  if (step.tab !== undefined && !viewForTab(step.tab)) return t("Step {n} names the view \"{view}\", which these "
    + "views do not have ({views}).", { n, view: String(step.tab), views: VIEWS.map((v) => v.url).join(", ") });
  for (const key of ["layer", "token"]) {
    if (step[key] !== undefined && step[key] !== null && !INT(step[key])) return t("Step {n}'s {key} is not a whole "
      + "number from 0.", { n, key });
  }
  if (step.head !== undefined && step.head !== "all" && !INT(step.head)) return t("Step {n}'s head is not a whole "
    + "number from 0 or \"all\".", { n });
  if (step.caption !== undefined && typeof step.caption !== "string") return t("Step {n}'s caption is not text.",
    { n });
  if ((step.caption || "").length > MAX_CAPTION) return t("Step {n}'s caption is longer than {most} characters.",
    { n, most: MAX_CAPTION });
  if (step.model !== undefined && step.model !== null && typeof step.model !== "string") return t("Step {n}'s model "
    + "is not a name.", { n });
  const translations = translationsProblem(step.translations, ["caption", "ask"]);
  if (translations) return t("Step {n}'s translations {problem}.", { n, problem: translations });
  return questionProblem(step, n);
}

/** Why a lesson's or a step's "translations" ({ "es": { "caption": "..." } }) cannot be read, or null. */
function translationsProblem(value, fields) {
  if (value === undefined || value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) return t("are not an object of languages");
  for (const [lang, texts] of Object.entries(value)) {
    if (!texts || typeof texts !== "object" || Array.isArray(texts)) return t("of \"{lang}\" are not an object",
      { lang: lang.slice(0, 20) });
    for (const field of fields) {
      if (texts[field] !== undefined && (typeof texts[field] !== "string" || texts[field].length > MAX_CAPTION)) {
        return t("give a {field} in \"{lang}\" that is not text of at most {most} characters",
          { field, lang: lang.slice(0, 20), most: MAX_CAPTION });
      }
    }
  }
  return null;
}

/** Why step `n`'s question cannot be asked, in one sentence, or null (also when it has none). */
function questionProblem(step, n) {
  const q = step.question;
  if (q === undefined || q === null) return null;
  if (typeof q !== "object" || Array.isArray(q)) return t("Step {n}'s question is not an object of ask, choices and "
    + "answer.", { n });
  if (typeof q.ask !== "string" || !q.ask.trim()) return t("Step {n}'s question has no \"ask\".", { n });
  if (q.ask.length > MAX_ASK) return t("Step {n}'s question is longer than {most} characters.", { n, most: MAX_ASK });
  if (!Array.isArray(q.choices) || q.choices.length < 2 || q.choices.length > MAX_CHOICES
    || !q.choices.every((c) => typeof c === "string" && c.length > 0 && c.length <= MAX_CHOICE)) return t("Step {n}'s "
    + "question needs 2 to {most} choices, each a token of at most {chars} characters.",
    { n, most: MAX_CHOICES, chars: MAX_CHOICE });
  if (new Set(q.choices).size !== q.choices.length) return t("Step {n}'s question offers the same choice twice.",
    { n });
  if (q.answer !== undefined && !q.choices.includes(q.answer)) return t("Step {n}'s answer “{answer}” is not one of "
    + "its choices.", { n, answer: String(q.answer).slice(0, MAX_CHOICE) });
  if ((q.kind ?? "strongest") !== "strongest") return t("Step {n}'s question is of the kind \"{kind}\"; the players "
    + "know \"strongest\" (the token the step's token gives the most attention).", { n, kind: String(q.kind)
    .slice(0, 40) });
  if (!INT(step.layer) || !INT(step.head) || !INT(step.token)) return t("Step {n} asks which token its token looks at "
    + "most: it needs a layer, a head and a token.", { n });
  return null;
}

/**
 * The answer to a step's question measured in `payload` (the decoded views' data on screen): the token that the
 * step's token gives the most attention in its layer and head, and its place among the choices (-1: none of them).
 */
export function measuredAnswer(step, payload) {
  const { layer, head, token } = step.selection;
  const T = payload.length;
  const matrix = layerMatrix(payload.sets.attention, T, payload.heads, layer, head);
  let best = 0;
  for (let j = 1; j < T; j++) if (matrix[token * T + j] > matrix[token * T + best]) best = j;
  const word = payload.tokens[best];
  return { word, right: step.question.choices.indexOf(word) };
}

/** A checked step as the hosts play it: the input, the selection (as a link would open it) and the caption. */
function playable(step) {
  const q = new URLSearchParams();
  for (const key of LINK_KEYS) {
    if (step[key] !== undefined && step[key] !== null && step[key] !== "") q.set(key, String(step[key]));
  }
  const link = readLink(q.toString());
  const played = { a: step.a, b: step.b || "", model: step.model || null, selection: link.selection,
    caption: translated(step, "caption") || "" };
  // the question's words in the page's language; its choices are tokens, never translated
  if (step.question) played.question = { ask: step.translations ? translated({ ask: step.question.ask,
    translations: step.translations }, "ask") : step.question.ask, choices: [...step.question.choices] };
  return played;
}

/**
 * A lesson from its file's text (or the parsed value): { title, steps: [{ a, b, model, selection, caption }] }.
 * Throws an Error whose message is one sentence naming what is wrong (and which step) for anything else.
 */
export function parseLesson(input) {
  let value = input;
  if (typeof input === "string") {
    try {
      value = JSON.parse(input);
    } catch {
      throw new Error(t("This lesson file is not JSON: save a lesson from the app's Lesson bar and open that file."));
    }
  }
  const steps = Array.isArray(value) ? value : value?.steps;
  if (!Array.isArray(steps)) throw new Error(t("This file is not a lesson: it has no list of \"steps\"."));
  if (!steps.length) throw new Error(t("This lesson has no steps."));
  if (steps.length > MAX_STEPS) throw new Error(t("This lesson has {n} steps; a lesson holds at most {most}.",
    { n: steps.length, most: MAX_STEPS }));
  steps.forEach((step, i) => {
    const problem = stepProblem(step, i + 1);
    if (problem) throw new Error(problem);
  });
  const title = typeof value?.title === "string" ? translated(value, "title").slice(0, 200) : "";
  return { title, steps: steps.map(playable) };
}

/** The file's form of one step: what the screen shows now (input { a, b, model }, a selection's state) and a caption.*/
export function recordStep(input, state, caption = "") {
  const step = { a: input.a };
  if (input.b) step.b = input.b;
  if (input.model) step.model = input.model;
  step.layer = state.layer;
  step.head = state.head;
  if (state.token !== null && state.token !== undefined) step.token = state.token;
  step.tab = VIEWS.find((v) => v.name === state.view)?.url ?? state.view;
  step.caption = caption;
  return step;
}

/**
 * A recorded step (recordStep's, to be step `n` from 1) with the question a teacher typed in the Lesson panel: { ask,
 * choices (the tokens as one text, separated by spaces: a token holds none), answer }, all blank for none. It is
 * checked as a lesson file's question is, its answer must be one of the choices and, given the `payload` on screen
 * (the views' decoded data), the token measured there: what the players will mark. Throws an Error of one sentence.
 */
export function askFirst(step, typed, n, payload = null) {
  const ask = String(typed.ask ?? "").trim();
  const choices = String(typed.choices ?? "").split(/\s+/).filter(Boolean);
  const answer = String(typed.answer ?? "").trim();
  if (!ask && !choices.length && !answer) return step;
  const question = { ask, choices, answer };
  const problem = (!answer && t("Step {n}'s question needs its answer: one of its choices.", { n }))
    || questionProblem({ ...step, question }, n);
  if (problem) throw new Error(problem);
  if (payload) {
    const { word } = measuredAnswer({ selection: step, question }, payload);
    if (word !== answer) throw new Error(t("Step {n}'s answer is “{answer}”, but the model's numbers on screen say "
      + "“{word}” (the token it looks at most in layer {layer}, head {head}).",
      { n, answer, word, layer: step.layer, head: step.head }));
  }
  return { ...step, question };
}

/** A lesson file's text from recorded steps (recordStep's objects). */
export function lessonText(steps, title = "") {
  return `${JSON.stringify({ lesson: 1, title, steps }, null, 2)}\n`;
}

/** Why a step's selection does not fit what the model gave ({ layers, heads, length }), or null when it fits. */
export function checkStep(step, index, dims) {
  const s = step.selection;
  const n = index + 1;
  if (s.layer !== undefined && s.layer >= dims.layers) return `Step ${n} asks for layer ${s.layer}; this model has `
    + `layers 0 to ${dims.layers - 1}.`;
  if (typeof s.head === "number" && s.head >= dims.heads) return `Step ${n} asks for head ${s.head}; this model has `
    + `heads 0 to ${dims.heads - 1}.`;
  if (s.token !== undefined && s.token >= dims.length) return `Step ${n} asks for token ${s.token}; its input has `
    + `tokens 0 to ${dims.length - 1}.`;
  return null;
}

/** The step index (0-based) a link's `step=` (1-based) asks for in a lesson of `count` steps: { index } or
 * { error: a sentence }. No step in the link: the first. */
export function stepOfLink(step, count) {
  if (step === undefined || step === null) return { index: 0 };
  if (!INT(step) || step < 1 || step > count) return { index: 0, error: `This link asks for step ${step}; the lesson `
    + `has ${count} step${count === 1 ? "" : "s"}, so it opens on step 1.` };
  return { index: step - 1 };
}

/** The step a key press moves to from `index` of `count` (Right/PageDown/space on, Left/PageUp back, Home, End),
 * or null for a key that is not the lesson's, or pressed where it types or moves something else. */
export function keyMove(event, index, count) {
  if (event.altKey || event.ctrlKey || event.metaKey || event.defaultPrevented) return null;
  const tag = (event.target?.tagName || "").toUpperCase();
  if (["INPUT", "TEXTAREA", "SELECT"].includes(tag) || event.target?.isContentEditable) return null;
  if (event.target?.closest?.(".bv-scroller")) return null; // the overview's own arrow keys move between heads
  const to = { ArrowRight: index + 1, PageDown: index + 1, ArrowLeft: index - 1, PageUp: index - 1, Home: 0,
    End: count - 1 }[event.key];
  return to === undefined ? null : Math.max(0, Math.min(count - 1, to));
}

/** The shortcuts of the views and the lesson, for a host's "Keys" help: [keys, what they do]. */
export const KEYS = [
  ["→ or PageDown", "next step of a lesson"],
  ["← or PageUp", "previous step of a lesson"],
  ["Home, End", "first, last step of a lesson"],
  ["↑ ↓ (on Lines or Matrix)", "move over the tokens; Enter or space keeps one, Esc clears it"],
  ["← → (on a view's picture)", "previous, next head; Shift + ↑ ↓: previous, next layer"],
  ["Arrow keys (in All heads)", "move between heads"],
  ["Enter (in All heads)", "open the head"],
  ["Enter (in a sentence box)", "analyze"],
  ["Tab", "the next control; every control is reachable by keyboard"],
  ["Esc", "close this list"],
];

/**
 * One lesson's player. host: { apply(step, index) -> Promise of the model's { layers, heads, length, payload (the
 * views' decoded data, for a question's measured answer) } once the step's input is analyzed and selected;
 * show({ index, count, caption, title, problem, busy, question }) the bar and caption }. A step's question is
 * { ask, choices } while it plays, then also { word, right } (measuredAnswer's); null once played if it could not be
 * measured (a problem said instead).
 * go(i) plays step i; a step asked for while another plays waits, and only the last one asked for then plays.
 */
export function createPlayer(lesson, host) {
  let index = -1;
  let wanted = null;
  let playing = null;
  const count = lesson.steps.length;
  async function play() {
    while (wanted !== null) {
      const i = wanted;
      wanted = null;
      index = i;
      const step = lesson.steps[i];
      const asks = step.question ? { ...step.question } : null;
      host.show({ index: i, count, caption: step.caption, title: lesson.title, problem: null, busy: true,
        question: asks });
      let problem = null;
      let measured = null;
      try {
        const dims = await host.apply(step, i);
        problem = dims ? checkStep(step, i, dims) : null;
        if (asks && !problem && dims?.payload) measured = { ...asks, ...measuredAnswer(step, dims.payload) };
      } catch (error) {
        problem = error.message || String(error);
      }
      if (wanted === null) host.show({ index: i, count, caption: step.caption, title: lesson.title, problem,
        busy: false, question: measured });
    }
    playing = null;
  }
  const player = {
    lesson,
    get index() { return index; },
    count,
    go(i) {
      if (!INT(i) || i >= count) return playing || Promise.resolve();
      wanted = i;
      if (!playing) playing = play();
      return playing;
    },
    next() { return player.go(Math.min(count - 1, Math.max(0, index + 1))); },
    prev() { return player.go(Math.max(0, index - 1)); },
    /** A keydown: true when it moved the lesson (the host then prevents the browser's own scrolling). */
    key(event) {
      const to = keyMove(event, Math.max(0, index), count);
      if (to === null || to === index) return to !== null;
      player.go(to);
      return true;
    },
  };
  return player;
}
