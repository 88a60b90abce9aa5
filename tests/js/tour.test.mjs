// The first visit's offer of the tour (lesson-tour.mjs): made only where the address holds no link and the browser's
// storage nothing of ours, and never again once answered.

import assert from "node:assert/strict";
import { test } from "node:test";

import { TOUR_KEY, firstVisit, rememberTour } from "../../bertviz_app/views/js/lesson-tour.mjs";

function storage(entries = {}) {
  const map = new Map(Object.entries(entries));
  return { get length() { return map.size; }, key: (i) => [...map.keys()][i] ?? null,
    getItem: (k) => map.get(k) ?? null, setItem: (k, v) => { map.set(k, String(v)); } };
}

test("a first visit is a bare address in a browser that keeps nothing of ours", () => {
  assert.equal(firstVisit("", storage()), true);
  assert.equal(firstVisit("?__theme=dark", storage({ "someone-else": "1" })), true); // not ours: still a first visit
  // a link is not interrupted: any parameter a link owns
  for (const search of ["?a=The+cat.", "?lesson=01-words-become-pieces&step=2", "?layer=3", "tab=matrix"]) {
    assert.equal(firstVisit(search, storage()), false, search);
  }
  // a browser that chose a theme or opened a lesson has been here
  assert.equal(firstVisit("", storage({ "bertviz-theme": "projector" })), false);
  assert.equal(firstVisit("", storage({ "bertviz-lesson:x": "{}" })), false);
  // no storage, or one that refuses to be read: a dismissal could not be kept, so no offer
  assert.equal(firstVisit("", null), false);
  const refusing = { get length() { throw new Error("SecurityError"); } };
  assert.equal(firstVisit("", refusing), false);
});

test("an answered offer is remembered and not made again; a storage that refuses to keep it throws nothing", () => {
  const kept = storage();
  rememberTour(kept, "dismissed");
  assert.equal(kept.getItem(TOUR_KEY), "dismissed");
  assert.equal(firstVisit("", kept), false);
  rememberTour({ setItem() { throw new Error("QuotaExceededError"); } }, "started");
  rememberTour(null, "started");
});
