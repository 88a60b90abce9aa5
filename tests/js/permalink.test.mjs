// One registry of views (registry.mjs) and one permalink reader/writer (permalink.mjs) for every host: a link made
// in the app opens the same view, layer, head and token in the static page, and back; and a new view is one file
// and one line of the registry, which the hosts, the links and the tabs then follow with no other edit.

import assert from "node:assert/strict";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { pathToFileURL } from "node:url";

import { createGroups, startGradioHost } from "../../bertviz_app/views/js/gradio-host.mjs";
import * as links from "../../bertviz_app/views/js/permalink.mjs";
import { VIEW_NAMES, VIEWS, showsHead, viewForHead, viewForTab } from "../../bertviz_app/views/js/registry.mjs";
import { createSelection } from "../../bertviz_app/views/js/selection.mjs";
import { pageLink } from "../../bertviz_app/static/js/page.mjs";

const JS_DIR = new URL("../../bertviz_app/views/js/", import.meta.url);
const PAYLOAD = { layers: 4, heads: 12, length: 10, sets: { attention: {} } };

/** The app's host with a stand-in mount and address: what it opens from `search`, and the address it writes. */
async function appHost(host, search, views = VIEW_NAMES) {
  const location = { pathname: "/", search };
  const history = { state: null, replaceState(_, __, url) { location.search = url.slice(url.indexOf("?")); } };
  let viewer = null;
  const mount = async (element, payload, options) => {
    viewer = { selection: createSelection(PAYLOAD, options.selection, views), payload: PAYLOAD, destroy() {} };
    return viewer;
  };
  const props = { value: { payload: "P", key: "k", a: "Penguins cannot fly.", b: "They swim.", model: "m" },
    permalink: true };
  const running = host.startGradioHost({ element: { querySelector: () => ({}) }, props, server: {},
    trigger() {}, watch() {} }, { mount, location, history, groups: host.createGroups() });
  await running.ready();
  return { viewer, location };
}

test("every registered view round-trips through a link, under its url name", () => {
  assert.deepEqual(VIEW_NAMES, ["lines", "matrix", "overview", "qk"]);
  for (const { name, url } of VIEWS) {
    const state = { layer: 3, head: "all", token: 0, view: name, zoom: "4" };
    const q = links.writeLink("?x=1&layer=9&tab=lines", { a: "A.", b: "", model: "m" }, state);
    const read = new URLSearchParams(q);
    assert.equal(read.get("tab"), url);
    assert.equal(read.get("x"), "1"); // a host's own parameters stay
    assert.equal(read.has("b"), false);
    assert.deepEqual(links.readLink(q), { a: "A.", b: null, model: "m",
      selection: { layer: 3, head: "all", token: 0, view: name } });
  }
  assert.equal(new URLSearchParams(links.writeLink("", { a: "A." }, { layer: 0, head: 1, token: null,
    view: "qk" })).get("tab"), "query_key");
  // what does not parse is kept as written, for checkLink to say so; an empty value is no value
  assert.deepEqual(links.readLink("?layer=x&head=-1&token=1.5&tab=nope").selection,
    { layer: "x", head: -1, token: "1.5", view: "nope" });
  assert.deepEqual(links.readLink("?layer=&tab=").selection, {});
  assert.equal(viewForTab("qk").name, "qk"); // the static page's links from before read as they were meant
});

test("a link made by the app's host opens the same view in the static page, and back, for every view", async () => {
  for (const { name } of VIEWS) {
    const app = await appHost({ startGradioHost, createGroups }, "");
    app.viewer.selection.set({ layer: 2, head: 7, token: 4, view: name });
    // the static page opens the app's address
    const opened = links.readLink(app.location.search);
    assert.deepEqual(opened.selection, { layer: 2, head: 7, token: 4, view: name }, `app -> page, ${name}`);
    assert.deepEqual([opened.a, opened.b, opened.model], ["Penguins cannot fly.", "They swim.", "m"]);
    // and the static page's own address opens the app there
    const page = pageLink(links, "http://h/index.html", opened, { ...opened.selection, layer: 1 });
    const back = await appHost({ startGradioHost, createGroups }, new URL(page).search);
    const s = back.viewer.selection.get();
    assert.deepEqual([s.layer, s.head, s.token, s.view], [1, 7, 4, name], `page -> app, ${name}`);
  }
});

const FAKE_VIEW = `// A made-up view for the registry's test: the smallest file a view is.
export const NAME = "fake";
export const LABEL = "A made-up view";
export function layout(data, state, size) {
  return { width: size.width, height: 10, boxHeight: 10, caption: "fake", drawn: "fake", locked: null };
}
export function paint() { return { labels: [] }; }
export function hit() { return null; }
`;

/** A copy of the views' modules with one more view: its file, its import and its line in the registry. */
function withFakeView(dir) {
  cpSync(JS_DIR, dir, { recursive: true });
  writeFileSync(join(dir, "view-fake.mjs"), FAKE_VIEW);
  const registry = readFileSync(join(dir, "registry.mjs"), "utf-8")
    .replace(/^(import \* as qk from .*)$/m, '$1\nimport * as fake from "./view-fake.mjs";')
    .replace(/^(\s*\{ name: "qk",.*)$/m, '$1\n  { name: "fake", url: "made_up", label: "Made up", scope: "all", module: fake },');
  writeFileSync(join(dir, "registry.mjs"), registry);
}

test("a new view is one file and one registry line: tabs, selection, links and hosts take it", async () => {
  const dir = mkdtempSync(join(tmpdir(), "bertviz-views-"));
  try {
    withFakeView(dir);
    const load = (name) => import(pathToFileURL(join(dir, name)).href);
    const registry = await load("registry.mjs");
    const copy = { links: await load("permalink.mjs"), host: await load("gradio-host.mjs"),
      selection: await load("selection.mjs"), main: await load("main.mjs") };
    // the tabs (main.mjs makes one per entry, with its label) and the panes' modules
    assert.deepEqual(registry.VIEWS.map((v) => [v.name, v.label]).at(-1), ["fake", "Made up"]);
    assert.equal(registry.VIEWS.at(-1).module.NAME, "fake");
    assert.deepEqual(registry.VIEW_NAMES, [...VIEW_NAMES, "fake"]);
    assert.equal(typeof copy.main.mount, "function"); // the entry loads with it
    // the selection shows it (main.mjs hands the registry's names over), and the links carry it
    assert.equal(copy.selection.createSelection(PAYLOAD, { view: "fake" }, registry.VIEW_NAMES).get().view, "fake");
    const q = copy.links.writeLink("", { a: "A." }, { layer: 1, head: 2, token: null, view: "fake" });
    assert.equal(new URLSearchParams(q).get("tab"), "made_up");
    assert.deepEqual(copy.links.readLink(q).selection, { layer: 1, head: 2, view: "fake" });
    assert.equal(pageLink(copy.links, "file:///s/index.html", { a: "A." }, { layer: 0, head: 0, view: "fake" })
      .includes("tab=made_up"), true);
    // the app's host opens it from an address and writes it back
    const app = await appHost(copy.host, "?a=A.&layer=1&tab=made_up", registry.VIEW_NAMES);
    assert.equal(app.viewer.selection.get().view, "fake");
    assert.match(app.location.search, /tab=made_up/);
    // the registry as it is does not know it: kept as written, for the views to say so
    assert.equal(links.readLink("?tab=made_up").selection.view, "made_up");
    assert.equal(links.checkLink({ view: "made_up" }, PAYLOAD).selection.view, "lines");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the registry refuses a line that disagrees with its view file, or a name used twice", async () => {
  const dir = mkdtempSync(join(tmpdir(), "bertviz-views-"));
  try {
    withFakeView(dir);
    const path = join(dir, "registry.mjs");
    const source = readFileSync(path, "utf-8");
    writeFileSync(path, source.replace('{ name: "fake", url: "made_up"', '{ name: "fakes", url: "made_up"'));
    await assert.rejects(import(`${pathToFileURL(path).href}?a`), /view fakes is called fake in its file/);
    writeFileSync(path, source.replace('url: "made_up"', 'url: "query_key"'));
    await assert.rejects(import(`${pathToFileURL(path).href}?b`), /two views have the url query_key/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a link may put at most MAX_LINK_CHARS characters in a box, counted as characters, not UTF-16 units", () => {
  const within = "\u{1F44D}".repeat(links.MAX_LINK_CHARS); // 40,000 UTF-16 units, 20,000 characters
  assert.equal(links.readLink(new URLSearchParams({ a: within }).toString()).a, within);
  const over = new URLSearchParams({ a: "a" + "\u0301".repeat(links.MAX_LINK_CHARS), b: "Kept?", layer: "2" });
  const opened = links.readLink(over.toString());
  assert.deepEqual([opened.a, opened.b, opened.tooLong, opened.selection], [null, null, ["a"], { layer: 2 }]);
});

test("a link's values out of range open what can be opened and are said in one sentence each", () => {
  const asked = links.readLink("?layer=99&head=-1&token=500&tab=nonsense").selection;
  const { selection, problems } = links.checkLink(asked, PAYLOAD);
  assert.deepEqual(selection, { layer: 0, head: 0, token: null, view: "lines" });
  assert.deepEqual(problems, [
    "This link asks for layer 99, and the model has 4 layers (0 to 3); showing layer 0 instead.",
    "This link asks for head -1, and the model has 12 heads (0 to 11); showing head 0 instead.",
    "This link asks for token 500, and the input has 10 tokens (0 to 9); no token is selected.",
    "This link asks for the view nonsense, which these views do not have (lines, matrix, overview, query_key); "
      + "showing lines instead.",
  ]);
  // what is in range stays, and says nothing
  const good = links.readLink("?layer=3&head=all&token=9&tab=query_key").selection;
  assert.deepEqual(links.checkLink(good, PAYLOAD), { selection: { layer: 3, head: "all", token: 9, view: "qk" },
    problems: [] });
  assert.deepEqual(links.checkLink({}, PAYLOAD), { selection: {}, problems: [] });
  // the corpus views' links say it in the same words
  const said = [];
  assert.equal(links.linkIndex(said, { name: "head", value: 9, size: 4, has: "the corpus's model has",
    fallback: 0 }), 0);
  assert.deepEqual(said, ["This link asks for head 9, and the corpus's model has 4 heads (0 to 3); showing head 0 "
    + "instead."]);
});

test("a view's scope, not a list of names, says where a head opens", () => {
  assert.deepEqual(["lines", "matrix", "overview", "qk"].map(showsHead), [true, true, false, false]);
  assert.deepEqual(["lines", "matrix", "overview", "qk", null].map(viewForHead),
    ["lines", "matrix", "lines", "qk", "lines"]);
  for (const host of ["main.mjs", "gradio-host.mjs", "corpus-host.mjs"]) {
    const source = readFileSync(new URL(`../../bertviz_app/views/js/${host}`, import.meta.url), "utf-8");
    assert.doesNotMatch(source, /\[\s*"(lines|matrix|overview|qk)"|[!=]==? "(lines|matrix|overview|qk)"/, host);
  }
});
