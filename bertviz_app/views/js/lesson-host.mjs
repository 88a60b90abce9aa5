// Lessons for a host page (the app, the static page): reading a lesson file, the bar and player at the start of a
// container, the keyboard shortcuts' list. A bundle entry beside main.mjs (views/page.py BUNDLES): an offline page of
// one input goes without it.

import { playLesson as playLessonIn, toggleKeys } from "./lesson-bar.mjs";
import * as lessons from "./lesson.mjs";
import * as shelf from "./lesson-shelf.mjs";
import * as tour from "./lesson-tour.mjs";

/** Lessons (lesson.mjs): reading a lesson file, recording a step, the player both hosts drive. */
export const lesson = lessons;

/** The list of ready lessons (lesson-shelf.mjs: readCards, makeShelf), for the static page's Lesson button. */
export const lessonShelf = shelf;

/** The first visit's offer of the tour (lesson-tour.mjs: offerTour, TOUR_LESSON), for the static page. */
export const lessonTour = tour;

/** A lesson's bar and player at the start of `container` (lesson-bar.mjs), for either host. */
export function playLesson(container, lessonRead, host) {
  return playLessonIn(container, lessonRead, host);
}

/** The keyboard shortcuts, listed under `after` (a host's "Keys" button or its row); again closes them. */
export function showKeys(after, doc = document) {
  return toggleKeys(doc, after);
}
