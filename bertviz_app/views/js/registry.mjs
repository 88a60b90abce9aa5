// The views, one line each, in the order of their tabs: the one list every host reads (main.mjs's tabs and panes,
// the permalink's tab=, the app's and the static page's links) and Python's page builder too (views/page.py reads
// the lines of VIEWS below, so keep each entry on one line in this form). Adding a view: its file (view-*.mjs,
// the functions view-shell.mjs describes), its import here and its line in VIEWS.
//   name    the selection's `view`, the ids (view-tab-<name>, view-pane-<name>) and the view file's NAME
//   url     the permalink's tab= and Python's view= (standalone_html, run.show)
//   label   the text of its tab
//   scope   what it draws: "head", one head's attention (a token's row and column in it); "query", one head's query
//           and keys for one token; "all", every head of every layer. Hosts read it, never a list of view names.

import * as lines from "./view-lines.mjs";
import * as matrix from "./view-matrix.mjs";
import * as overview from "./view-overview.mjs";
import * as qk from "./view-qk.mjs";

export const VIEWS = [
  { name: "lines", url: "lines", label: "Lines", scope: "head", module: lines },
  { name: "matrix", url: "matrix", label: "Matrix", scope: "head", module: matrix },
  { name: "overview", url: "overview", label: "All heads", scope: "all", module: overview },
  { name: "qk", url: "query_key", label: "Query \u00d7 key", scope: "query", module: qk },
];

/** The selection's names of the views, in tab order. */
export const VIEW_NAMES = checked(VIEWS).map((v) => v.name);

/** The registered view a link's tab= names: by its url name, or by its name (the static page wrote tab=qk before
 * both hosts shared one link writer); null for anything else. */
export function viewForTab(tab) {
  return VIEWS.find((v) => v.url === tab) || VIEWS.find((v) => v.name === tab) || null;
}

/** Whether view `name` draws one head's attention ("head" scope): where a token's strongest heads open. */
export function showsHead(name) {
  return viewNamed(name)?.scope === "head";
}

/** The view to open one head in: `name` itself when it draws one head (any scope but "all"), else the first that
 * draws a head's attention (Lines). */
export function viewForHead(name) {
  const view = viewNamed(name);
  return view && view.scope !== "all" ? view.name : VIEWS.find((v) => v.scope === "head").name;
}

/** The registered view of a selection's name, or null. */
export function viewNamed(name) {
  return VIEWS.find((v) => v.name === name) || null;
}

/** The list, refused at load when two entries share a name or url, or a line disagrees with its file's NAME. */
function checked(views) {
  const seen = new Set();
  for (const v of views) {
    if (v.module.NAME !== v.name) throw new Error(`registry: view ${v.name} is called ${v.module.NAME} in its file`);
    for (const id of new Set([`name ${v.name}`, `url ${v.url}`])) {
      if (seen.has(id)) throw new Error(`registry: two views have the ${id}`);
      seen.add(id);
    }
  }
  return views;
}
