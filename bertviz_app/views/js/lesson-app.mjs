// The app's lesson panel (bertviz_app/app/layout.py puts its HTML under the input row; the "Lesson" button shows
// it): record what the views show as a step with a caption (and, if the teacher types one, a question it asks
// first: lesson.mjs askFirst), save the steps as a lesson file, open a lesson file
// the teacher picks (read in the browser: nothing goes to the server or into the link), and play it in the bar
// above the views (lesson-bar.mjs). A played step fills the boxes, presses Analyze when its input is not the one
// on screen, waits for the new views, then selects.
//
// The panel also lists the lessons that come with the app (the page's head carries them: bertviz_app/lessons.py);
// one picked plays from its first step and folds the panel away. A first visit is offered the first of them as a
// tour (lesson-tour.mjs).
//
// A link holds the lesson's name and step (?lesson=NAME&step=N), not the lesson: the browser keeps each lesson it
// opened (localStorage), so the link reopens that step where the lesson was opened (a shipped lesson's, anywhere);
// elsewhere it says so.

import { askFirst, lessonText, nameFromFile, parseLesson, recordStep, stepOfLink } from "./lesson.mjs";
import { makeShelf, readCards } from "./lesson-shelf.mjs";
import { TOUR_LESSON, offerTour } from "./lesson-tour.mjs";
import { readLink, writeLink } from "./permalink.mjs";
import { t } from "./i18n.mjs";

const STORE = "bertviz-lesson:";
const ANALYSIS_WAIT_MS = 180000;

/** deps: { viewerIn(rootId) -> { viewer, input } or null, playLesson, storage, location, history, sleep(ms),
 * shipped (name -> lesson, the page's), cards (the shipped lessons' cards, lesson-shelf.mjs), poll (the server's
 * class polls, lesson-poll.mjs pollServer) }. */
export function startAppLessons(doc, deps) {
  const $ = (id) => doc.getElementById(id);
  // the panel's steps: those recorded here, or the lesson opened last (a file or a link), to play, extend or save
  const steps = [];
  let title = "";
  let from = ""; // the file the steps came from, said beside their count (the file box is emptied after each read)
  const say = (text) => { $("lesson-error").textContent = text; };
  const count = () => {
    $("lesson-count").textContent = (steps.length === 1 ? t("{n} step", { n: 1 }) : t("{n} steps", { n: steps.length }))
      + (from ? ` (${from})` : "");
    $("lesson-save").disabled = $("lesson-play").disabled = !steps.length;
  };
  const shown = () => deps.viewerIn("attention-host");
  const at = { lesson: null, step: null };
  const writeAddress = () => {
    const now = shown();
    if (!now || !at.lesson) return;
    const search = writeLink(deps.location.search, now.input, now.viewer.selection.get(), at);
    deps.history.replaceState(deps.history.state, "", `${deps.location.pathname}?${search}`);
  };

  function play(lesson, name, step = 1, file = "") {
    deps.storage?.setItem(STORE + name, JSON.stringify(lesson.source));
    const source = Array.isArray(lesson.source) ? lesson.source : lesson.source.steps;
    if (source !== steps) steps.splice(0, steps.length, ...source);
    title = lesson.title;
    from = file || (source === steps ? from : t("lesson \"{name}\"", { name }));
    count();
    const player = deps.playLesson($("lesson-place"), lesson, {
      apply: (step, index) => applyStep(doc, deps, step, index),
      views: () => $("attention-host"),
      poll: deps.poll,
      moved(index) { Object.assign(at, { lesson: name, step: index + 1 }); writeAddress(); },
      close() { at.lesson = null; },
    });
    const where = stepOfLink(step, lesson.steps.length);
    say(where.error || "");
    player.go(where.index);
    return player;
  }
  const read = (source) => ({ ...parseLesson(source), source: typeof source === "string" ? JSON.parse(source)
    : source });

  $("lesson-add").addEventListener("click", () => {
    const { step, problem } = recordFromPanel(doc, shown(), steps.length + 1);
    say(problem || "");
    if (!step) return;
    steps.push(step);
    from = from && `${from.replace(/, changed$/, "")}, changed`;
    count();
  });
  $("lesson-save").addEventListener("click", () => {
    const link = doc.createElement("a");
    link.href = URL.createObjectURL(new Blob([lessonText(steps, title)], { type: "application/json" }));
    link.download = "lesson.json";
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
  });
  $("lesson-play").addEventListener("click", () => {
    try { play(read({ lesson: 1, title, steps }), "lesson"); } catch (error) { say(error.message); }
  });
  $("lesson-file").addEventListener("change", async () => {
    const file = $("lesson-file").files[0];
    if (!file) return;
    try {
      if (file.size > 2 << 20) throw new Error("This file is over 2 MB: a lesson file is a few kB of JSON.");
      // the file of the lesson a link named (and this browser had not kept) opens at the link's step
      const name = nameFromFile(file.name);
      const step = pending && pending.lesson === name ? pending.step : 1;
      play(read(await file.text()), name, step, file.name);
      pending = null;
    } catch (error) {
      say(error.message);
    }
    $("lesson-file").value = "";
  });
  count();
  const shipped = deps.shipped || {};
  const cards = readCards(deps.cards).filter((card) => Object.hasOwn(shipped, card.name));
  if (cards.length) {
    $("lesson-panel").prepend(makeShelf(doc, cards, (name) => {
      try {
        play(read(shipped[name]), name);
        $("lesson-panel").hidden = true;
      } catch (error) { say(error.message); }
    }));
  }

  const opened = readLink(deps.location.search);
  let pending = null; // { lesson, step } a link named, until its file is opened
  if (opened.lesson !== undefined) {
    const kept = deps.storage?.getItem(STORE + opened.lesson)
      || (Object.hasOwn(shipped, opened.lesson) ? shipped[opened.lesson] : null);
    $("lesson-panel").hidden = false;
    if (!kept) {
      pending = { lesson: opened.lesson, step: opened.step };
      say(`This link opens step ${opened.step ?? 1} of the lesson "${String(opened.lesson).slice(0, 80)}", which `
        + "this browser has not opened: open its file with “Open a lesson file”.");
    } else {
      // the page's own first analysis comes from the link's input: the step waits for the views to be there
      afterFirstViews(() => play(read(kept), opened.lesson, opened.step));
    }
  }
  async function afterFirstViews(then) {
    for (let waited = 0; !shown() && waited < ANALYSIS_WAIT_MS; waited += 100) await deps.sleep(100);
    try { then(); } catch (error) { say(error.message); }
  }
  // a first visit is offered the tour: the first shipped lesson, once the page's own first views are there
  if (Object.hasOwn(shipped, TOUR_LESSON)) {
    offerTour(doc, { search: deps.location.search, storage: deps.storage,
      start: () => afterFirstViews(() => play(read(shipped[TOUR_LESSON]), TOUR_LESSON)) });
  }
  return { steps, play: (source, name, step) => play(read(source), name, step) };
}

/** The step the panel records from what the views show (`now`, viewerIn's), with the question typed under "Ask
 * first" if any, as step `n` (from 1): { step }, the panel's fields then emptied, or { problem } in one sentence. */
function recordFromPanel(doc, now, n) {
  const $ = (id) => doc.getElementById(id);
  if (!now) return { problem: t("Analyze an input first: a step is what the views show.") };
  const typed = { ask: $("lesson-ask-in").value, choices: $("lesson-choices-in").value,
    answer: $("lesson-answer-in").value };
  let step;
  try {
    step = askFirst(recordStep(now.input, now.viewer.selection.get(), $("lesson-caption-in").value), typed, n,
      now.viewer.payload);
  } catch (error) {
    return { problem: error.message };
  }
  for (const id of ["lesson-caption-in", "lesson-ask-in", "lesson-choices-in", "lesson-answer-in"]) $(id).value = "";
  $("lesson-ask").open = false;
  return { step };
}

/** A played step: its input analyzed when it is not the one on screen (the boxes filled, Analyze pressed, the new
 * views awaited), then its selection; the views' sizes, for the bar to check the step against. */
async function applyStep(doc, deps, step, index) {
  const shown = () => deps.viewerIn("attention-host");
  const model = doc.querySelector("#model input")?.value;
  if (step.model && model && step.model !== model) throw new Error(`Step ${index + 1} was made with the model `
    + `"${step.model}"; pick it in the Model list, then play the step again.`);
  let now = shown();
  if (!now || now.input.a !== step.a || (now.input.b || "") !== step.b) {
    for (const [id, text] of [["sentence-a", step.a], ["sentence-b", step.b]]) {
      const box = doc.querySelector(`#${id} textarea`);
      box.value = text;
      box.dispatchEvent(new Event("input", { bubbles: true }));
    }
    const before = now?.viewer;
    await deps.sleep(50); // gradio takes the boxes' input events before the click
    doc.querySelector("#analyze").click();
    for (let waited = 0; ; waited += 100) {
      now = shown();
      if (now && now.viewer !== before && now.input.a === step.a && (now.input.b || "") === step.b) break;
      const refused = doc.querySelector("#notice .bv-stale");
      if (refused && waited > 500) throw new Error(refused.textContent.replace(/ The picture below.*$/, ""));
      if (waited > ANALYSIS_WAIT_MS) throw new Error(`Step ${index + 1}'s input was not analyzed; is the server `
        + "still running?");
      await deps.sleep(100);
    }
  }
  now.viewer.selection.set({ token: null, ...step.selection });
  const p = now.viewer.payload;
  return { layers: p.layers, heads: p.heads, length: p.length, payload: p };
}
