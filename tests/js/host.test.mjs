// The pieces around the views: the head a page opens on and the heads a token attends from most (guide.mjs), the
// saved page's opening view (offline.mjs), and the app's host (gradio-host.mjs) with stand-ins for Gradio and mount.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { decodePayload } from "../../bertviz_app/views/js/decode.mjs";
import { layerMatrix } from "../../bertviz_app/views/js/data.mjs";
import { createGroups, openHead, pairedLayer, startGradioHost } from "../../bertviz_app/views/js/gradio-host.mjs";
import { attentionRow, informativeHead, strongestHeads } from "../../bertviz_app/views/js/guide.mjs";
import { pageOptions, withSelection } from "../../bertviz_app/views/js/offline.mjs";
import { createSelection } from "../../bertviz_app/views/js/selection.mjs";
import { close, payloadBytes } from "./helpers.mjs";

test("a row of one head is that row of its matrix", async () => {
  const p = await decodePayload(payloadBytes());
  const m = layerMatrix(p.sets.attention, 9, 3, 1, 2);
  close(attentionRow(p, 1, 2, 4), m.subarray(4 * 9, 5 * 9), 1e-7);
});

test("the heads where a token attends most: strongest first, never to itself, a neighbor, [CLS] or [SEP]",
  async () => {
  const p = await decodePayload(payloadBytes());
  const found = strongestHeads(p, 4, { count: 6 });
  assert.equal(found.length, 6);
  for (let k = 1; k < found.length; k++) assert.ok(found[k - 1].weight >= found[k].weight);
  for (const f of found) {
    assert.ok(Math.abs(f.to - 4) > 1 && !p.special[f.to], `${JSON.stringify(f)}`);
    const row = attentionRow(p, f.layer, f.head, 4);
    const ordinary = [...row].filter((_, j) => Math.abs(j - 4) > 1 && !p.special[j]);
    assert.equal(f.weight, Math.max(...ordinary)); // each head's strongest ordinary link
  }
  // A pair: the heads ranked by that one weight.
  const pair = strongestHeads(p, 4, { to: 6, count: 6 });
  assert.ok(pair.every((f) => f.to === 6));
  const weights = [];
  for (let l = 0; l < 2; l++) for (let h = 0; h < 3; h++) weights.push(attentionRow(p, l, h, 4)[6]);
  assert.equal(pair[0].weight, Math.max(...weights));
  assert.equal(strongestHeads(p, 4).length, 5);
});

test("the opening head is the one most on other ordinary tokens and least spread out", async () => {
  const p = await decodePayload(payloadBytes());
  const s = p.statistics;
  const score = (k) => (1 - s.cls[k] - s.sep[k] - s.self[k] - s.previous[k] - s.next[k])
    * (1 - Math.min(1, s.entropy[k] / Math.log(9)));
  const { layer, head } = informativeHead(p);
  for (let k = 0; k < 6; k++) assert.ok(score(layer * 3 + head) >= score(k) - 1e-9);
  assert.notDeepEqual({ layer, head }, { layer: 1, head: 0 }); // not the [SEP] head
  assert.deepEqual(informativeHead({ ...p, statistics: null }), { layer: 0, head: 0 });
});

// A page as standalone_html writes it, with this very module inlined in its script: the script holds the same
// words as the options element and the root, inside its lines.
const SCRIPT = readFileSync(new URL("../../bertviz_app/views/js/offline.mjs", import.meta.url), "utf-8");
const PAGE = "<!DOCTYPE html>\n<html>\n<body>\n<div id=\"bertviz-root\"></div>\n"
  + "<script type=\"application/octet-stream\" id=\"bertviz-payload\">AAAA</script>\n"
  + "<script type=\"application/json\" id=\"bertviz-options\">{\"selection\":{\"view\":\"qk\"},\"keep\":1}</script>\n"
  + `<script>${SCRIPT}</script>\n</body>\n</html>\n`;

test("a saved page opens on the view on screen, its script untouched", () => {
  const state = { view: "matrix", layer: 4, head: 2, token: 5, direction: "to", silenced: [[0, 1]], zoom: "2" };
  const saved = withSelection(PAGE, state);
  assert.deepEqual(pageOptions(saved), { keep: 1, selection: { view: "matrix", layer: 4, head: 2, token: 5,
    direction: "to", zoom: "2" } }); // other options kept, picks to silence left out
  const count = (html) => html.match(/id="bertviz-options"/g).length;
  assert.equal(count(saved), count(PAGE)); // one element for one: the words in the script stay as they were
  assert.ok(saved.includes(`<script>${SCRIPT}</script>`));
  assert.equal(withSelection(saved, { ...state, layer: 1 }).length, saved.length); // replaced, not added
  assert.equal(pageOptions(withSelection(saved, { layer: 1 })).selection.layer, 1);
  // Nothing in the options can close their element.
  assert.ok(!withSelection(PAGE, { view: "</script><b>" }).includes("</script><b>"));
  assert.throws(() => withSelection("<p>not ours</p>", state), /not a page of the attention views/);
});

/** A stand-in for mount: a selection over a payload of 4 layers x 12 heads x 10 tokens, no DOM. */
function fakeMount(log, layers = 4) {
  const payload = { layers, heads: 12, length: 10, sets: { attention: {} } };
  return async (host, data, options) => {
    const selection = createSelection(payload, options.selection);
    const viewer = { selection, payload, destroyed: false, options, destroy() { viewer.destroyed = true; } };
    log.push(viewer);
    return viewer;
  };
}

function fakeGradio(props) {
  const watchers = [];
  const calls = [];
  return {
    context: {
      element: { querySelector: () => ({}) }, props,
      server: { query_key: async (key) => ({ value: `qk of ${key}` }), offline_page: async () => ({ error: "gone" }) },
      trigger: (name, data) => calls.push([name, data]), watch: (name, fn) => watchers.push(fn),
    },
    watchers, calls,
  };
}

test("the app's host mounts each value, writes the address, keeps the view for a new input", async () => {
  const log = [];
  const location = { pathname: "/", search: "?a=old&layer=2&head=5&tab=matrix" };
  const history = { state: null, replaceState(_, __, url) { location.search = url.slice(url.indexOf("?")); } };
  const props = { value: { payload: "P1", key: "k1", a: "one", b: "", model: "m" }, id_prefix: "", permalink: true,
    silence: true };
  const g = fakeGradio(props);
  const host = startGradioHost(g.context, { mount: fakeMount(log), location, history, groups: createGroups() });
  await host.ready();
  assert.equal(log.length, 1);
  assert.deepEqual(log[0].options.selection, { layer: 2, head: 5, view: "matrix" }); // from the address
  assert.match(location.search, /a=one/);
  log[0].selection.set({ token: 4 });
  assert.match(location.search, /token=4/);
  assert.equal(await log[0].options.loadQueryKey(), "qk of k1");
  await assert.rejects(log[0].options.offlineHtml(), /gone/);
  await log[0].options.onSilence([[1, 2]]);
  assert.deepEqual(g.calls, [["submit", { key: "k1", heads: [[1, 2]] }]]);
  // A new value: the old viewer goes, the view stays, the token does not.
  props.value = { payload: "P2", key: "k2", a: "two", b: "", model: "m" };
  await g.watchers[0]();
  assert.equal(log.length, 2);
  assert.ok(log[0].destroyed);
  assert.equal(log[1].options.selection.layer, 2);
  assert.equal(log[1].options.selection.token, null);
  host.destroy();
});

test("hosts of one group follow each other without window events, and do not echo", async () => {
  const groups = createGroups();
  const log = [];
  const deps = { mount: fakeMount(log), location: { pathname: "/", search: "" }, history: {}, groups };
  const value = { payload: "P", key: "k", a: "a", b: "", model: "m" };
  const left = startGradioHost(fakeGradio({ value, id_prefix: "l-", sync: "pair" }).context, deps);
  const right = startGradioHost(fakeGradio({ value, id_prefix: "r-", sync: "pair" }).context, deps);
  const alone = startGradioHost(fakeGradio({ value, id_prefix: "x-", sync: "other" }).context, deps);
  await Promise.all([left.ready(), right.ready(), alone.ready()]);
  let calls = 0;
  right.viewer().selection.subscribe(() => { calls++; });
  left.viewer().selection.set({ layer: 3, head: 7, view: "matrix" });
  assert.deepEqual([right.viewer().selection.get().layer, right.viewer().selection.get().head], [3, 7]);
  assert.equal(right.viewer().selection.get().view, "matrix");
  assert.equal(calls, 1); // once: its own change came back to the left one and stopped there
  assert.equal(alone.viewer().selection.get().layer, 0); // another group
  left.viewer().selection.set({ silenced: [[0, 1]] }); // not shared
  assert.deepEqual(right.viewer().selection.get().silenced, []);
  right.destroy();
  left.viewer().selection.set({ layer: 1 });
  assert.equal(right.viewer().selection.get().layer, 3); // gone from the group
});

test("a head opened from elsewhere on the page goes to the views inside that element, the overview traded for lines",
  async () => {
  const log = [];
  const deps = { mount: fakeMount(log), location: { pathname: "/", search: "" }, history: {}, groups: createGroups() };
  const value = { payload: "P", key: "k", a: "a", b: "", model: "m" };
  const main = fakeGradio({ value }), other = fakeGradio({ value, sync: "pair" });
  const hosts = [startGradioHost(main.context, deps), startGradioHost(other.context, deps)];
  await Promise.all(hosts.map((h) => h.ready()));
  let scrolled = 0;
  const root = { contains: (el) => el === main.context.element, scrollIntoView: () => { scrolled++; } };
  const doc = { getElementById: (id) => (id === "attention-host" ? root : null) };
  hosts[0].viewer().selection.set({ view: "overview" });
  assert.equal(openHead("attention-host", 3, 7, doc), true);
  assert.deepEqual(["layer", "head", "view"].map((k) => hosts[0].viewer().selection.get()[k]), [3, 7, "lines"]);
  assert.equal(hosts[1].viewer().selection.get().layer, 0); // the other host is not inside that element
  assert.equal(scrolled, 1);
  assert.equal(openHead("nowhere", 1, 1, doc), false);
  hosts.forEach((h) => h.destroy());
  assert.equal(openHead("attention-host", 1, 1, doc), false); // gone with its host
});

test("two models of different depths follow each other at the same relative depth, without echo", async () => {
  assert.deepEqual([0, 1, 2].map((l) => pairedLayer(l, 3, 6)), [1, 3, 5]);
  assert.deepEqual([0, 1, 2, 3, 4, 5].map((l) => pairedLayer(l, 6, 3)), [0, 0, 1, 1, 2, 2]);
  assert.deepEqual([0, 1, 2, 3].map((l) => pairedLayer(l, 4, 4)), [0, 1, 2, 3]);
  assert.deepEqual([0, 1].map((l) => pairedLayer(l, 2, 12)), [5, 11]);
  const groups = createGroups();
  const value = { payload: "P", key: "k", a: "a", b: "", model: "m" };
  const start = (prefix, layers) => startGradioHost(fakeGradio({ value, id_prefix: prefix, sync: "cmp" }).context,
    { mount: fakeMount([], layers), location: { pathname: "/", search: "" }, history: {}, groups });
  const deep = start("d-", 6), shallow = start("s-", 3);
  await Promise.all([deep.ready(), shallow.ready()]);
  shallow.viewer().selection.set({ layer: 1, head: 4 });
  assert.deepEqual([deep.viewer().selection.get().layer, deep.viewer().selection.get().head], [3, 4]);
  deep.viewer().selection.set({ layer: 2 }); // pairs with the shallow layer 1, which stays; the deep one stays at 2
  assert.equal(shallow.viewer().selection.get().layer, 1);
  assert.equal(deep.viewer().selection.get().layer, 2);
  deep.viewer().selection.set({ layer: 4 }); // the shallow side moves to 2, whose echo (5) would move this one
  assert.equal(shallow.viewer().selection.get().layer, 2);
  assert.equal(deep.viewer().selection.get().layer, 4);
});

test("linked hosts open on the head their value names, or where the other side already is", async () => {
  const groups = createGroups();
  const start = (value, prefix, layers = 4) => {
    const g = fakeGradio({ value, id_prefix: prefix, sync: "cmp" });
    const host = startGradioHost(g.context, { mount: fakeMount([], layers), location: { pathname: "/", search: "" },
      history: {}, groups });
    return { host, g };
  };
  // Compare names a head: both sides open on it from their first frame, whatever either showed before.
  const named = { payload: "P", key: "k", a: "a", b: "", model: "m", open: { layer: 3, head: 2 } };
  const left = start(named, "l-"), right = start({ ...named, open: { layer: 3, head: 2 } }, "r-");
  await Promise.all([left.host.ready(), right.host.ready()]);
  for (const side of [left, right]) {
    const state = side.host.viewer().selection.get();
    assert.deepEqual([state.layer, state.head], [3, 2]);
    assert.deepEqual([side.host.viewer().options.selection.layer, side.host.viewer().options.selection.head], [3, 2]);
  }
  // No head named (inputs Compare cannot set head to head): each payload would open on a head of its own (mount's
  // informative head); the side that mounts later follows the earlier instead.
  const own = (log) => async (host, data, options) => {
    const informative = data === "L" ? { layer: 1, head: 7 } : { layer: 2, head: 3 };
    const opening = options.selection.layer === undefined ? informative : {};
    return fakeMount(log)(host, data, { ...options, selection: { ...opening, ...options.selection } });
  };
  const pair = createGroups();
  const side = (payload) => startGradioHost(fakeGradio({ value: { payload, key: payload, a: "a", b: "", model: "m" },
    sync: "cmp" }).context, { mount: own([]), location: { pathname: "/", search: "" }, history: {}, groups: pair });
  const [a, b] = [side("L"), side("R")];
  await Promise.all([a.ready(), b.ready()]);
  const [l, r] = [a.viewer().selection.get(), b.viewer().selection.get()];
  assert.deepEqual([l.layer, l.head, r.layer, r.head], [1, 7, 1, 7]);
  // A side alone in its group, given nothing, keeps mount's own choice.
  const alone = startGradioHost(fakeGradio({ value: { payload: "R", key: "x", a: "a", b: "", model: "m" },
    sync: "solo" }).context, { mount: own([]), location: { pathname: "/", search: "" }, history: {}, groups: pair });
  await alone.ready();
  assert.deepEqual([alone.viewer().selection.get().layer, alone.viewer().selection.get().head], [2, 3]);
});
