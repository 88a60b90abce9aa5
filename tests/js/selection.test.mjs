import assert from "node:assert/strict";
import { test } from "node:test";

import { constrain, createSelection, defaultState } from "../../bertviz_app/views/js/selection.mjs";

const payload = { layers: 6, heads: 12, length: 32, sets: { attention: {}, rollout: {} } };

test("states are clamped and unknown choices fall back to the defaults", () => {
  const s = constrain({ layer: 9, head: -3, token: 40, segments: "X->Y", zoom: "8", matrix: "nope" }, payload);
  assert.equal(s.layer, 5);
  assert.equal(s.head, 0);
  assert.equal(s.token, 31);
  assert.equal(s.segments, "all");
  assert.equal(s.zoom, defaultState(payload).zoom);
  assert.equal(s.matrix, "attention");
  assert.equal(constrain({ head: "all", token: "" }, payload).head, "all");
  assert.equal(constrain({ token: "" }, payload).token, null);
  assert.equal(constrain({ layer: "3" }, payload).layer, 3);
});

test("set notifies subscribers with the keys that changed, and nothing when nothing did", () => {
  const selection = createSelection(payload, { layer: 1 });
  const calls = [];
  const stop = selection.subscribe((state, changed) => calls.push([state.layer, state.head, [...changed].sort()]));
  selection.set({ layer: 2, head: 3 });
  selection.set({ layer: 2 });
  selection.set({ layer: 99 });
  stop();
  selection.set({ layer: 0 });
  assert.deepEqual(calls, [[2, 3, ["head", "layer"]], [5, 3, ["layer"]]]);
  assert.equal(selection.get().layer, 0);
});

test("subscribers may unsubscribe while being notified", () => {
  const selection = createSelection(payload);
  const seen = [];
  const stop = selection.subscribe(() => { seen.push("a"); stop(); });
  selection.subscribe(() => seen.push("b"));
  selection.set({ layer: 1 });
  selection.set({ layer: 2 });
  assert.deepEqual(seen, ["a", "b", "b"]);
});
