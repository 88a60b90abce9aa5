// The notebook widget's host (widget-host.mjs) with a stand-in for anywidget's model (get, set, on, off,
// save_changes, change events as Backbone fires them: at once, inside set) and for mount (a real selection, no DOM).

import assert from "node:assert/strict";
import { test } from "node:test";

import { VIEW_NAMES } from "../../bertviz_app/views/js/registry.mjs";
import { createSelection } from "../../bertviz_app/views/js/selection.mjs";
import { bytesOf, patchOf, startWidgetHost, traitsOf } from "../../bertviz_app/views/js/widget-host.mjs";

const PAYLOAD = { layers: 4, heads: 12, length: 10, sets: { attention: {} } };
const OPENING = { layer: 2, head: 5 }; // what mount's guide would choose when no head is asked for

function fakeModel(traits) {
  const values = { _payload: new DataView(new Uint8Array([1, 2, 3]).buffer), _query_key: new DataView(
    new ArrayBuffer(0)), _max_height: 400, layer: null, head: null, token: null, view: "lines", ...traits };
  const listeners = new Map();
  const model = {
    saves: 0, sent: [],
    get: (key) => values[key],
    set(key, value) {
      const changed = values[key] !== value;
      values[key] = value;
      if (changed) for (const fn of [...(listeners.get(`change:${key}`) || [])]) fn();
    },
    save_changes() { model.saves += 1; model.sent.push(Object.fromEntries(["layer", "head", "token", "view"]
      .map((k) => [k, values[k]]))); },
    on(name, fn) { if (!listeners.has(name)) listeners.set(name, new Set()); listeners.get(name).add(fn); },
    off(name, fn) { listeners.get(name)?.delete(fn); },
    listening: () => [...listeners.values()].reduce((n, set) => n + set.size, 0),
  };
  return model;
}

function fakeMount(log) {
  return async (host, data, options) => {
    const asked = options.selection;
    const opening = asked.layer === undefined && asked.head === undefined ? OPENING : {};
    const selection = createSelection(PAYLOAD, { ...opening, ...asked }, VIEW_NAMES);
    const viewer = { selection, payload: PAYLOAD, host, data, options, destroyed: false,
      destroy() { viewer.destroyed = true; } };
    log.push(viewer);
    return viewer;
  };
}

const fakeElement = () => {
  const el = { children: [], replaceChildren: (...c) => { el.children = c; } };
  el.ownerDocument = { createElement: (tag) => ({ tag }) };
  return el;
};

test("bytes arrive as a DataView, an ArrayBuffer, a Uint8Array or base64; empty is none", () => {
  const bytes = new Uint8Array([0, 7, 9, 4]);
  assert.deepEqual([...bytesOf(new DataView(bytes.buffer, 1, 2))], [7, 9]);
  assert.deepEqual([...bytesOf(bytes.buffer)], [0, 7, 9, 4]);
  assert.deepEqual([...bytesOf(bytes)], [0, 7, 9, 4]);
  assert.equal(bytesOf("AAEC"), "AAEC");
  for (const none of [null, undefined, "", new DataView(new ArrayBuffer(0)), new ArrayBuffer(0)]) {
    assert.equal(bytesOf(none), null);
  }
  assert.throws(() => bytesOf({ length: 3 }), /not bytes/);
});

test("traits and selection translate: a view by its url name, null layer and head left to the views", () => {
  assert.deepEqual(traitsOf({ layer: 1, head: "all", token: null, view: "qk", zoom: "fit" }),
    { layer: 1, head: "all", token: null, view: "query_key" });
  const traits = { layer: null, head: 3, token: 4, view: "query_key" };
  assert.deepEqual(patchOf((k) => traits[k]), { head: 3, token: 4, view: "qk" });
  const none = { layer: null, head: null, token: null, view: "overview" };
  assert.deepEqual(patchOf((k) => none[k]), { token: null, view: "overview" });
});

test("the widget opens where the traits say, reports the head it chose, and follows both ways without echo",
  async () => {
  const log = [];
  const model = fakeModel({ view: "overview" });
  const el = fakeElement();
  const cleanup = await startWidgetHost({ model, el }, { mount: fakeMount(log) });
  const [viewer] = log;
  assert.deepEqual(el.children, [viewer.host]);
  assert.deepEqual([...viewer.data], [1, 2, 3]);
  assert.equal(viewer.options.queryKey, null);
  assert.equal(viewer.options.maxHeight, 400);
  assert.match(viewer.options.idPrefix, /^bv-widget-\d+-$/);
  // No head asked for: the views chose one, and the kernel hears which, in one message.
  assert.equal(viewer.selection.get().view, "overview");
  assert.deepEqual(model.sent, [{ layer: 2, head: 5, token: null, view: "overview" }]);

  // A click on a tile of the overview: layer, head and view move together, one message with all of them, and the
  // traits written one by one do not move the picture on the way (each move is a redraw).
  const moves = [];
  viewer.selection.subscribe((state) => moves.push(`${state.layer}.${state.head} ${state.view}`));
  viewer.selection.set({ layer: 3, head: 7, view: "lines" });
  assert.deepEqual(model.sent.at(-1), { layer: 3, head: 7, token: null, view: "lines" });
  assert.equal(model.saves, 2);
  assert.deepEqual(moves, ["3.7 lines"]);
  // A click on a token.
  viewer.selection.set({ token: 6 });
  assert.deepEqual(model.sent.at(-1), { layer: 3, head: 7, token: 6, view: "lines" });
  // What the traits do not hold moves no message.
  viewer.selection.set({ scale: "linear", zoom: "2" });
  assert.equal(model.saves, 3);
  // The query/key view by its url name.
  viewer.selection.set({ view: "qk" });
  assert.equal(model.get("view"), "query_key");

  // A cell sets traits: the selection follows, and nothing is sent back.
  const saves = model.saves;
  model.set("layer", 0);
  model.set("head", "all");
  model.set("token", null);
  model.set("view", "matrix");
  const s = viewer.selection.get();
  assert.deepEqual([s.layer, s.head, s.token, s.view], [0, "all", null, "matrix"]);
  assert.equal(model.saves, saves);
  // A value the selection keeps in range comes back as what it shows.
  model.set("layer", 11);
  assert.equal(viewer.selection.get().layer, 3);
  assert.equal(model.get("layer"), 3);
  assert.equal(model.saves, saves + 1);

  cleanup();
  assert.ok(viewer.destroyed);
  assert.equal(model.listening(), 0);
  model.set("layer", 1);
  assert.equal(viewer.selection.get().layer, 3); // gone: no longer follows
});

test("layer, head, token and view given by the traits are the views' opening state", async () => {
  const log = [];
  const model = fakeModel({ layer: 1, head: "all", token: 3, view: "query_key",
    _query_key: new DataView(new Uint8Array([5, 6]).buffer) });
  await startWidgetHost({ model, el: fakeElement() }, { mount: fakeMount(log) });
  const s = log[0].selection.get();
  assert.deepEqual([s.layer, s.head, s.token, s.view], [1, "all", 3, "qk"]);
  assert.deepEqual([...log[0].options.queryKey], [5, 6]);
  assert.equal(model.saves, 0); // the kernel has it already
});

test("two widgets on one page get different element ids", async () => {
  const log = [];
  for (let k = 0; k < 2; k++) await startWidgetHost({ model: fakeModel({}), el: fakeElement() }, { mount: fakeMount(log) });
  assert.notEqual(log[0].options.idPrefix, log[1].options.idPrefix);
});
