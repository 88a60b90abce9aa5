// keys.mjs: every key of a view's picture.
import assert from "node:assert/strict";
import { test } from "node:test";

import { pictureKey } from "../../bertviz_app/views/js/keys.mjs";

const payload = { layers: 6, heads: 12 };
const state = { layer: 2, head: 5, token: null };
const key = (k, extra = {}) => ({ key: k, shiftKey: false, altKey: false, ctrlKey: false, metaKey: false, ...extra });

test("up and down walk the tokens from either end and stop at the last", () => {
  assert.deepEqual(pictureKey(key("ArrowDown"), state, payload, null, 9), { cursor: 0 });
  assert.deepEqual(pictureKey(key("ArrowUp"), state, payload, null, 9), { cursor: 8 });
  assert.deepEqual(pictureKey(key("ArrowDown"), state, payload, 3, 9), { cursor: 4 });
  assert.deepEqual(pictureKey(key("ArrowDown"), state, payload, 8, 9), { cursor: 8 });
  assert.deepEqual(pictureKey(key("ArrowUp"), state, payload, 0, 9), { cursor: 0 });
});

test("Enter and space keep the cursor's token, Esc clears a kept one", () => {
  assert.deepEqual(pictureKey(key("Enter"), state, payload, 4, 9), { keep: true });
  assert.deepEqual(pictureKey(key(" "), state, payload, 4, 9), { keep: true });
  assert.equal(pictureKey(key("Enter"), state, payload, null, 9), null);
  assert.deepEqual(pictureKey(key("Escape"), { ...state, token: 3 }, payload, 4, 9), { patch: { token: null } });
  assert.equal(pictureKey(key("Escape"), state, payload, 4, 9), null); // nothing kept: Esc is the page's
});

test("left and right change the head, shift with up and down the layer, within the model", () => {
  assert.deepEqual(pictureKey(key("ArrowRight"), state, payload, null, 9), { patch: { head: 6 } });
  assert.deepEqual(pictureKey(key("ArrowLeft"), { ...state, head: 0 }, payload, null, 9), { patch: { head: 0 } });
  assert.deepEqual(pictureKey(key("ArrowRight"), { ...state, head: "all" }, payload, null, 9), { patch: { head: 0 } });
  assert.deepEqual(pictureKey(key("ArrowLeft"), { ...state, head: "all" }, payload, null, 9), { patch: { head: 11 } });
  assert.deepEqual(pictureKey(key("ArrowDown", { shiftKey: true }), state, payload, 2, 9), { patch: { layer: 3 } });
  assert.deepEqual(pictureKey(key("ArrowUp", { shiftKey: true }), { ...state, layer: 0 }, payload, 2, 9),
    { patch: {} });
});

test("a picture without rows keeps only the head and layer keys; modified keys are the browser's", () => {
  assert.equal(pictureKey(key("ArrowDown"), state, payload, null, 0), null);
  assert.deepEqual(pictureKey(key("ArrowRight"), state, payload, null, 0), { patch: { head: 6 } });
  assert.equal(pictureKey(key("ArrowRight", { ctrlKey: true }), state, payload, null, 9), null);
  assert.equal(pictureKey(key("Tab"), state, payload, null, 9), null);
});
