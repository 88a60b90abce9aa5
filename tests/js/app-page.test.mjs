// The app page's own scripts (bertviz_app/app/page/*.js: each one function that gradio runs in the page), read as
// Python hands them to gradio and run here against a stand-in window and document.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

const PAGE = new URL("../../bertviz_app/app/page/", import.meta.url);

/** The function of page file `name`, with `window` and `document` the given stand-ins. */
function pageScript(name, window, document) {
  const source = readFileSync(new URL(name, PAGE), "utf-8");
  return new Function("window", "document", `return (${source});`)(window, document);
}

test("after Analyze a phone scrolls to the picture, a wide screen stays where it is", () => {
  for (const [width, scrolls] of [[390, 1], [1280, 0]]) {
    let scrolled = 0;
    const host = { scrollIntoView: (options) => { scrolled += 1; assert.deepEqual(options, { block: "start" }); } };
    const document = { querySelector: (selector) => (selector === "#attention-host" ? host : null) };
    pageScript("show-picture.js", { innerWidth: width }, document)();
    assert.equal(scrolled, scrolls, `${width} px`);
  }
});

test("the Lesson button shows the panel, and again hides it", () => {
  const panel = { hidden: true };
  const run = pageScript("lesson.js", {}, { querySelector: (s) => (s === "#lesson-panel" ? panel : null) });
  run();
  assert.equal(panel.hidden, false);
  run();
  assert.equal(panel.hidden, true);
});

test("the phone-fitting script watches the figures under the class Python names, once", () => {
  const source = readFileSync(new URL("fit-on-a-phone.js", PAGE), "utf-8");
  const python = readFileSync(new URL("../tabs/base.py", PAGE), "utf-8");
  const name = /^FIT_ON_A_PHONE = "([\w-]+)"$/m.exec(python)[1];
  assert.equal(source.split(`.${name}`).length - 1, 2); // the figures it fits, the changes it watches
  let observed = 0;
  const window = { bvFitFigures: null, addEventListener() {}, Plotly: null };
  globalThis.MutationObserver = class { constructor() {} observe() { observed += 1; } };
  globalThis.requestAnimationFrame = () => {};
  const document = { body: {}, querySelectorAll: () => [] };
  const fit = pageScript("fit-on-a-phone.js", window, document);
  fit();
  fit(); // a second tab asks again: nothing more
  assert.equal(observed, 1);
});
