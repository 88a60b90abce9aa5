// The timeline slider over the attention views: a host hands it every snapshot of one input (timeline.mjs describes
// the data) with the payloads of one page, and moving the slider, playing or clicking the picture of roles swaps the
// decoded payload under the same views (main.mjs's mount, the one drawing path), keeping the selection. No request
// while moving within the pages held (timeline.mjs's pageStore); `loadPage(number)` is asked for another page when
// the slider reaches it.
//
//   const player = mountTimeline(container, data, { mount, idPrefix, selection, loadPage });
//   player.show(index), .play(), .pause(), .update(data) (a growing timeline: more snapshots), .selection (the
//   views' selection now), .ready() (the step asked for is drawn), .destroy()
//
// Ids (prefixed): timeline (the bar), timeline-step (the slider), timeline-play, timeline-at (step and loss),
// timeline-prediction, timeline-roles (the picture's canvas), timeline-heads (heads with a clear role), and the
// views' own under timeline-views.

import { decodePayload } from "./decode.mjs";
import { el } from "./dom.mjs";
import { t } from "./i18n.mjs";
import { roleColors } from "./palette.mjs";
import { CLEAR_ROLES, PLAY_MS, ROLE_COLORS, indexAfterGrowing, inputText, nextIndex, pageStore, paintRoles,
  predictionLines, roleCounts, rolesHit, rolesLayout, stepText } from "./timeline.mjs";

export const NO_QUERY_KEY = "A training snapshot keeps every head's attention, not its query and key vectors, so "
  + "this view has nothing to show on the timeline. Pick the model above and analyze a sentence to see how its "
  + "attention is computed.";
const ROLES_SIZE = { width: 260, maxHeight: 150 };

/** The bar's elements (slider, play, texts, the picture of roles and its key) inside a new wrapper. */
function buildBar(id, { onSlide, onPlay, onPicture }) {
  const slider = el("input", { type: "range", id: id("timeline-step"), min: "0", max: "0", step: "1",
    "aria-label": t("Training step"), oninput: () => onSlide(Number(slider.value)) });
  const play = el("button", { type: "button", id: id("timeline-play"), class: "bv-toggle", onclick: onPlay },
    t("Play"));
  const at = el("output", { id: id("timeline-at"), class: "bv-timeline-at" });
  const prediction = el("div", { id: id("timeline-prediction"), class: "bv-timeline-prediction",
    "aria-live": "polite" });
  const canvas = el("canvas", { id: id("timeline-roles"), class: "bv-timeline-roles",
    title: t("Each head's role at each snapshot (one column per snapshot, one row per head): click to go there"),
    onclick: (event) => onPicture(event, canvas) });
  const heads = el("p", { id: id("timeline-heads"), class: "bv-timeline-heads" });
  const key = el("p", { class: "bv-timeline-key" }, ...Object.entries(ROLE_COLORS).map(([role, color]) =>
    el("span", {}, el("i", { style: `background:${color}` }), roleName(role))));
  const title = el("p", { class: "bv-timeline-input" });
  const bar = el("div", { class: "bv-timeline", id: id("timeline") },
    el("div", { class: "bv-timeline-main" }, title, el("div", { class: "bv-timeline-row" }, play, slider, at),
      prediction),
    el("div", { class: "bv-timeline-side" }, canvas, heads, key));
  return { bar, slider, play, at, prediction, canvas, heads, title, key };
}

/** A head's role in the page's language; [CLS] and [SEP] are tokens. */
function roleName(role) {
  return role.startsWith("[") ? role : t(role);
}

export function mountTimeline(container, data, { mount, idPrefix = "", selection = {}, options = {}, loadPage = null,
  timers = { set: (f, ms) => setTimeout(f, ms), clear: (t) => clearTimeout(t) } } = {}) {
  const id = (name) => `${idPrefix}${name}`;
  let timeline = data;
  let index = data.steps.length - 1; // the trained model, or the newest snapshot of a training under way
  let playing = null; // the timer of the next step while playing
  let picture = null;
  const ui = buildBar(id, { onSlide: (i) => { pause(); show(i); }, onPlay: () => (playing ? pause() : play()),
    onPicture });
  const views = el("div", { class: "bv-timeline-views", id: id("timeline-views") });
  const steps = stepViews(views, { mount, idPrefix, selection, options, loadPage, onMounted: (viewer) =>
    viewer.selection.subscribe(() => paintPicture()) });
  steps.pages(data);
  // a views root of its own, for the views' CSS; the views' root mounts inside it
  const wrapper = el("div", { class: "bv-root bv-timeline-host" }, ui.bar, views);
  container.replaceChildren(wrapper);

  function onPicture(event, canvas) {
    const box = canvas.getBoundingClientRect();
    const hit = picture && rolesHit(picture, (event.clientX - box.left) * (picture.width / box.width),
      (event.clientY - box.top) * (picture.height / box.height));
    if (!hit) return;
    pause();
    steps.viewer()?.selection.set({ layer: hit.layer, head: hit.head });
    show(hit.index);
  }

  function paintPicture() {
    const ctx = ui.canvas.getContext("2d");
    const dpr = window.devicePixelRatio || 1;
    ui.canvas.width = Math.ceil(picture.width * dpr);
    ui.canvas.height = Math.ceil(picture.height * dpr);
    ui.canvas.style.width = `${picture.width}px`;
    ui.canvas.style.height = `${picture.height}px`;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const s = steps.viewer()?.selection.get() || {};
    paintRoles(ctx, picture, { index, layer: s.layer ?? null, head: s.head ?? null });
  }

  /** The bar at snapshot `index`: slider, step and loss, predictions, the picture's frame, the heads' roles. */
  function syncBar() {
    const snapshot = timeline.snapshots[index];
    ui.slider.max = String(Math.max(0, timeline.steps.length - 1));
    ui.slider.value = String(index);
    ui.title.textContent = `${inputText(timeline.input)} \u00b7 ${t("{n} snapshots", { n: timeline.steps.length })}`;
    ui.at.textContent = snapshot ? stepText(snapshot, timeline.total_steps) : t("no snapshot yet");
    ui.prediction.replaceChildren(...(snapshot ? predictionLines(snapshot.item, timeline.input) : [])
      .map((line) => el("div", {}, line)));
    if (snapshot) {
      const { counts, clear, heads } = roleCounts(snapshot.roles);
      const named = CLEAR_ROLES.filter((r) => counts[r]).map((r) => `${roleName(r)} ${counts[r]}`).join(", ");
      ui.heads.textContent = t("{clear} of {heads} heads with a clear role", { clear, heads })
        + (named ? ` (${named})` : "");
    }
    const roles = roleColors(ui.bar.ownerDocument, ROLE_COLORS);
    picture = rolesLayout(timeline.snapshots, { ...ROLES_SIZE, roles });
    ui.key.querySelectorAll("i").forEach((swatch, k) => { swatch.style.background = Object.values(roles)[k]; });
    paintPicture();
    ui.bar.dataset.step = snapshot ? String(snapshot.step) : "";
  }

  function show(i) {
    if (!timeline.steps.length) return steps.ready();
    index = Math.max(0, Math.min(timeline.steps.length - 1, i));
    syncBar();
    return steps.draw(timeline, index);
  }

  function play() {
    if (index >= timeline.steps.length - 1) show(0);
    ui.play.textContent = t("Pause");
    ui.play.setAttribute("aria-pressed", "true");
    const tick = () => {
      playing = timers.set(() => steps.ready().then(() => {
        if (!playing) return;
        const next = nextIndex(index, timeline.steps.length);
        if (next === null) { pause(); return; }
        show(next);
        tick();
      }), PLAY_MS);
    };
    tick();
  }

  function pause() {
    if (playing) timers.clear(playing);
    playing = null;
    ui.play.textContent = t("Play");
    ui.play.setAttribute("aria-pressed", "false");
  }

  show(index);
  steps.ready().then(() => steps.decodeHeld(timeline)); // in the background, so that playing never waits
  return {
    get selection() { return steps.viewer()?.selection || null; },
    get payload() { return steps.viewer()?.payload || null; },
    get index() { return index; },
    show, play, pause,
    ready: () => steps.ready(),
    update(next) {
      const i = indexAfterGrowing(timeline.steps, index, next.steps);
      timeline = next;
      steps.pages(next);
      return show(i);
    },
    destroy() { pause(); steps.destroy(); wrapper.remove(); },
  };
}

/**
 * The views of one step at a time in `container`: each step's payload decoded once, the latest step asked for
 * mounted (one mount at a time; steps asked for meanwhile are skipped), the selection carried from step to step.
 */
function stepViews(container, { mount, idPrefix, selection, options, loadPage, onMounted }) {
  let viewer = null;
  let shown = null; // the step the views show
  let wanted = null;
  let drawing = Promise.resolve();
  let store = null;
  const decoded = new Map(); // step -> Promise of its decoded payload, for the pages held
  const decodedAt = (timeline, i) => {
    const step = timeline.steps[i];
    if (!decoded.has(step)) {
      const done = store.payload(timeline.steps, i).then(decodePayload);
      done.catch(() => decoded.delete(step)); // asked again next time
      decoded.set(step, done);
    }
    return decoded.get(step);
  };
  async function drawWanted() {
    while (wanted !== null) {
      const [timeline, i] = wanted;
      wanted = null;
      const payload = await decodedAt(timeline, i);
      // the same input's next step: its numbers in place, so the views keep their DOM (a click or a hover under
      // way while playing is not lost); a payload of another shape is mounted afresh with the selection
      if (!viewer || !viewer.setPayload({ ...payload })) {
        const state = viewer ? viewer.selection.get() : selection;
        const next = await mount(container, { ...payload }, { ...options, showTitle: false, idPrefix,
          selection: state, queryKeyNote: t(NO_QUERY_KEY) });
        viewer?.destroy();
        viewer = next;
        onMounted(viewer);
      }
      shown = timeline.steps[i];
      container.dataset.step = String(shown);
    }
  }
  return {
    viewer: () => viewer,
    ready: () => drawing,
    draw(timeline, i) {
      if (timeline.steps[i] !== shown) {
        wanted = [timeline, i];
        drawing = drawing.then(drawWanted, drawWanted);
      }
      return drawing;
    },
    /** The payloads of a new (or grown) timeline's data: its window joins the pages held. */
    pages(timeline) {
      if (store && store.pageSize === Math.max(1, timeline.page_size || 1)) {
        if (timeline.window) store.add(timeline.window);
        return;
      }
      decoded.clear();
      store = pageStore(timeline.window, timeline.page_size, loadPage,
        { onEvict: (gone) => gone.forEach((step) => decoded.delete(step)) });
    },
    decodeHeld: (timeline) => timeline.steps.reduce((p, _, i) => (store.has(timeline.steps, i)
      ? p.then(() => decodedAt(timeline, i)) : p), Promise.resolve()).catch(() => {}),
    destroy() { viewer?.destroy(); },
  };
}
