// The notebook widget's host: what run.widget()'s anywidget runs (bertviz_app/views/widget.py). Its ESM is this
// bundle and one line that hands anywidget's render({ model, el }) to BertvizViews.widgetHost. It mounts the views
// once and keeps the kernel's traits and the one shared selection the same, both ways:
//   model traits   layer, head (a number or "all"), token (a number or null), view (a url name of registry.mjs);
//                  null for layer and head until the views open, which then choose (guide.mjs) and report
//                  _payload, _query_key (bytes: DataView in anywidget), _max_height (a view box's pixels)
// A click or a control moves the selection, which sets the traits (one save_changes per move); a cell that sets a
// trait moves the selection. Nothing echoes: a value already equal on the other side is not set again.

import { VIEWS } from "./registry.mjs";

export const SYNCED = ["layer", "head", "token", "view"];

let hosts = 0; // ids stay unique among the widgets of one notebook: they share the document

/** Bytes as mount takes them: anywidget hands a binary trait over as a DataView; empty is none. */
export function bytesOf(value) {
  if (value === null || value === undefined) return null;
  if (typeof value === "string") return value || null;
  if (ArrayBuffer.isView(value)) {
    return value.byteLength ? new Uint8Array(value.buffer, value.byteOffset, value.byteLength) : null;
  }
  if (value instanceof ArrayBuffer) return value.byteLength ? new Uint8Array(value) : null;
  throw new Error(`the widget's data arrived as ${Object.prototype.toString.call(value)}, not bytes`);
}

/** The selection's part that the traits hold, in the traits' terms (a view by its url name). */
export function traitsOf(state) {
  const view = VIEWS.find((v) => v.name === state.view);
  return { layer: state.layer, head: state.head, token: state.token, view: view ? view.url : state.view };
}

/** The traits as a selection patch: a null layer or head is left out (the views choose), a view by its name. */
export function patchOf(get) {
  const patch = {};
  for (const key of ["layer", "head"]) if (get(key) !== null && get(key) !== undefined) patch[key] = get(key);
  patch.token = get("token") ?? null;
  const view = VIEWS.find((v) => v.url === get("view"));
  if (view) patch.view = view.name;
  return patch;
}

/**
 * Runs one widget view: mounts the views in `el` and mirrors selection and traits. deps: { mount } (the bundle's;
 * tests hand in a stand-in). Returns a promise of the cleanup anywidget calls when the output goes.
 */
export async function startWidgetHost({ model, el }, { mount }) {
  const prefix = `bv-widget-${++hosts}-`;
  const host = el.ownerDocument.createElement("div");
  el.replaceChildren(host);
  const maxHeight = Number(model.get("_max_height")) || undefined;
  const viewer = await mount(host, bytesOf(model.get("_payload")), {
    idPrefix: prefix, selection: patchOf((k) => model.get(k)), queryKey: bytesOf(model.get("_query_key")),
    maxHeight });
  // While the traits are written one by one, their change events are ours: read then, the traits would be half
  // old and move the selection back.
  let writing = false;
  const toModel = (state) => {
    let moved = false;
    writing = true;
    try {
      for (const [key, value] of Object.entries(traitsOf(state))) {
        if (model.get(key) !== value) { model.set(key, value); moved = true; }
      }
    } finally {
      writing = false;
    }
    if (moved) model.save_changes();
  };
  const unsubscribe = viewer.selection.subscribe((state, changed) => {
    if (SYNCED.some((key) => changed.has(key))) toModel(state);
  });
  const fromModel = () => { if (!writing) viewer.selection.set(patchOf((k) => model.get(k))); };
  for (const key of SYNCED) model.on(`change:${key}`, fromModel);
  toModel(viewer.selection.get()); // the head the views opened on (the traits said none), or a value constrained
  return () => {
    for (const key of SYNCED) model.off(`change:${key}`, fromModel);
    unsubscribe();
    viewer.destroy();
  };
}
