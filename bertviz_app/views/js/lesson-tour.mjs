// The first visit's offer, the same in both hosts: a small card floating over the page's corner (fixed, so nothing on
// the page moves) offers "Start the 2-minute tour", lesson 1 played over the live page by the host's own player.
// Only a first visit sees it: the address holds no link and the browser's storage nothing of ours. Starting or
// dismissing it (its button, or Esc) is remembered in the storage, so it is never offered again; where the storage
// is refused (a private window's setting), it is not offered at all, since a dismissal could not be remembered.

import { addStylesheet } from "./dom.mjs";
import { t } from "./i18n.mjs";
import { LINK_KEYS } from "./permalink.mjs";

/** The lesson the tour plays: the first shipped one. */
export const TOUR_LESSON = "01-words-become-pieces";
/** Where the browser keeps that the tour was started or dismissed. */
export const TOUR_KEY = "bertviz-tour";
// every key this project writes starts so (theme.mjs, palette.mjs, lesson-app.mjs): one of them, and this browser
// has been here before
const OURS = "bertviz";

// the offer's words, in English: catalog-es.mjs holds them in Spanish
const WORDS = {
  label: "First visit",
  text: "New here? Lesson 1 plays over this page, one step at a time.",
  start: "Start the 2-minute tour",
  skip: "No, thanks",
  skipTitle: "Dismiss for good (Esc)",
};

/** Whether a page at `search` (its query string) in a browser with `storage` is a first visit: no link parameter,
 * and no key of ours in the storage. No storage (or one that refuses to be read): not offered. */
export function firstVisit(search, storage) {
  if (!storage) return false;
  const q = new URLSearchParams(search);
  if (LINK_KEYS.some((key) => q.has(key))) return false;
  try {
    for (let i = 0; i < storage.length; i++) if (String(storage.key(i)).startsWith(OURS)) return false;
  } catch {
    return false;
  }
  return true;
}

/** The answer to the offer ("started" or "dismissed") kept in `storage`: the offer is not made again. */
export function rememberTour(storage, answer) {
  try { storage?.setItem(TOUR_KEY, answer); } catch { /* full or refused: offered again next time, nothing worse */ }
}

/**
 * The card offering the tour at the start of `doc`'s body (first in the keyboard's order, though shown in a corner),
 * when firstVisit says so; start() plays the tour. Returns the card, or null when it is not offered.
 */
export function offerTour(doc, { search, storage, start }) {
  if (!firstVisit(search, storage)) return null;
  addStylesheet(doc, "lesson.css");
  const card = doc.createElement("div");
  card.id = "tour-offer";
  card.className = "bv-tour";
  card.setAttribute("role", "dialog"); // not modal: the page stays usable around it
  card.setAttribute("aria-label", t(WORDS.label));
  card.setAttribute("aria-describedby", "tour-offer-text");
  const text = doc.createElement("p");
  text.id = "tour-offer-text";
  text.textContent = t(WORDS.text);
  const yes = doc.createElement("button");
  Object.assign(yes, { type: "button", id: "tour-start", textContent: t(WORDS.start) });
  const no = doc.createElement("button");
  Object.assign(no, { type: "button", id: "tour-skip", textContent: t(WORDS.skip), title: t(WORDS.skipTitle) });
  card.append(text, yes, no);
  const onKey = (event) => {
    // Esc is the views' too (it clears a kept token): the offer takes it where nothing else has the focus
    const at = doc.activeElement;
    if (event.key === "Escape" && (!at || at === doc.body || card.contains(at))) answer("dismissed");
  };
  const answer = (how) => {
    rememberTour(storage, how);
    doc.removeEventListener("keydown", onKey);
    card.remove();
    if (how === "started") start();
  };
  yes.addEventListener("click", () => answer("started"));
  no.addEventListener("click", () => answer("dismissed"));
  doc.addEventListener("keydown", onKey);
  doc.body.prepend(card);
  return card;
}
