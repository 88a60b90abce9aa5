// What the PNG and SVG exports draw: the whole picture at the chosen layer and head, however little of it the box
// shows (a 16-token Lines view saved at 1280 x 720 stopped at "tired"; a pair's Matrix kept only sentence A's rows).

import assert from "node:assert/strict";
import { test } from "node:test";

import { createCache } from "../../bertviz_app/views/js/data.mjs";
import { decodePayload } from "../../bertviz_app/views/js/decode.mjs";
import { exportScale, exportSize, sceneSVG } from "../../bertviz_app/views/js/export.mjs";
import { escapeXml } from "../../bertviz_app/views/js/svg.mjs";
import { constrain } from "../../bertviz_app/views/js/selection.mjs";
import * as lines from "../../bertviz_app/views/js/view-lines.mjs";
import * as matrix from "../../bertviz_app/views/js/view-matrix.mjs";
import { exportLayout, exportScene } from "../../bertviz_app/views/js/view-shell.mjs";
import { payloadBytes } from "./helpers.mjs";

const measure = (font, text) => text.length * 8;
const image = (p) => ({ width: p.width, height: p.height, toDataURL: () => "data:image/png;base64," });
const focus = { hover: null, locked: null, active: null, ui: {} };

async function fixture() {
  return { payload: await decodePayload(payloadBytes()), cache: createCache(), silence: false };
}

/** The SVG's height and its texts with their y. */
function read(svg) {
  const height = Number(svg.match(/<svg [^>]*height="([\d.]+)"/)[1]);
  const texts = [...svg.matchAll(/<text [^>]*?y="([\d.-]+)"[^>]*>([^<]*)<\/text>/g)].map((m) => ({ y: Number(m[1]),
    text: m[2] }));
  const clips = [...svg.matchAll(/<clipPath id="[^"]+"><path d="M([\d.-]+) ([\d.-]+)L[^"]*?L[\d.-]+ ([\d.-]+)/g)]
    .map((m) => ({ top: Number(m[2]), bottom: Number(m[3]) }));
  return { height, texts, clips };
}

for (const view of [lines, matrix]) {
  test(`${view.NAME}: an export is the whole picture with every label, not the part the box shows`, async () => {
    const data = await fixture();
    const state = constrain({ zoom: "labels", layer: 1, head: 2 }, data.payload);
    const size = { width: 900, maxHeight: 120, measure }; // a box that shows a few rows of nine
    const onScreen = view.layout(data, state, size);
    assert.ok(onScreen.boxHeight < onScreen.height); // the box scrolls
    const whole = exportLayout(view, data, state, size);
    const scene = exportScene(view, whole, focus, image);
    assert.equal(scene.height, whole.height);
    assert.equal(scene.width, whole.width);
    const svg = sceneSVG(scene, "nine tokens", measure);
    const { height, texts, clips } = read(svg);
    assert.equal(height, Math.ceil(whole.height + 30));
    const last = texts.filter((t) => t.text === "[SEP]").map((t) => t.y);
    assert.ok(last.length >= 1 && Math.max(...last) < height, `${last} in ${height}`); // the last token's label
    for (const c of clips) assert.ok(c.bottom >= Math.max(...last), `a clip ends at ${c.bottom}`);
    for (const token of data.payload.tokens) assert.ok(texts.some((t) => t.text === escapeXml(token)), token);
  });
}

test("an export zoomed to fit still labels every row: it takes the zoom that gives every label", async () => {
  const data = await fixture();
  const state = constrain({ zoom: "fit", layer: 0, head: 0 }, data.payload);
  const size = { width: 900, maxHeight: 80, measure };
  const whole = exportLayout(lines, data, state, size);
  assert.ok(whole.pitch >= whole.type.pitch, `${whole.pitch}`);
  assert.ok(lines.layout(data, state, size).pitch < whole.pitch);
});

test("the exported size holds the title; the PNG's scale stays inside what a canvas may be", () => {
  assert.deepEqual(exportSize({ width: 100, height: 50 }, "a long title".repeat(4), measure),
    { width: 8 * 48 + 16, height: 80 });
  assert.deepEqual(exportSize({ width: 1000, height: 50.5 }, "short", measure), { width: 1000, height: 81 });
  assert.equal(exportScale(1280, 700), 2);
  const s = exportScale(9400, 9400);
  assert.ok(s < 2 && 9400 * s <= 16384 && (9400 * s) ** 2 <= 100e6 + 1, `${s}`);
});
