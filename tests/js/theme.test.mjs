// The projector theme reaches the drawing: a view laid out and painted with it has larger labels and darker, wider
// marks than with the default theme, and the default theme draws what the views drew before themes existed.

import assert from "node:assert/strict";
import { test } from "node:test";

import { createCache } from "../../bertviz_app/views/js/data.mjs";
import { decodePayload } from "../../bertviz_app/views/js/decode.mjs";
import { constrain } from "../../bertviz_app/views/js/selection.mjs";
import { createSvgContext } from "../../bertviz_app/views/js/svg.mjs";
import { attentionLUT, largestLabel, PROJECTOR_CLASS, restoreTheme, setTheme, STORAGE_KEY, storedTheme, themeOf,
  THEMES, toggleTheme } from "../../bertviz_app/views/js/theme.mjs";
import * as lines from "../../bertviz_app/views/js/view-lines.mjs";
import * as matrix from "../../bertviz_app/views/js/view-matrix.mjs";
import * as overview from "../../bertviz_app/views/js/view-overview.mjs";
import { payloadBytes } from "./helpers.mjs";

const measure = (font, text) => text.length * 8;
const size = (width, maxHeight, theme) => ({ width, maxHeight, measure, ...(theme ? { theme: THEMES[theme] } : {}) });
const box = (l) => ({ x: 0, y: 0, width: Math.min(l.width, 1280), height: l.boxHeight, dpr: 1 });
const fixture = async () => ({ payload: await decodePayload(payloadBytes()), cache: createCache(), silence: false });
const state = (data, patch = {}) => constrain({ zoom: "labels", ...patch }, data.payload);

function record(view, l, active = null) {
  const v = box(l);
  const ctx = createSvgContext(v.width, v.height, { measure, imageUrl: () => "data:image/png;base64," });
  view.paint(ctx, l, v, { hover: null, locked: active, active, ui: {} });
  return ctx.toString();
}
const attrs = (svg, name) => [...svg.matchAll(new RegExp(` ${name}="([^"]+)"`, "g"))].map((m) => Number(m[1]));
const lineStrokes = (svg) => [...svg.matchAll(
  /<path d="[^"]*" fill="none" stroke="[^"]+" stroke-width="([^"]+)"([^>]*)>/g)]
  .map((m) => ({ width: Number(m[1]), opacity: Number((/opacity="([^"]+)"/.exec(m[2]) || [0, 1])[1]) }));
const luminance = (lut, k) => 0.2126 * lut[4 * k] + 0.7152 * lut[4 * k + 1] + 0.0722 * lut[4 * k + 2];

test("a theme's name: anything unknown is the default; the projector grows labels past a host's smaller wish", () => {
  assert.equal(themeOf(" projector "), THEMES.projector); // a CSS variable's value comes with its spaces
  for (const name of ["", "toString", "__proto__", null, undefined, "Projector"]) {
    assert.equal(themeOf(name), THEMES.default);
  }
  assert.equal(largestLabel({ labelMax: 28, theme: THEMES.projector }), 28); // presenter mode's is larger still
  assert.equal(largestLabel({ theme: THEMES.projector }), THEMES.projector.labelMax);
  assert.equal(largestLabel({}), 15);
});

test("lines: the projector theme paints larger labels and wider lines that never fade below its floor", async () => {
  const data = await fixture();
  const plain = lines.layout(data, state(data), size(1280, 500));
  const projector = lines.layout(data, state(data), size(1280, 500, "projector"));
  assert.deepEqual(lines.layout(data, state(data), size(1280, 500, "default")).geometry, plain.geometry);
  assert.equal(plain.type.px, 15);
  assert.ok(projector.type.px >= 20 && projector.geometry.labelPx === projector.type.px, `${projector.type.px}`);
  assert.ok(projector.height <= 500 && projector.pitch >= projector.type.pitch); // every row, every label
  for (const active of [null, { side: "left", index: 2 }]) {
    const a = lineStrokes(record(lines, plain, active)), b = lineStrokes(record(lines, projector, active));
    assert.ok(a.length && b.length);
    assert.ok(Math.min(...b.map((s) => s.width)) > Math.max(...a.map((s) => s.width)),
      JSON.stringify([a[0], b[0]]));
    assert.ok(Math.min(...b.map((s) => s.opacity)) >= THEMES.projector.alphaFloor - 1e-9);
    assert.ok(Math.min(...a.map((s) => s.opacity)) < THEMES.projector.alphaFloor); // the default keeps faint lines
  }
  const sizes = (l) => attrs(record(lines, l), "font-size").filter((px) => px >= 15);
  assert.ok(Math.min(...sizes(projector)) > Math.max(...sizes(plain)));
});

test("matrix: the projector's ramp is darker at every weight, its labels larger; its bitmap its own", async () => {
  const data = await fixture();
  const plain = matrix.layout(data, state(data), size(700, 500));
  const projector = matrix.layout(data, state(data), size(700, 500, "projector"));
  assert.equal(plain.type.px, 15);
  assert.ok(projector.type.px > plain.type.px && projector.cell >= projector.type.pitch, `${projector.type.px}`);
  assert.ok(projector.top + 9 * projector.cell + 8 <= 500 + 1e-9); // still every row in the box
  const a = attentionLUT(THEMES.default), b = attentionLUT(THEMES.projector);
  assert.equal(luminance(b, 0), luminance(a, 0)); // nothing is still white
  for (let k = 8; k < 256; k += 8) assert.ok(luminance(b, k) < luminance(a, k), `index ${k}`);
  assert.ok(luminance(b, 255) < luminance(a, 255));
  assert.notEqual(projector.pixels, plain.pixels); // one cache, two bitmaps: switching back repaints the default
  let darker = 0;
  for (let p = 0; p < plain.pixels.data.length; p += 4) {
    if (plain.pixels.data[p] < 255) darker += projector.pixels.data[p + 1] < plain.pixels.data[p + 1] ? 1 : 0;
  }
  assert.ok(darker > plain.pixels.data.length / 8, `${darker} cells darker`);
  const labelSizes = (l) => attrs(record(matrix, l), "font-size").filter((px) => px >= 15);
  assert.ok(Math.min(...labelSizes(projector)) > Math.max(...labelSizes(plain)));
});

test("all heads: the projector theme's axis labels are larger, with bands that grow to hold them", async () => {
  const data = await fixture();
  const plain = overview.layout(data, state(data), size(1280, 500));
  const projector = overview.layout(data, state(data), size(1280, 500, "projector"));
  assert.deepEqual(plain.geometry, { left: 72, top: 24, tile: plain.tile, gap: 8, rowPitch: plain.tile + 24,
    labelPx: 14 }); // the default's bands are where they were
  assert.ok(projector.geometry.labelPx > plain.geometry.labelPx && projector.geometry.left > plain.geometry.left);
  const svg = record(overview, projector);
  assert.ok(attrs(svg, "font-size").includes(THEMES.projector.axisPx));
  assert.ok(!attrs(record(overview, plain), "font-size").includes(THEMES.projector.axisPx));
  // A point over the first tile hits it in either theme: hit reads the layout's bands, not the default's.
  for (const l of [plain, projector]) {
    const [x, y] = overview.tileOrigin(l, 1, 2);
    assert.deepEqual(overview.hit(l, x + 2, y + 2), { layer: 1, head: 2 });
  }
});

test("setTheme: a class on the page, remembered in storage, and a resize that lays the views out again", () => {
  const classes = new Set();
  const events = [];
  const doc = { body: { classList: { toggle: (c, on) => (on ? classes.add(c) : classes.delete(c)) } },
    defaultView: { dispatchEvent: (e) => events.push(e.type) } };
  const store = new Map();
  const storage = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, v) };
  assert.equal(storedTheme(storage), "default");
  setTheme(doc, true, storage);
  assert.ok(classes.has(PROJECTOR_CLASS));
  assert.equal(store.get(STORAGE_KEY), "projector");
  assert.equal(storedTheme(storage), "projector");
  setTheme(doc, false, storage);
  assert.ok(!classes.has(PROJECTOR_CLASS));
  assert.equal(storedTheme(storage), "default");
  assert.deepEqual(events, ["resize", "resize"]);
  const refusing = { getItem() { throw new Error("denied"); }, setItem() { throw new Error("denied"); } };
  assert.equal(storedTheme(refusing), "default");
  assert.equal(setTheme(doc, true, refusing), true); // on for this page, only not remembered
});

test("a host's button: the start restores the stored theme and marks it; a press switches and remembers", () => {
  const classes = new Set();
  const doc = { body: { classList: { toggle: (c, on) => (on ? classes.add(c) : classes.delete(c)),
    contains: (c) => classes.has(c) } }, defaultView: { dispatchEvent() {} } };
  const pressed = {};
  const button = { setAttribute: (k, v) => { pressed[k] = v; } };
  const store = new Map([[STORAGE_KEY, "projector"]]);
  const storage = { getItem: (k) => store.get(k) ?? null, setItem: (k, v) => store.set(k, v) };
  assert.equal(restoreTheme(doc, button, storage), true);
  assert.ok(classes.has(PROJECTOR_CLASS) && pressed["aria-pressed"] === "true");
  assert.equal(toggleTheme(doc, button, storage), false);
  assert.ok(!classes.has(PROJECTOR_CLASS) && pressed["aria-pressed"] === "false");
  assert.equal(store.get(STORAGE_KEY), "default");
  assert.equal(restoreTheme(doc, null, storage), false); // a page without the button still starts
});
