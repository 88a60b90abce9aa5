// The keyboard on a view's picture (the shell wires it; the All heads view has its own, view-overview.mjs): pure, so
// that node --test checks every key.
//
//   ↑ ↓            move the keyboard's cursor over the tokens (the row it is on is highlighted as a hover is)
//   Enter, space   keep the cursor's token (what a click does)      Esc   clear the kept token
//   ← →            previous / next head      Shift + ↑ ↓   previous / next layer

/**
 * What a key does: { cursor } (a row index to highlight), { keep: true } (the cursor's row clicked), { patch } (a
 * selection change), or null (not ours: the browser keeps it). rows: how many rows the picture has (0: no token
 * keys, as in the query/key view, whose token is picked in its list).
 */
export function pictureKey(event, state, payload, cursor, rows) {
  if (event.altKey || event.ctrlKey || event.metaKey) return null;
  const { key, shiftKey } = event;
  if (shiftKey && (key === "ArrowUp" || key === "ArrowDown")) {
    const layer = Math.min(payload.layers - 1, Math.max(0, state.layer + (key === "ArrowUp" ? -1 : 1)));
    return layer === state.layer ? { patch: {} } : { patch: { layer } };
  }
  if (key === "ArrowLeft" || key === "ArrowRight") {
    const from = state.head === "all" ? (key === "ArrowLeft" ? payload.heads : -1) : state.head;
    const head = Math.min(payload.heads - 1, Math.max(0, from + (key === "ArrowLeft" ? -1 : 1)));
    return { patch: { head } };
  }
  if (!rows) return null;
  if (key === "ArrowUp" || key === "ArrowDown") {
    const start = cursor ?? (key === "ArrowDown" ? -1 : rows);
    return { cursor: Math.min(rows - 1, Math.max(0, start + (key === "ArrowUp" ? -1 : 1))) };
  }
  if ((key === "Enter" || key === " ") && cursor !== null && cursor !== undefined) return { keep: true };
  if (key === "Escape" && state.token !== null) return { patch: { token: null } };
  return null;
}
