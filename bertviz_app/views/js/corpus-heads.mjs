// Heads over a corpus: the layer x head grid of the corpus's head summary (bertviz_app/corpus/browser.py
// `summary`), as pure functions around corpus-shell.mjs. Each tile: the head's role in words, the chosen statistic's
// mean over the corpus (its colour and number) and its spread (the bar along the tile's foot); with a second subset,
// the difference A - B instead (blue: more in A, red: more in B). Layers down, heads across, both from 0, as in
// the attention views' "All heads".

import { HEADS } from "./heads.mjs";
import { t } from "./i18n.mjs";

export const NAME = "corpus-heads";
// what a tile can show, in words (bertviz_app/heads.py CORPUS_STATISTICS; entropy as entropy_ratio)
export const STATISTICS = Object.fromEntries(Object.entries(HEADS.corpusStatistics).filter(([n]) => n !== "entropy"));
const LEFT = 64, NARROW_LEFT = 24, TOP = 22, GAP = 3; // a phone's grid: "L0" beside its rows, tiles from 16 px

/** A role in the page's language: the server names it in English, the catalogue's key ("previous token"; a linking
 * head's "links determiner -> its noun", by its relation's name). */
export function roleText(role) {
  if (!role) return "";
  const link = /^links (.+)$/.exec(role);
  return link ? t("links {relation}", { relation: t(link[1]) }) : t(role);
}

/** A role in a few characters for a tile ("links determiner -> its noun" -> "DET→N"). */
export function shortRole(role) {
  if (!role) return "";
  if (HEADS.shortRoles[role]) return HEADS.shortRoles[role];
  const link = /^links (\w+)/.exec(role);
  return link ? `${{ determiner: "DET", adjective: "ADJ", preposition: "ADP" }[link[1]] || link[1]}\u2192N` : role;
}

/** The largest value a statistic's colour reaches: shares and the entropy ratio are 0..1, distance its maximum. */
export function statisticMax(stat, values) {
  if (stat !== "distance") return 1;
  return Math.max(1e-9, ...values.filter((v) => v !== null && Number.isFinite(v)));
}

/** White to dark blue for 0..1; for a difference, red (-1) through white to blue (1). */
export function tileColor(t, diverging) {
  if (t === null || !Number.isFinite(t)) return "#f0f0f0";
  const mix = (a, b, f) => a.map((v, k) => Math.round(v + (b[k] - v) * f));
  const white = [255, 255, 255];
  const c = diverging ? (t >= 0 ? mix(white, [33, 102, 172], Math.min(1, t)) : mix(white, [178, 24, 43],
    Math.min(1, -t))) : mix([247, 251, 255], [8, 48, 107], Math.min(1, Math.max(0, t)));
  return `rgb(${c.join(",")})`;
}

/**
 * layout(data, state, size) -> tiles and labels.
 * data: { layers, heads, a: a subset's grid, b: a second one or null }
 * state: { statistic, layer, head (the chosen head, outlined) }
 * size: { width, maxHeight }
 */
export function layout(data, state, size) {
  const { layers, heads, a, b } = data;
  const stat = state.statistic in STATISTICS ? state.statistic : "entropy_ratio";
  const left = size.width < 520 ? NARROW_LEFT : LEFT;
  const tile = Math.max(16, Math.min(76, Math.floor((size.width - left - 4) / heads) - GAP,
    Math.floor(((size.maxHeight || 600) - TOP - 8) / layers) - GAP));
  const valuesA = a[stat], valuesB = b ? b[stat] : null;
  const max = statisticMax(stat, b ? [...valuesA, ...valuesB] : valuesA);
  const tiles = [];
  for (let l = 0; l < layers; l++) {
    for (let h = 0; h < heads; h++) {
      const i = l * heads + h;
      const va = valuesA[i], vb = valuesB ? valuesB[i] : null;
      const value = valuesB ? (va === null || vb === null ? null : va - vb) : va;
      const spread = a[`${stat}_spread`][i];
      tiles.push({ layer: l, head: h, x: left + h * (tile + GAP), y: TOP + l * (tile + GAP), value, a: va, b: vb,
        spread, role: a.role[i], color: tileColor(value === null ? null : value / max, Boolean(valuesB)),
        dark: value !== null && Math.abs(value / max) > 0.55 });
    }
  }
  const width = left + heads * (tile + GAP), height = TOP + layers * (tile + GAP);
  const chosen = Number.isInteger(state.layer) && Number.isInteger(state.head) ? { layer: state.layer,
    head: state.head } : null;
  return { width, height, tile, left, tiles, stat, max, diverging: Boolean(valuesB), chosen, heads, layers,
    geometry: { left, top: TOP, tile, pitch: tile + GAP }, // where tiles are, for automation
    drawn: `${a.subset}${b ? ` vs ${b.subset}` : ""}:${stat}`,
    caption: t("{statistic}, mean over {n} tokens", { statistic: t(STATISTICS[stat]),
      n: a.tokens.toLocaleString("en") })
      + (b ? t(" ({a}) minus {b} ({n} tokens)", { a: a.subset, b: b.subset, n: b.tokens.toLocaleString("en") })
        : ` (${a.subset})`)
      + t("; the bar at a tile's foot is the spread over tokens (its standard deviation). Click a head for its "
      + "profile, tag links and query/key map.") };
}

function formatValue(v, stat) {
  if (v === null || !Number.isFinite(v)) return "–";
  return stat === "distance" ? v.toFixed(1) : v.toFixed(2);
}

/** paint(ctx, layout, focus): tiles with their role, value and spread; the hovered and chosen heads outlined. */
export function paint(ctx, layout, focus) {
  const { tile } = layout;
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  ctx.fillStyle = "#444";
  ctx.textAlign = "center";
  for (let h = 0; h < layout.heads; h++) ctx.fillText(`${h}`, layout.left + h * (tile + GAP) + tile / 2, TOP / 2);
  ctx.textAlign = "right";
  const name = layout.left < LEFT ? "L" : `${t("layer")} `;
  for (let l = 0; l < layout.layers; l++) {
    ctx.fillText(`${name}${l}`, layout.left - 4, TOP + l * (tile + GAP) + tile / 2);
  }
  ctx.textAlign = "center";
  const roleFont = `${Math.max(9, Math.min(12, Math.floor(tile / 5)))}px system-ui, sans-serif`;
  for (const t of layout.tiles) {
    ctx.fillStyle = t.color;
    ctx.fillRect(t.x, t.y, tile, tile);
    ctx.fillStyle = t.dark ? "#fff" : "#222";
    if (tile >= 34) {
      ctx.font = roleFont;
      ctx.fillText(shortRole(t.role), t.x + tile / 2, t.y + tile * 0.34);
      ctx.fillText(formatValue(t.value, layout.stat), t.x + tile / 2, t.y + tile * 0.64);
    }
    if (t.spread !== null && Number.isFinite(t.spread)) {
      ctx.fillStyle = t.dark ? "rgba(255,255,255,0.85)" : "rgba(0,0,0,0.55)";
      ctx.fillRect(t.x + 2, t.y + tile - 4, Math.max(1, Math.min(1, t.spread / layout.max) * (tile - 4)), 2);
    }
  }
  const outline = (target, color, width) => {
    if (!target) return;
    ctx.strokeStyle = color;
    ctx.lineWidth = width;
    ctx.strokeRect(layout.left + target.head * (tile + GAP) - 1, TOP + target.layer * (tile + GAP) - 1, tile + 2, tile + 2);
  };
  outline(layout.chosen, "#d62728", 3);
  outline(focus.active, "#111", 2);
}

/** The head under (x, y), as { layer, head }, or null. */
export function hit(layout, x, y) {
  const pitch = layout.tile + GAP;
  const h = Math.floor((x - layout.left) / pitch), l = Math.floor((y - TOP) / pitch);
  if (h < 0 || l < 0 || h >= layout.heads || l >= layout.layers) return null;
  if ((x - layout.left) - h * pitch > layout.tile || (y - TOP) - l * pitch > layout.tile) return null;
  return { layer: l, head: h };
}

/** The keyboard's cursor over the tiles (corpus-shell.mjs): arrows move it, from the chosen head or layer 0 head 0. */
export function keyStep(layout, from, key) {
  const at = from ?? layout.chosen ?? null;
  if (!at) return { layer: 0, head: 0 };
  const step = { ArrowLeft: [0, -1], ArrowRight: [0, 1], ArrowUp: [-1, 0], ArrowDown: [1, 0] }[key];
  if (!step) return null;
  return { layer: Math.min(layout.layers - 1, Math.max(0, at.layer + step[0])),
    head: Math.min(layout.heads - 1, Math.max(0, at.head + step[1])) };
}

/** A tile in words (the tooltip). */
export function tooltip(layout, target) {
  const tile = layout.tiles[target.layer * layout.heads + target.head];
  const lines = [t("Layer {layer}, head {head}: ", { layer: tile.layer, head: tile.head }) + roleText(tile.role)];
  if (layout.diverging) {
    lines.push(t("{statistic}: {a} against {b} (difference {difference})", { statistic: t(STATISTICS[layout.stat]),
      a: formatValue(tile.a, layout.stat), b: formatValue(tile.b, layout.stat),
      difference: formatValue(tile.value, layout.stat) }));
  } else {
    lines.push(`${t(STATISTICS[layout.stat])}: ${formatValue(tile.value, layout.stat)} \u00b1 `
      + formatValue(tile.spread, layout.stat));
  }
  return lines;
}
