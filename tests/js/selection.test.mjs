import assert from "node:assert/strict";
import { test } from "node:test";

import { constrain, constrainHeads, createSelection, defaultState, isPicked, sameValue,
  toggleHeads } from "../../bertviz_app/views/js/selection.mjs";

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
  // the view: one of the names the host registered (main.mjs passes the registry's), else the default
  assert.equal(constrain({ view: "nope" }, payload, ["lines", "qk"]).view, "lines");
  assert.equal(constrain({ view: "qk" }, payload, ["lines", "qk"]).view, "qk");
  assert.equal(createSelection(payload, { view: "qk" }, ["lines"]).get().view, "lines");
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

test("picks to silence keep only whole pairs that fit, once each, sorted", () => {
  assert.deepEqual(defaultState(payload).silenced, []);
  assert.deepEqual(constrainHeads([[3, 4], [0, 11], [3, 4], [0, 2], ["1", "5"]], payload),
    [[0, 2], [0, 11], [1, 5], [3, 4]]);
  // Out of range, fractional, negative, malformed: dropped, never clamped onto a head nobody picked.
  assert.deepEqual(constrainHeads([[6, 0], [0, 12], [-1, 0], [1.5, 2], [2], [1, 2, 3], "0,1", null, [2, 3]],
    payload), [[2, 3]]);
  assert.deepEqual(constrainHeads("nope", payload), []);
  assert.deepEqual(constrain({ silenced: undefined }, payload).silenced, []);
  // A model with fewer layers and heads clears what no longer fits.
  const small = { ...payload, layers: 2, heads: 4 };
  assert.deepEqual(constrain({ silenced: [[1, 3], [1, 4], [5, 0]] }, small).silenced, [[1, 3]]);
});

test("toggling a head, a layer or a head column", () => {
  let picks = toggleHeads([], [[2, 3]]);
  assert.deepEqual(picks, [[2, 3]]);
  assert.ok(isPicked(picks, 2, 3) && !isPicked(picks, 3, 2));
  assert.deepEqual(toggleHeads(picks, [[2, 3]]), []);
  // A group is added where some of it is missing, and removed when all of it is picked.
  const layer2 = [0, 1, 2, 3].map((h) => [2, h]);
  picks = toggleHeads([[2, 3], [0, 0]], layer2);
  assert.deepEqual(constrainHeads(picks, payload), [[0, 0], [2, 0], [2, 1], [2, 2], [2, 3]]);
  assert.deepEqual(toggleHeads(picks, layer2), [[0, 0]]);
});

test("the picks count as changed only when a pair changes", () => {
  assert.ok(sameValue([[0, 1], [2, 3]], [[0, 1], [2, 3]]));
  assert.ok(!sameValue([[0, 1]], [[0, 1], [2, 3]]) && !sameValue([[0, 1]], [[1, 0]]));
  const selection = createSelection(payload, { silenced: [[1, 1]] });
  const calls = [];
  selection.subscribe((state, changed) => calls.push([...changed]));
  const before = selection.get().silenced;
  selection.set({ silenced: [[1, 1], [1, 1]] }); // the same picks once constrained
  selection.set({ layer: 2 });
  assert.equal(selection.get().silenced, before); // the same array: a view may compare by identity
  selection.set({ silenced: [[4, 0], [1, 1]] });
  assert.deepEqual(calls, [["layer"], ["silenced"]]);
  assert.deepEqual(selection.get().silenced, [[1, 1], [4, 0]]);
});
