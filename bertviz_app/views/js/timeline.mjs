// A training timeline in the views: pure functions of the snapshots a host sends (bertviz_app.timeline's
// Timeline.views_data: steps, and each snapshot's loss, roles and predictions; the app's TimelinePages adds the
// payloads a page at a time). The slider and its player are timeline-bar.mjs; these are what it shows and where, so
// that node --test checks them.
//
// data = { kind, model, total_steps, input: { text, text_pair, answers, gold }, labels, steps: [S],
//          snapshots: [S { step, loss, loss_mean, lr, roles: (L, h) labels,
//          item: { tokens, masks: [{ position, top: [[token, p] x5], answer }], is_next, prediction } }],
//          page_size: snapshots a page, window: { page, steps, payloads: [base64] } (the page it opens on) }

import { HEADS } from "./heads.mjs";
import { t } from "./i18n.mjs";

// The roles' colors, in the legend's order, and the roles that put over half of a head's attention on one place: the
// heads' vocabulary (bertviz_app/heads.py), so that the notebook's picture and this one agree.
export const ROLE_COLORS = HEADS.roleColors;
export const CLEAR_ROLES = HEADS.clearRoles;
export const PLAY_MS = 700; // one snapshot on screen while playing

/** 0.1234 -> "12%", 0.0004 -> "0.04%": small probabilities keep a significant digit. */
export function percent(p) {
  if (p === null || p === undefined || !Number.isFinite(p)) return "?";
  const v = p * 100;
  return `${v >= 10 ? v.toFixed(0) : v >= 1 ? Number(v.toFixed(1)) : Number(v.toPrecision(1))}%`;
}

/** "step 120 of 600 · loss 5.21" for snapshot `index` of `count`. */
export function stepText(snapshot, totalSteps) {
  const loss = snapshot.loss_mean ?? snapshot.loss;
  return [totalSteps ? t("step {step} of {total}", { step: snapshot.step, total: totalSteps })
    : t("step {step}", { step: snapshot.step }),
  loss === null || loss === undefined ? t("before training") : t("loss {loss}", { loss: loss.toFixed(3) })]
    .join(" \u00b7 ");
}

/**
 * What the model predicts for the input at one snapshot, one line each: every [MASK]'s top five (and the watched
 * word's probability when it is not among them), P(IsNext) of a pair, a fine-tuned head's answer.
 */
export function predictionLines(item, input = {}) {
  const lines = [];
  const answers = input.answers || [];
  (item.masks || []).forEach((mask, k) => {
    const top = mask.top.map(([token, p]) => `${token} ${percent(p)}`).join(", ");
    const watched = answers[k];
    const seen = watched && mask.top.some(([token]) => token === watched);
    const extra = watched && !seen && mask.answer !== null && mask.answer !== undefined
      ? ` (${watched}: ${percent(mask.answer)})` : "";
    lines.push(`[MASK]${(item.masks.length > 1) ? ` ${k + 1}` : ""} \u2192 ${top}${extra}`);
  });
  if (item.is_next !== undefined && item.is_next !== null) {
    lines.push(t("P(B follows A) {p}", { p: percent(item.is_next) }));
  }
  const p = item.prediction;
  if (p && p.probabilities) {
    const best = Object.entries(p.probabilities).sort((a, b) => b[1] - a[1]);
    lines.push(t("predicts {best}", { best: best.slice(0, 3).map(([name, v]) => `${name} ${percent(v)}`).join(", ") })
      + (input.gold ? ` ${t("(gold: {gold})", { gold: input.gold })}` : ""));
  } else if (p && p.answer !== undefined) {
    lines.push(t("answer \u201c{answer}\u201d (start {start}, end {end})", { answer: p.answer,
      start: percent(p.start_probability), end: percent(p.end_probability) }));
  } else if (p && p.words) {
    lines.push(t("tags {tags}", { tags: p.words.map((w) => `${w.word}/${w.tag}`).join(" ") }));
  }
  return lines;
}

/** { role: heads } at one snapshot, and how many of them have a clear role. */
export function roleCounts(roles) {
  const counts = {};
  let clear = 0;
  for (const row of roles) {
    for (const role of row) {
      counts[role] = (counts[role] || 0) + 1;
      if (CLEAR_ROLES.includes(role)) clear += 1;
    }
  }
  return { counts, clear, heads: roles.reduce((n, row) => n + row.length, 0) };
}

/**
 * Where the picture of roles over steps puts its cells: one column per snapshot, one row per head (layer 0 head 0
 * on top), each cell its role's color. size = { width, maxHeight }: cells at least 2 px, at most 14 px tall.
 */
export function rolesLayout(snapshots, size = {}) {
  const S = snapshots.length;
  const L = S ? snapshots[0].roles.length : 0;
  const H = L ? snapshots[0].roles[0].length : 0;
  const rows = L * H;
  const left = 18; // the layer numbers
  const cellW = S ? Math.max(1, ((size.width || 240) - left) / S) : 0;
  const cellH = rows ? Math.max(2, Math.min(14, Math.floor((size.maxHeight || 150) / rows))) : 0;
  const roles = size.roles || ROLE_COLORS; // palette.mjs: the colour-blind palette's, when the page has it on
  const colors = snapshots.map((s) => s.roles.flat().map((role) => roles[role] || "#000000"));
  return { S, L, H, rows, left, cellW, cellH, width: left + cellW * S, height: cellH * rows, colors };
}

/** The snapshot and head under a point of the picture, or null. */
export function rolesHit(layout, x, y) {
  if (x < layout.left || y < 0 || x >= layout.width || y >= layout.height) return null;
  const index = Math.min(layout.S - 1, Math.floor((x - layout.left) / layout.cellW));
  const row = Math.min(layout.rows - 1, Math.floor(y / layout.cellH));
  return { index, layer: Math.floor(row / layout.H), head: row % layout.H };
}

/** Paint the picture: the cells, the layer numbers, the snapshot on screen framed, the selected head's row marked. */
export function paintRoles(ctx, layout, { index = -1, layer = null, head = null } = {}) {
  const { left, cellW, cellH } = layout;
  ctx.clearRect(0, 0, layout.width, layout.height);
  layout.colors.forEach((column, s) => column.forEach((color, r) => {
    ctx.fillStyle = color;
    ctx.fillRect(left + s * cellW, r * cellH, Math.ceil(cellW), cellH);
  }));
  ctx.fillStyle = "#444";
  ctx.font = "10px sans-serif";
  for (let l = 0; l < layout.L; l++) {
    if (layout.H * cellH >= 10) ctx.fillText(String(l), 2, l * layout.H * cellH + 10);
  }
  if (layer !== null && head !== null && head !== "all") {
    ctx.strokeStyle = "#000";
    ctx.lineWidth = 1;
    ctx.strokeRect(left + 0.5, (layer * layout.H + head) * cellH + 0.5, layout.width - left - 1, cellH - 1);
  }
  if (index >= 0) {
    ctx.strokeStyle = "#000";
    ctx.lineWidth = 2;
    ctx.strokeRect(left + index * cellW + 1, 1, Math.max(cellW - 2, 1), layout.height - 2);
  }
}

/** The snapshot after `index` while playing, or null at the last one. */
export function nextIndex(index, count) {
  return index + 1 < count ? index + 1 : null;
}

/**
 * Where the slider stands when the timeline grows (a training under way adds snapshots): on the newest one if it
 * stood on the last (following the training), else on the same step.
 */
export function indexAfterGrowing(oldSteps, index, newSteps) {
  if (!newSteps.length) return -1;
  if (index < 0 || index >= oldSteps.length - 1) return newSteps.length - 1;
  const at = newSteps.indexOf(oldSteps[index]);
  return at >= 0 ? at : Math.min(index, newSteps.length - 1);
}

/** The input as one line: "A | B". */
export function inputText(input = {}) {
  return input.text_pair ? `${input.text} | ${input.text_pair}` : input.text || "";
}

// Pages of payloads the slider keeps at once: the one on screen and its neighbours, so that going back and forth
// across a page's edge asks nothing, and the page's memory stays a few pages, not the whole training.
export const KEEP_PAGES = 3;

/**
 * The payloads of a timeline by page: `window` (the page a host sent with the data) at first, the others from
 * `loadPage(number)` -> Promise of { page, steps, payloads } when a snapshot of theirs is asked for (once, however
 * often it is asked meanwhile). At most `keep` pages are held, the least recently used goes first and `onEvict`
 * hears its steps. payload(steps, i) -> Promise of snapshot i's base64 payload; has(steps, i): held now; add(page): a
 page that came another way (a grown timeline's window).
 */
export function pageStore(window, pageSize, loadPage, { keep = KEEP_PAGES, onEvict = () => {} } = {}) {
  const pages = new Map(); // page number -> { steps, payloads }, least recently used first
  const pending = new Map(); // page number -> Promise of it
  const size = Math.max(1, pageSize || 1);
  function add(page) {
    pages.delete(page.page);
    pages.set(page.page, page);
    while (pages.size > keep) {
      const [number, old] = pages.entries().next().value;
      pages.delete(number);
      onEvict(old.steps);
    }
    return page;
  }
  if (window && window.steps) add(window);
  const held = (steps, i) => {
    const page = pages.get(Math.floor(i / size));
    return page && page.steps.includes(steps[i]) ? page : null;
  };
  return {
    pageSize: size,
    add,
    has: (steps, i) => Boolean(held(steps, i)),
    async payload(steps, i) {
      const number = Math.floor(i / size);
      let page = held(steps, i);
      if (page) {
        add(page); // the most recently used now
      } else {
        if (!loadPage) throw new Error(`the payload of step ${steps[i]} is not in this page`);
        if (!pending.has(number)) {
          pending.set(number, loadPage(number).then(add).finally(() => pending.delete(number)));
        }
        page = await pending.get(number);
      }
      const k = page.steps.indexOf(steps[i]);
      if (k < 0) throw new Error(`the server has no snapshot at step ${steps[i]}`);
      return page.payloads[k];
    },
  };
}
