// The lesson's bar, the same in both hosts: back, "Step 3 of 5", next, the caption (as text: a caption's markup is
// shown, never run) and, where a step could not be played as written, why. The arrow keys step through the lesson
// while the bar is up (lesson.mjs keyMove says which keys, and where they are left to the page).
// A step with a question hides the views and its caption (which often tells) until a choice is picked or "Reveal" is
// pressed (the teacher's, in presenter mode); then the choice measured in the numbers on screen is marked.

import { addStylesheet } from "./dom.mjs";
import { KEYS, createPlayer } from "./lesson.mjs";
import { startPoll } from "./lesson-poll.mjs";
import { t } from "./i18n.mjs";

function make(doc, tag, props = {}, text = "") {
  const node = doc.createElement(tag);
  Object.assign(node, props);
  if (text) node.textContent = text;
  return node;
}

/**
 * Put the bar of `lesson` (parseLesson's) at the start of `container` and return its player (lesson.mjs); host:
 * { apply(step, index) -> Promise of { layers, heads, length, payload }, moved(index) after a step is played, close(),
 * views() the element of the views, which a question hides, poll (lesson-poll.mjs pollServer's, where a server
 * counts a class's answers) }.
 * player.close() takes the bar and its keys away.
 */
export function playLesson(container, lesson, host) {
  const doc = container.ownerDocument;
  addStylesheet(doc, "lesson.css");
  container.querySelector("#lesson-bar")?.bvClose?.();
  const bar = make(doc, "div", { id: "lesson-bar", className: "bv-lesson" });
  bar.setAttribute("role", "region");
  bar.setAttribute("aria-label", t("Lesson"));
  const prev = make(doc, "button", { type: "button", id: "lesson-prev", title: t("Previous step (←)") }, t("◀ Back"));
  const where = make(doc, "span", { id: "lesson-where" });
  where.setAttribute("aria-live", "polite");
  const next = make(doc, "button", { type: "button", id: "lesson-next", title: t("Next step (→)") }, t("Next ▶"));
  const keys = make(doc, "button", { type: "button", id: "lesson-keys", title: t("The keyboard shortcuts") }, t("Keys"));
  const close = make(doc, "button", { type: "button", id: "lesson-close", title: t("Close the lesson") }, "✕");
  const caption = make(doc, "p", { id: "lesson-caption", className: "bv-lesson-caption" });
  const problem = make(doc, "p", { id: "lesson-problem", className: "bv-lesson-problem" });
  problem.setAttribute("role", "alert");
  const row = make(doc, "div", { className: "bv-lesson-row" });
  row.append(prev, where, next, keys, close);
  const asking = make(doc, "div", { id: "lesson-question", className: "bv-question" });
  asking.hidden = true;
  bar.append(row, asking, caption, problem);
  container.prepend(bar);
  const veil = (on) => {
    host.views?.()?.classList.toggle("bv-veiled", on);
    caption.hidden = on;
  };
  const polls = { server: host.poll || null, running: null }; // the class poll of the question on screen

  const player = createPlayer(lesson, {
    apply: host.apply,
    show(s) {
      where.textContent = `${lesson.title ? `${lesson.title}: ` : ""}${t("step {n} of {count}", { n: s.index + 1,
        count: s.count })}`
        + (s.busy ? " …" : "");
      caption.textContent = s.caption; // text, never markup
      problem.textContent = s.problem || "";
      ask(doc, asking, s.busy ? null : s.question, veil, polls);
      veil(Boolean(s.question) && asking.dataset.answered !== "true");
      prev.disabled = s.index === 0;
      next.disabled = s.index === s.count - 1;
      bar.dataset.step = String(s.index + 1);
      bar.dataset.busy = s.busy ? "true" : "false";
      if (!s.busy) host.moved?.(s.index);
    },
  });
  keys.addEventListener("click", () => toggleKeys(doc, bar));
  prev.addEventListener("click", () => player.prev());
  next.addEventListener("click", () => player.next());
  const onKey = (event) => { if (player.key(event)) event.preventDefault(); };
  doc.addEventListener("keydown", onKey);
  player.close = () => {
    veil(false);
    polls.running?.stop();
    doc.removeEventListener("keydown", onKey);
    bar.remove();
    host.close?.();
  };
  bar.bvClose = player.close;
  close.addEventListener("click", () => player.close());
  return player;
}

/** The question `q` ({ ask, choices, word, right }, lesson.mjs) in `box`, its choices and "Reveal" as buttons;
 * null empties and hides the box. An answer (or Reveal) marks the measured choice, says it, and lifts the veil. */
function ask(doc, box, q, veil, polls) {
  polls.running?.stop();
  polls.running = null;
  box.replaceChildren();
  box.hidden = !q;
  box.dataset.answered = "false";
  if (!q) return;
  const choices = make(doc, "div", { className: "bv-question-choices" });
  choices.setAttribute("role", "group");
  choices.setAttribute("aria-label", t("Choices"));
  const verdict = make(doc, "p", { id: "lesson-verdict", className: "bv-question-verdict" });
  verdict.setAttribute("aria-live", "polite");
  const buttons = q.choices.map((choice, i) => make(doc, "button", { type: "button", id: `lesson-choice-${i}` },
    choice));
  const reveal = make(doc, "button", { type: "button", id: "lesson-reveal", title: t("Show the answer and the view") },
    t("Reveal"));
  const answer = (picked) => {
    if (q.right >= 0) buttons[q.right].dataset.mark = "right";
    if (picked !== null && picked !== q.right) buttons[picked].dataset.mark = "wrong";
    for (const button of [...buttons, reveal]) button.disabled = true;
    const measured = `the model's numbers say “${q.word}”${q.right < 0 ? ", which is none of the choices" : ""}.`;
    verdict.textContent = picked === null ? t("Revealed: {answer}", { answer: measured })
      : picked === q.right ? t("Right: {answer}", { answer: measured }) : t("Not this time: {answer}",
        { answer: measured });
    box.dataset.answered = "true";
    box.dataset.correct = String(picked !== null && picked === q.right);
    veil(false);
    polls.running?.stop(); // the class's answers are in: the tally freezes
    if (pollButton) pollButton.disabled = true;
  };
  buttons.forEach((button, i) => button.addEventListener("click", () => answer(i)));
  reveal.addEventListener("click", () => answer(null));
  choices.append(...buttons, reveal);
  // the class answers on its phones: a poll of this question, its QR code and tally under it
  const pollBox = make(doc, "div", { id: "lesson-poll-box", className: "bv-poll" });
  pollBox.hidden = true;
  let pollButton = null;
  if (polls.server) {
    pollButton = make(doc, "button", { type: "button", id: "lesson-poll", title: t("Students answer on their phones: "
      + "a QR code and an address for them, the counts here") }, t("Poll the class"));
    pollButton.addEventListener("click", async () => {
      pollButton.disabled = true;
      const running = await startPoll(doc, pollBox, q, polls.server);
      if (box.isConnected && box.dataset.answered !== "true" && box.contains(pollBox)) polls.running = running;
      else running?.stop(); // the step moved on (or was answered) while the poll opened
      if (!running) pollButton.disabled = false;
    });
    choices.append(pollButton);
  }
  box.append(make(doc, "p", { className: "bv-question-ask" }, q.ask), choices, pollBox, verdict);
}

/** Open (or close, when open) the list of keyboard shortcuts (lesson.mjs KEYS) under the element `after`; Esc or
 * its button closes it. Both hosts call it from a visible "Keys" button. */
export function toggleKeys(doc, after) {
  const open = doc.getElementById("keys-help");
  if (open) { open.bvClose(); return false; }
  addStylesheet(doc, "lesson.css"); // the box's border and table (the host's page sets its margin)
  const box = make(doc, "div", { id: "keys-help", className: "bv-keys" });
  box.setAttribute("role", "dialog");
  box.setAttribute("aria-label", t("Keyboard shortcuts"));
  const table = make(doc, "table");
  for (const [keys, what] of KEYS) {
    const row = make(doc, "tr");
    row.append(make(doc, "th", {}, t(keys)), make(doc, "td", {}, t(what)));
    table.append(row);
  }
  const done = make(doc, "button", { type: "button", id: "keys-close" }, t("Close"));
  box.append(make(doc, "strong", {}, t("Keys")), table, done);
  const onKey = (event) => { if (event.key === "Escape") box.bvClose(); };
  box.bvClose = () => { doc.removeEventListener("keydown", onKey); box.remove(); };
  done.addEventListener("click", box.bvClose);
  doc.addEventListener("keydown", onKey);
  after.after(box);
  done.focus();
  return true;
}
