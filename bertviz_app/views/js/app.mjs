// The Gradio app's hosts, on top of main.mjs's mount: each gr.HTML of bertviz_app/app/views_host.py waits for the
// bundle in the page's head and calls BertvizViews.gradioHost({ element, props, server, trigger, watch }); it mounts
// the views on every new value and answers loadQueryKey, offlineHtml and exportCsv with the host's server functions.
// The Corpus tab calls corpusHost, the lesson panel appLessons, a task's explanation openHead. A bundle entry beside
// main.mjs and lesson-host.mjs (views/page.py BUNDLES): no other page carries it.

import { startCorpusHost } from "./corpus-host.mjs";
import { openHead as openHeadIn, startGradioHost, viewerIn as viewerInHost } from "./gradio-host.mjs";
import { playLesson as playLessonIn } from "./lesson-bar.mjs";
import { startAppLessons } from "./lesson-app.mjs";
import { pollServer } from "./lesson-poll.mjs";
import { mount } from "./main.mjs";
import { chooseLanguage, setLanguage, translateTree } from "./i18n.mjs";

/** The app's lesson panel (lesson-app.mjs), on this page with its address, history and storage. */
export function appLessons(doc = document) {
  let storage = null;
  try { storage = window.localStorage; } catch { /* storage refused (a private window's setting): links say so */ }
  return startAppLessons(doc, { viewerIn: viewerInHost, playLesson: playLessonIn, storage, location: window.location,
    history: window.history, sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    shipped: window.bertvizLessons, cards: window.bertvizLessonCards,
    poll: pollServer((path, init) => window.fetch(path, init), window.location.origin) });
}

/**
 * The page's language, before the views mount: ?lang= in the address, else the browser's (i18n.mjs). Gradio chose
 * its own from the browser before this script ran; where ?lang= asks for another, gradio's front end is moved to it
 * through `changeLocale`, an export of its core module (its one use; a gradio without it keeps the browser's
 * language for its labels, and our views still follow ?lang=). Returns the language.
 */
export function startLanguage(win) {
  const lang = setLanguage(chooseLanguage(win.location.search, win.navigator.languages));
  const gradioLang = () => win.document.documentElement.lang.split("-")[0];
  if (gradioLang() !== lang) {
    const core = win.performance.getEntriesByType("resource").map((e) => e.name)
      .find((name) => /\/assets\/core-[\w-]+\.js$/.test(name));
    if (core) {
      const loaded = import(core); // gradio's own module, already loaded: the same instance
      loaded.then((gradio) => { gradio.changeLocale?.(lang); followTabNames(win, lang); }).catch((error) => console.warn(`gradio's language stays ${gradioLang()}: ${error.message}`));
    }
  }
  return lang;
}

/** Gradio 6.31 names its tabs once, in the language it started in: a later changeLocale leaves the tab bar (and its
 * "More tabs" menu) as it was. Their names are put in `lang` here, and again whenever gradio draws them anew. */
function followTabNames(win, lang) {
  const doc = win.document;
  const names = () => {
    for (const button of doc.querySelectorAll("#tabs button")) {
      if (!button.closest("[role=tabpanel]")) translateTree(button, lang);
    }
  };
  const follow = (tabs) => {
    names();
    new win.MutationObserver(names).observe(tabs, { childList: true, subtree: true, characterData: true });
  };
  if (doc.getElementById("tabs")) { follow(doc.getElementById("tabs")); return; }
  const waiting = new win.MutationObserver(() => { // the tab bar is drawn after this script runs
    const tabs = doc.getElementById("tabs");
    if (tabs) { waiting.disconnect(); follow(tabs); }
  });
  waiting.observe(doc.body, { childList: true, subtree: true });
}

/** The views mounted inside element `rootId` of the app (gradio-host.mjs), or null: what a lesson step selects in. */
export function viewerIn(rootId) {
  return viewerInHost(rootId);
}

/** The app's host (gradio-host.mjs) with this page's mount, address and history. */
export function gradioHost(context) {
  return startGradioHost(context, { mount, location: window.location, history: window.history,
    alert: (text) => window.alert(text) });
}

/** The app's Corpus tab (corpus-host.mjs) with this page's address and history. */
export function corpusHost(context) {
  return startCorpusHost(context, { doc: document, location: window.location, history: window.history,
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)) });
}

/** Open one head in the app's views inside element `rootId` (gradio-host.mjs); false when none are there. */
export function openHead(rootId, layer, head) {
  return openHeadIn(rootId, layer, head);
}
