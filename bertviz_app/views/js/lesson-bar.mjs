// The lesson's bar, the same in both hosts: back, "Step 3 of 5", next, the caption (as text: a caption's markup is
// shown, never run) and, where a step could not be played as written, why. The arrow keys step through the lesson
// while the bar is up (lesson.mjs keyMove says which keys, and where they are left to the page).

import { KEYS, createPlayer } from "./lesson.mjs";
import { injectLessonStyle } from "./lesson-style.mjs";

function make(doc, tag, props = {}, text = "") {
  const node = doc.createElement(tag);
  Object.assign(node, props);
  if (text) node.textContent = text;
  return node;
}

/**
 * Put the bar of `lesson` (parseLesson's) at the start of `container` and return its player (lesson.mjs); host:
 * { apply(step, index) -> Promise of { layers, heads, length }, moved(index) after a step is played, close() }.
 * player.close() takes the bar and its keys away.
 */
export function playLesson(container, lesson, host) {
  const doc = container.ownerDocument;
  injectLessonStyle(doc);
  container.querySelector("#lesson-bar")?.bvClose?.();
  const bar = make(doc, "div", { id: "lesson-bar", className: "bv-lesson" });
  bar.setAttribute("role", "region");
  bar.setAttribute("aria-label", "Lesson");
  const prev = make(doc, "button", { type: "button", id: "lesson-prev", title: "Previous step (←)" }, "◀ Back");
  const where = make(doc, "span", { id: "lesson-where" });
  where.setAttribute("aria-live", "polite");
  const next = make(doc, "button", { type: "button", id: "lesson-next", title: "Next step (→)" }, "Next ▶");
  const keys = make(doc, "button", { type: "button", id: "lesson-keys", title: "The keyboard shortcuts" }, "Keys");
  const close = make(doc, "button", { type: "button", id: "lesson-close", title: "Close the lesson" }, "✕");
  const caption = make(doc, "p", { id: "lesson-caption", className: "bv-lesson-caption" });
  const problem = make(doc, "p", { id: "lesson-problem", className: "bv-lesson-problem" });
  problem.setAttribute("role", "alert");
  const row = make(doc, "div", { className: "bv-lesson-row" });
  row.append(prev, where, next, keys, close);
  bar.append(row, caption, problem);
  container.prepend(bar);

  const player = createPlayer(lesson, {
    apply: host.apply,
    show(s) {
      where.textContent = `${lesson.title ? `${lesson.title}: ` : ""}step ${s.index + 1} of ${s.count}`
        + (s.busy ? " …" : "");
      caption.textContent = s.caption; // text, never markup
      problem.textContent = s.problem || "";
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
    doc.removeEventListener("keydown", onKey);
    bar.remove();
    host.close?.();
  };
  bar.bvClose = player.close;
  close.addEventListener("click", () => player.close());
  return player;
}

/** Open (or close, when open) the list of keyboard shortcuts (lesson.mjs KEYS) under the element `after`; Esc or
 * its button closes it. Both hosts call it from a visible "Keys" button. */
export function toggleKeys(doc, after) {
  const open = doc.getElementById("keys-help");
  if (open) { open.bvClose(); return false; }
  const box = make(doc, "div", { id: "keys-help", className: "bv-keys" });
  box.setAttribute("role", "dialog");
  box.setAttribute("aria-label", "Keyboard shortcuts");
  const table = make(doc, "table");
  for (const [keys, what] of KEYS) {
    const row = make(doc, "tr");
    row.append(make(doc, "th", {}, keys), make(doc, "td", {}, what));
    table.append(row);
  }
  const done = make(doc, "button", { type: "button", id: "keys-close" }, "Close");
  box.append(make(doc, "strong", {}, "Keys"), table, done);
  const onKey = (event) => { if (event.key === "Escape") box.bvClose(); };
  box.bvClose = () => { doc.removeEventListener("keydown", onKey); box.remove(); };
  done.addEventListener("click", box.bvClose);
  doc.addEventListener("keydown", onKey);
  after.after(box);
  done.focus();
  return true;
}
