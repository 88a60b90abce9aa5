// The permalink, read and written in one place for every host (the app's gradio-host.mjs and the static page):
//   ?a=<sentence A>&b=<sentence B>&model=<model>&layer=<l>&head=<h or all>&token=<t>&tab=<a view's url name>
//   &lesson=<a lesson's name>&step=<its step, from 1> while a lesson plays (lesson.mjs)
// `tab`, not `view`: Gradio's page reads `view`. The view travels under its url name (registry.mjs), so a link made
// in one host opens the same view in the other.

import { VIEWS, viewForTab, viewNamed } from "./registry.mjs";

/** The parameters a link owns; a writer replaces these and keeps any other (a host's own, such as threads=). */
export const LINK_KEYS = ["a", "b", "model", "layer", "head", "token", "tab", "lesson", "step"];

/** The most characters a link may put in a sentence box: the app's own box (app/common.py MAX_CHARS). A link of
 * 100,000 combining marks froze a tab for ~40 s in the box's layout before anything could refuse it. */
export const MAX_LINK_CHARS = 20000;

/**
 * What a query string (with or without its "?") holds: { a, b, model } as text or null, and `selection`, the view
 * it asks for ({ layer, head, token, view }: whole numbers as numbers, anything else as written, for `checkLink` to
 * say what is out of range once the views know their sizes; a host that does not check leaves the rest to
 * selection.mjs's clamping). A link whose a or b is
 * longer than MAX_LINK_CHARS gives neither (null) and names them in `tooLong`. Where it names a lesson,
 * `lesson` (its name) and `step` (from 1; a number, else what the link wrote or null, for the lesson to refuse in
 * words) say where the lesson stands.
 */
export function readLink(search) {
  const q = new URLSearchParams(search);
  const tooLong = ["a", "b"].filter((name) => q.has(name) && codePoints(q.get(name)) > MAX_LINK_CHARS);
  if (tooLong.length) return { ...readLink(dropped(q, ["a", "b"])), tooLong };
  const asked = (name) => (q.get(name) ? q.get(name) : undefined);
  const int = (name) => (/^-?\d+$/.test(q.get(name) ?? "") ? Number(q.get(name)) : asked(name));
  const selection = { layer: int("layer"), head: q.get("head") === "all" ? "all" : int("head"), token: int("token"),
    view: viewForTab(q.get("tab"))?.name ?? asked("tab") };
  const lesson = q.has("lesson") ? { lesson: q.get("lesson"), step: int("step") ?? q.get("step") } : {};
  return { a: q.get("a"), b: q.get("b"), model: q.get("model"), ...lesson,
    selection: Object.fromEntries(Object.entries(selection).filter(([, v]) => v !== undefined)) };
}

/**
 * A number a link asks for, checked against what there is: `value` when it is a whole number from 0 to size - 1,
 * else `fallback`, with one sentence in `problems` saying what the link asked for, what there is (`has`: "the
 * model has") and what is shown instead. The attention views' links and the corpus views' say it in these words.
 */
export function linkIndex(problems, { name, value, size, has, fallback, instead = `showing ${name} ${fallback} instead` }) {
  if (value === undefined || value === null) return fallback;
  if (Number.isInteger(value) && value >= 0 && value < size) return value;
  problems.push(`This link asks for ${name} ${String(value).slice(0, 40)}, and ${has} ${size} ${name}s (0 to `
    + `${size - 1}); ${instead}.`);
  return fallback;
}

/**
 * The selection a link asked for (readLink's), checked against the views' payload: { selection, problems }, where
 * what is out of range is replaced (layer and head 0, no token, the first view) and said in one sentence each.
 */
export function checkLink(selection, payload) {
  const problems = [];
  const out = { ...selection };
  const model = "the model has";
  if ("layer" in out) out.layer = linkIndex(problems, { name: "layer", value: out.layer, size: payload.layers,
    has: model, fallback: 0 });
  if ("head" in out && out.head !== "all") out.head = linkIndex(problems, { name: "head", value: out.head,
    size: payload.heads, has: model, fallback: 0 });
  if ("token" in out) out.token = linkIndex(problems, { name: "token", value: out.token, size: payload.length,
    has: "the input has", fallback: null, instead: "no token is selected" });
  if ("view" in out && !viewNamed(out.view)) {
    problems.push(`This link asks for the view ${String(out.view).slice(0, 40)}, which these views do not have `
      + `(${VIEWS.map((v) => v.url).join(", ")}); showing ${VIEWS[0].url} instead.`);
    out.view = VIEWS[0].name;
  }
  return { selection: out, problems };
}

/**
 * The query string (without "?") that reopens `input` ({ a, b, model }: b and model left out when empty) at
 * `state` (a selection's state: layer, head, token, view), keeping the parameters of `search` that are not a link's;
 * `at` ({ lesson, step }, step from 1) while a lesson plays.
 */
export function writeLink(search, input, state, at = null) {
  const q = new URLSearchParams(search);
  for (const name of LINK_KEYS) q.delete(name);
  q.set("a", input.a);
  if (input.b) q.set("b", input.b);
  if (input.model) q.set("model", input.model);
  q.set("layer", String(state.layer));
  q.set("head", String(state.head));
  if (state.token !== null && state.token !== undefined) q.set("token", String(state.token));
  q.set("tab", viewNamed(state.view)?.url ?? state.view);
  if (at && at.lesson) {
    q.set("lesson", at.lesson);
    q.set("step", String(at.step));
  }
  return q.toString();
}

function codePoints(text) {
  let n = 0;
  for (const _ of text) n += 1; // eslint-disable-line no-unused-vars
  return n;
}

function dropped(q, names) {
  const kept = new URLSearchParams(q);
  for (const name of names) kept.delete(name);
  return kept.toString();
}

// The corpus views' state (corpus-app.mjs) travels beside the attention views' under keys of its own, so that each
// writer keeps the other's: ?corpus=<name>&cview=<heads|qk|search|sentences>&clayer=<l>&chead=<h>&subset=<kind:name>
// &versus=<kind:name>&color=<kind|position|tag|word>&csentence=<the sentence marked on the sentence map>
export const CORPUS_KEYS = ["corpus", "cview", "clayer", "chead", "subset", "versus", "color", "csentence"];

/** The corpus views' state a query string asks for (only what it holds; numbers as written, for the views to check
 * against the corpus: an out-of-range head is one sentence there), or null when it names no corpus view. */
export function readCorpusLink(search) {
  const q = new URLSearchParams(search);
  if (!q.has("cview") && !q.has("corpus")) return null;
  const int = (name) => (q.has(name) && /^-?\d+$/.test(q.get(name)) ? Number(q.get(name)) : undefined);
  const state = { corpus: q.get("corpus") ?? undefined, view: q.get("cview") ?? undefined, layer: int("clayer"),
    head: int("chead"), subset: q.get("subset") ?? undefined, versus: q.get("versus") ?? undefined,
    color: q.get("color") ?? undefined, sentence: int("csentence") };
  return Object.fromEntries(Object.entries(state).filter(([, v]) => v !== undefined));
}

/** The query string with the corpus views' `state` written in, every other parameter kept. */
export function writeCorpusLink(search, state) {
  const q = new URLSearchParams(search);
  for (const name of CORPUS_KEYS) q.delete(name);
  q.set("corpus", state.corpus);
  q.set("cview", state.view);
  q.set("clayer", String(state.layer));
  q.set("chead", String(state.head));
  if (state.subset && state.subset !== "all") q.set("subset", state.subset);
  if (state.versus) q.set("versus", state.versus);
  if (state.color && state.color !== "kind") q.set("color", state.color);
  if (state.sentence !== null && state.sentence !== undefined) q.set("csentence", String(state.sentence));
  return q.toString();
}
