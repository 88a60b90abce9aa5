// The app's host: what each gr.HTML of bertviz_app/app/views_host.py runs. Its js_on_load is three lines that wait
// for this bundle (in the page's head, once) and call BertvizViews.gradioHost({ element, props, server, trigger,
// watch }) with what Gradio gives a js_on_load. The props:
//   value       { payload: base64, key, a, b, model } of one analysis (never in the template: megabytes of text),
//               and optionally open: { layer, head }, the head to show it on (Compare's most changed head)
//   id_prefix   element ids, unique per host
//   permalink   this host writes the address (permalink.mjs) and opens where it says
//   sync        hosts with the same sync name follow each other's layer, head, token, view and filters (models of
//               different depths: the layer at the same relative depth, pairedLayer)
//   silence     offer picking heads to silence in the overview; the picks go to Python as a `submit` event
// A value { timeline: {...}, key, pages } instead (a training's snapshots of one input, timeline.mjs) shows the
// timeline slider over the same views (timeline-bar.mjs); a later value with the same key (the training added
// snapshots) grows it in place. The payloads come a page at a time: server.timeline_page({ pages, page }).
// server.query_key / offline_page / attention_csv (key or request) answer { value } or { error: a sentence }.
//
// Hosts of one page find each other through this module (one bundle per page), never through window events.

import { readLink, writeLink } from "./permalink.mjs";
import { viewForHead } from "./registry.mjs";
import { mountTimeline } from "./timeline-bar.mjs";

export const SHARED = ["layer", "head", "token", "view", "matrix", "units", "segments", "hideSpecial", "renormalize",
  "scale", "direction"];

/**
 * The layer of a stack of `to` layers at the same relative depth as `layer` of a stack of `from`: layer l ends
 * (l + 1) / L of the way through its stack, so 3 layers meet 6 at 1, 3, 5 and 6 meet 3 at 0, 0, 1, 1, 2, 2
 * (analysis.paired_layer in Python, which the Compare tab's numbers use).
 */
export function pairedLayer(layer, from, to) {
  if (!from || !to || from === to) return layer;
  return Math.min(to - 1, Math.max(0, Math.round(((layer + 1) * to) / from) - 1));
}

/**
 * Groups of hosts that follow each other: join(group, member) -> leave(); member = { selection() -> a selection or
 * null, layers() -> its model's depth }. share(group, from, state, changed) sets the SHARED keys on every other
 * member, the layer moved to the same relative depth; what that changes there is not shared back (pairing 6
 * layers with 3 is not one to one: an echo would move the first side off the layer it was set to). current(group,
 * member) is the SHARED state of another member that shows something, its layer moved to `member`'s depth (null
 * when none does): a side that mounts after the other starts where the other is.
 */
export function createGroups() {
  const groups = new Map();
  let sharing = false;
  return {
    join(group, member) {
      if (!groups.has(group)) groups.set(group, new Set());
      groups.get(group).add(member);
      return () => groups.get(group)?.delete(member);
    },
    share(group, from, state, changed) {
      if (sharing || !group || ![...changed].some((key) => SHARED.includes(key))) return;
      const patch = Object.fromEntries(SHARED.map((key) => [key, state[key]]));
      sharing = true;
      try {
        for (const member of groups.get(group) || []) {
          if (member === from) continue;
          member.selection()?.set({ ...patch, layer: pairedLayer(state.layer, from.layers?.(), member.layers?.()) });
        }
      } finally {
        sharing = false;
      }
    },
    current(group, member) {
      for (const other of groups.get(group) || []) {
        const state = other === member ? null : other.selection()?.get();
        if (!state) continue;
        const patch = Object.fromEntries(SHARED.map((key) => [key, state[key]]));
        return { ...patch, token: null, layer: pairedLayer(state.layer, other.layers?.(), member.layers?.()) };
      }
      return null;
    },
  };
}

const groups = createGroups();
const running = new Set(); // every host of the page: { element, viewer() }, for openHead

/**
 * Opens one head in the views of the host inside the element with id `rootId` (the app's main views), for a
 * control elsewhere on the page (the Task tab's ranked heads): its layer and head selected, the overview traded
 * for the lines view of that one head, the views scrolled into sight. False when no views are there yet.
 */
export function openHead(rootId, layer, head, doc = globalThis.document) {
  const root = doc?.getElementById(rootId);
  for (const entry of running) {
    const viewer = entry.viewer();
    if (!root || !viewer || !root.contains(entry.element)) continue;
    const view = viewer.selection.get().view;
    viewer.selection.set({ layer, head, view: viewForHead(view) });
    root.scrollIntoView?.({ block: "start" });
    return true;
  }
  return false;
}

/** { viewer, input: { a, b, model } } of the first host inside the element with id `rootId` that shows views, or
 * null (a lesson's step selects in it once its input is analyzed). */
export function viewerIn(rootId, doc = globalThis.document) {
  const root = doc?.getElementById(rootId);
  for (const entry of running) {
    const viewer = entry.viewer();
    if (root && viewer && root.contains(entry.element)) return { viewer, input: entry.input() };
  }
  return null;
}

/** A server function's answer as a value, or an Error with its sentence (shown by the views or in an alert). */
export async function ask(server, name, argument, alert = () => {}) {
  let answer;
  try {
    answer = await server[name](argument);
  } catch {
    throw new Error("the server did not answer; is it still running?");
  }
  if (answer && answer.error) {
    if (name !== "query_key") alert(answer.error); // the query/key view shows its own message
    throw new Error(answer.error);
  }
  return answer.value;
}

/**
 * Runs one host: mounts the views on its element for every new value. deps: { mount, location, history, alert,
 * groups } (the page's own by default; tests hand in stand-ins). Returns { viewer(), destroy() }.
 */
export function startGradioHost({ element, props, server, trigger, watch }, deps) {
  const { mount, location, history, alert = () => {}, groups: registry = groups } = deps;
  const host = element.querySelector(".bv-host");
  let viewer = null;
  let unsubscribe = null;
  let showing = Promise.resolve();
  const member = { selection: () => viewer?.selection || null, layers: () => viewer?.payload?.layers };
  const leave = registry.join(props.sync || "", member);
  let input = null; // { a, b, model } of what the viewer shows
  let pagesOf = null; // a timeline value's name for its pages (timeline_page)
  const entry = { element, viewer: () => viewer, input: () => input };
  running.add(entry);

  async function show() {
    const value = props.value;
    if (value && value.timeline) return showTimeline(value);
    if (value && "timeline" in value) { // a model without a timeline: nothing to show
      if (viewer) viewer.destroy();
      viewer = input = null;
      host.replaceChildren();
      return;
    }
    if (!value || !value.payload) return;
    // A new input keeps every choice but the token (its index means another token now) and the picks; the first
    // one comes from the address.
    const fromLink = !viewer && Boolean(props.permalink);
    const wanted = viewer ? { ...viewer.selection.get(), token: null, silenced: [] }
      : fromLink ? { ...readLink(location.search).selection } : {};
    // The head the value names (both sides of Compare: its most changed head) wins, so linked hosts open together.
    if (value.open) Object.assign(wanted, { layer: value.open.layer, head: value.open.head });
    // A linked host given no head starts where the other side is, so the pair is linked from its first frame. Both
    // sides mount at once, so the one that finishes later looks again and follows the earlier (and only a mounted
    // side knows its depth, to pair layers with).
    const follow = () => (props.sync && !value.open ? registry.current(props.sync, member) : null);
    const before = follow();
    if (before) Object.assign(wanted, before);
    if (unsubscribe) unsubscribe();
    if (viewer) viewer.destroy();
    viewer = null;
    const next = await mount(host, value.payload, {
      showTitle: false,
      idPrefix: props.id_prefix || "",
      selection: wanted,
      fromLink,
      loadQueryKey: () => ask(server, "query_key", value.key, alert),
      offlineHtml: () => ask(server, "offline_page", value.key, alert),
      exportCsv: (s) => ask(server, "attention_csv", { key: value.key, matrix: s.matrix, layer: s.layer, head: s.head },
        alert),
      onSilence: props.silence ? async (heads) => { trigger("submit", { key: value.key, heads }); } : undefined,
    });
    viewer = next;
    input = { a: value.a, b: value.b, model: value.model, key: value.key }; // key: the corpus tab's search reads it
    const after = follow();
    if (after) viewer.selection.set(after);
    const write = (state) => {
      if (!props.permalink) return;
      history.replaceState(history.state, "", `${location.pathname}?${writeLink(location.search, value, state)}`);
    };
    unsubscribe = viewer.selection.subscribe((state, changed) => {
      write(state);
      if (props.sync) registry.share(props.sync, member, state, changed);
    });
    write(viewer.selection.get());
  }
  async function showTimeline(value) {
    pagesOf = value.pages; // what the server calls this timeline's pages; the latest value's (a grown one's too)
    if (viewer && viewer.update && input && input.timeline === value.key) {
      await viewer.update(value.timeline);
      return;
    }
    const wanted = viewer?.selection ? { ...viewer.selection.get(), token: null, silenced: [] } : {};
    if (unsubscribe) unsubscribe();
    unsubscribe = null;
    if (viewer) viewer.destroy();
    viewer = mountTimeline(host, value.timeline, { mount, idPrefix: props.id_prefix || "", selection: wanted,
      loadPage: (page) => ask(server, "timeline_page", { pages: pagesOf, page }, alert) });
    input = { a: value.timeline.input.text, b: value.timeline.input.text_pair || "", model: value.timeline.model,
      timeline: value.key };
    await viewer.ready();
  }
  // One mount at a time: a value that arrives while the last one mounts waits for it.
  const queue = () => { showing = showing.then(show, show); return showing; };
  queue();
  watch("value", queue);
  return {
    viewer: () => viewer,
    ready: () => showing,
    destroy() { leave(); running.delete(entry); if (unsubscribe) unsubscribe(); if (viewer) viewer.destroy(); },
  };
}
