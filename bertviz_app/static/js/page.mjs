// The static page: BERT runs here, in onnxruntime-web's WebAssembly backend, and the views draw what it returns
// through the same mount as the app's (BertvizViews.mount, handed the decoded data views-data.mjs makes), with the
// same permalinks (BertvizViews.permalink).
//
// data/manifest.js names the files. Served over http(s), the page fetches the model, the WebAssembly binary and its
// JavaScript glue as binary files (the browser keeps them in its cache; a host may send them compressed). Opened
// from file://, where a page may not fetch or import anything, only run classic scripts of its own folder, they
// arrive as base64 parts, data/<name>-NN.js, each calling bertvizStatic.part(name, index, base64).
//
// For scripts and tests: window.bertvizPage.analyze(a, b) -> {tokens, layers, heads, length, attention: Float32Array
// (L, h, T, T)}, .fillMask(text, k) -> per [MASK]: [{token, probability}, ...], .nextSentence(a, b) -> P(IsNext),
// .ready (a promise), .viewer (the mounted views).

import { attentionData, queryKeyData } from "./views-data.mjs";
import { createTokenizer } from "./wordpiece.mjs";
import { chooseLanguage, setLanguage, t, translateTree } from "../../views/js/i18n.mjs";

const PART_TIMEOUT_MS = 120000;
const MASK_SPELLING = /\[\s*mask\s*\]/gi;

function base64ToBytes(text) {
  if (typeof Uint8Array.fromBase64 === "function") return Uint8Array.fromBase64(text);
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** Load data/<name>-NN.js one after another; onBytes(received) after each. Resolves to the joined bytes. */
function loadParts(doc, name, spec, onBytes) {
  const out = new Uint8Array(spec.bytes);
  let at = 0;
  const received = {};
  window.bertvizStatic = window.bertvizStatic || {};
  window.bertvizStatic.part = (which, index, text) => { received[`${which}/${index}`] = text; };
  const one = (index) => new Promise((resolve, reject) => {
    const script = doc.createElement("script");
    script.src = `data/${name}-${String(index).padStart(2, "0")}.js`;
    const timer = setTimeout(() => reject(new Error(`${script.src} did not load`)), PART_TIMEOUT_MS);
    script.onload = () => {
      clearTimeout(timer);
      script.remove();
      const text = received[`${name}/${index}`];
      delete received[`${name}/${index}`];
      if (text === undefined) { reject(new Error(`${script.src} is not a part of ${name}`)); return; }
      const bytes = base64ToBytes(text);
      out.set(bytes, at);
      at += bytes.length;
      onBytes(bytes.length);
      resolve();
    };
    script.onerror = () => { clearTimeout(timer); reject(new Error(`${script.src} could not be read`)); };
    doc.head.append(script);
  });
  return (async () => {
    for (let i = 0; i < spec.parts; i++) await one(i);
    if (at !== spec.bytes) throw new Error(`${name}: ${at} bytes arrived, ${spec.bytes} expected`);
    return out;
  })();
}

/** Fetch spec.path (with its version in the address, so that no cache hands an earlier export's file) with
 * `fetchFn`; onBytes(received) as the body arrives (decoded: a host may send it gzip'ed). Resolves to its bytes. */
export async function fetchFile(spec, onBytes, fetchFn = globalThis.fetch) {
  const response = await fetchFn(`${spec.path}?v=${spec.version}`);
  if (!response.ok) throw new Error(`${spec.path}: the host answered ${response.status}`);
  const out = new Uint8Array(spec.bytes);
  let at = 0;
  const reader = response.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (at + value.length > spec.bytes) throw new Error(`${spec.path}: more than ${spec.bytes} bytes arrived`);
    out.set(value, at);
    at += value.length;
    onBytes(value.length);
  }
  if (at !== spec.bytes) throw new Error(`${spec.path}: ${at} bytes arrived, ${spec.bytes} expected`);
  return out;
}

/** The bytes of the manifest's file `name`: fetched over http(s), from the script parts where the page is opened
 * from the disk (`protocol` "file:") or a fetch fails (a host that refuses a file's type); onBytes as they
 * arrive, counted again from the parts after a failed fetch. load: { fetchFile, loadParts } (the page's own, or a
 * test's). */
export async function loadBytes(name, spec, protocol, onBytes, load) {
  if (protocol !== "file:" && spec.path) {
    let fetched = 0;
    try {
      return await load.fetchFile(spec, (n) => { fetched += n; onBytes(n); });
    } catch (error) {
      onBytes(-fetched);
      console.warn(`${error.message}; reading its script parts instead`);
    }
  }
  return load.loadParts(name, spec, onBytes);
}

const MB = (n) => `${(n / 1e6).toFixed(1)} MB`;

export function threadCount(params) {
  const asked = Number(params.get("threads"));
  if (!globalThis.crossOriginIsolated) return 1; // threads need SharedArrayBuffer, which needs isolation
  const cores = navigator.hardwareConcurrency || 1;
  return Number.isInteger(asked) && asked > 0 ? Math.min(asked, cores) : Math.min(4, cores);
}

/** The note under the progress bar while the parts arrive. */
export function loadingNote(loaded, total) {
  return t("Loading the model into this page: {loaded} of {total} (once per visit; nothing leaves your computer).",
    { loaded: MB(loaded), total: MB(total) });
}

/** The note once the model runs; int8 weights (export-static --weights int8) are said, since they move the
 * numbers. */
export function runningNote(name, total, threads, weights = "float16") {
  const values = { name, size: MB(total), threads };
  return (threads > 1 ? t("{name} runs in this page ({size} loaded, {threads} threads).", values)
    : t("{name} runs in this page ({size} loaded, 1 thread: this host does not allow more).", values))
    + (weights === "int8" ? ` ${t("Its weights are int8: attention differs from the model's by up to 0.13.")}` : "");
}

/** onnxruntime-web's session on the model: the glue, the WebAssembly binary and the model arrive (loadBytes:
 * fetched, or as parts from file://; each reported to onBytes), then the session starts with `threads`. */
async function startSession(doc, manifest, threads, onBytes, say) {
  const load = { fetchFile, loadParts: (name, spec, counted) => loadParts(doc, name, spec, counted) };
  const protocol = doc.defaultView.location.protocol;
  const bytes = (name) => loadBytes(name, manifest.files[name], protocol, onBytes, load);
  const glue = await bytes("glue");
  const wasm = await bytes("wasm");
  const onnx = await bytes("model");
  const values = { size: MB(onnx.length), threads };
  say(threads > 1 ? t("Starting the model ({size}, {threads} threads)…", values)
    : t("Starting the model ({size}, 1 thread)…", values));
  const ort = window.ort;
  ort.env.wasm.numThreads = threads;
  ort.env.wasm.proxy = false;
  ort.env.wasm.wasmBinary = wasm;
  // The glue is an ES module: from a blob URL, since file:// pages may not import files.
  ort.env.wasm.wasmPaths = { mjs: URL.createObjectURL(new Blob([glue], { type: "text/javascript" })) };
  return ort.InferenceSession.create(onnx, { executionProviders: ["wasm"], graphOptimizationLevel: "all" });
}

/** The graph's inputs for one encoding: ids, segments, the positions whose MLM logits it returns, and whether it
 * computes the model's score terms (onnx_export.py: only the query/key view asks). */
export function modelFeeds(Tensor, enc, positions, withTerms = false) {
  const T = enc.ids.length;
  const int64 = (values, dims) => new Tensor("int64", BigInt64Array.from(values, BigInt), dims);
  return { input_ids: int64(enc.ids, [1, T]), token_type_ids: int64(enc.segments, [1, T]),
    mlm_positions: int64(positions, [positions.length]),
    with_score_terms: new Tensor("bool", Uint8Array.of(withTerms ? 1 : 0), []) };
}

/** Whether the score terms of `length` tokens travel to the query/key view: at most model.scoreTermsMaxValues
 * values (layers x heads x terms x T^2), the cap of the server's blob (views.SCORE_TERMS_MAX_VALUES), so that
 * the page shows the columns the app shows. */
export function termsFit(model, length) {
  const n = (model.scoreTerms || []).length;
  return n > 0 && model.layers * model.heads * n * length * length <= model.scoreTermsMaxValues;
}

export function checkText(a) {
  if (typeof a !== "string" || !a.trim()) throw new Error(t("the text is empty; type a sentence to analyze"));
}

/** The text with every spelling of the mask written [MASK] (masked_lm.normalize_mask), and where its masks are. */
export function maskedInput(text, tokenize, maxMasks = Infinity) {
  const normalized = text.replace(MASK_SPELLING, "[MASK]");
  const positions = tokenize(normalized).flatMap((t, i) => (t === "[MASK]" ? [i] : []));
  if (!positions.length) throw new Error(t("put [MASK] where a word should be predicted"));
  if (positions.length > maxMasks) { // the server's limit too (limits.MAX_MASKS), in the server's words
    throw new Error(t("{n} masks is too many; use at most {most}.", { n: positions.length, most: maxMasks }));
  }
  return { text: normalized, positions };
}

/** The k likeliest tokens at each mask, [{token, probability}, ...] per row of logits (M, V); token(id) names one. */
export function topPredictions(logits, V, k, token) {
  return Array.from({ length: logits.length / V }, (_, m) => {
    const row = logits.subarray(m * V, (m + 1) * V);
    let max = -Infinity;
    for (const v of row) max = Math.max(max, v);
    let sum = 0;
    for (const v of row) sum += Math.exp(v - max);
    const order = Array.from(row.keys()).sort((x, y) => row[y] - row[x]).slice(0, k);
    return order.map((id) => ({ token: token(id), probability: Math.exp(row[id] - max) / sum }));
  });
}

/** P(IsNext) from the NSP logits: index 0 is IsNext, as in BERT's pretraining. */
export function isNextProbability([isNext, notNext]) {
  return 1 / (1 + Math.exp(notNext - isNext));
}

/** What analyze() gives: the encoding's tokens and the graph's float32 outputs. */
export function analysisOf(enc, out, model) {
  return { tokens: enc.tokens, segments: enc.segments, special: enc.special, layers: model.layers,
    heads: model.heads, length: enc.tokens.length, attention: out.attentions.data, queries: out.queries.data,
    keys: out.keys.data, rollout: out.rollout.data, headSize: model.headSize, truncated: enc.truncated,
    nsp: Array.from(out.nsp_logits.data) };
}

/** The views' data of an analysis of (a, b) (views-data.mjs: what the views' decoder would give), its title the
 * input shortened as the app's (views.input_title) and its key the tokens and segments. */
export function viewsDataOf(r, a, b, modelName) {
  const text = b ? `${a} | ${b}` : a;
  return attentionData({ tokens: r.tokens, segments: r.segments, special: r.special, attention: r.attention,
    rollout: r.rollout, layers: r.layers, heads: r.heads, model: modelName, text,
    title: text.length > 100 ? `${text.slice(0, 99)}\u2026` : text,
    key: `${r.tokens.join("\u0001")}#${r.segments.join("")}` });
}

/** The selection a new input opens on: only what is known (without a layer and a head the views pick one). */
export function openingSelection(keep) {
  return Object.fromEntries(["layer", "head", "token", "view"].filter((k) => keep[k] !== undefined)
    .map((k) => [k, keep[k]]));
}

/** The page's address for `input` ({a, b, model}) at `state`, written by the views' permalink module (links): the
 * same address the app writes, with the parameters of `href` that are not a link's kept; `at` ({ lesson, step })
 * while a lesson plays. */
export function pageLink(links, href, input, state, at = null) {
  return `${href.split(/[?#]/)[0]}?${links.writeLink(new URL(href).search, input, state, at)}`;
}

/** A lesson of this page's folder (lessons/<name>.js, which export-static writes: a classic script, since file://
 * pages may not fetch), as the value its file held; a sentence when there is none of that name. */
export function loadLesson(doc, name, validName) {
  return new Promise((resolve, reject) => {
    const none = () => reject(new Error(t("This page's folder holds no lesson named \"{name}\".", { name: String(name).slice(0, 80) })));
    if (!validName(name)) { none(); return; }
    const script = doc.createElement("script");
    script.src = `lessons/${name}.js`;
    script.onload = () => {
      script.remove();
      const value = window.bertvizLessons?.[name];
      if (value) resolve(value); else none();
    };
    script.onerror = () => { script.remove(); none(); };
    doc.head.append(script);
  });
}

/**
 * Plays the lesson `name` of the folder from step `step` (from 1, as a link says) in the bar above the views: each
 * step fills the boxes, analyzes when its input is not the one on screen, then selects. ctx: { doc, api, views
 * (BertvizViews), onScreen() ({ viewer, a, b } or null), at (the link's { lesson, step }, kept current),
 * updateLink() }. A lesson that cannot be read or a step past its end is one sentence in the input's error line.
 */
export async function openLesson(ctx, name, step) {
  const { doc, api, views } = ctx;
  const $ = (id) => doc.getElementById(id);
  const lesson = views.lesson.parseLesson(await loadLesson(doc, name, views.lesson.validName));
  const player = views.playLesson($("lesson-place"), lesson, {
    async apply(s) {
      $("text-a").value = s.a;
      $("text-b").value = s.b;
      const [a, b] = inputOf(doc);
      const shown = ctx.onScreen();
      if (!shown || shown.a !== a || shown.b !== b) await api.show(a, b, s.selection);
      else shown.viewer.selection.set({ token: null, ...s.selection });
      const r = api.last;
      return { layers: r.layers, heads: r.heads, length: r.length, payload: ctx.onScreen()?.viewer.payload };
    },
    views: () => $("views"),
    moved(index) { Object.assign(ctx.at, { lesson: name, step: index + 1 }); ctx.updateLink(); },
    close() { ctx.at.lesson = null; ctx.updateLink(); },
  });
  const where = views.lesson.stepOfLink(step, lesson.steps.length);
  $("input-error").textContent = where.error || "";
  await player.go(where.index);
  return player;
}

/**
 * The page's functions (window.bertvizPage): analyze, fillMask, nextSentence and show, over one session. ctx: {
 * ready (the session's promise), tokenizer, model (the manifest's), mount (BertvizViews.mount), container, shown
 * (after each show: ({viewer, a, b, r}))}.
 */
function createApi(ctx) {
  const { tokenizer, model } = ctx;
  let viewer = null;
  const run = async (a, b, positions = [0], withTerms = false, fetches = undefined) => {
    const session = await ctx.ready;
    const enc = tokenizer.encode(a, b, model.maxTokens);
    const out = await session.run(modelFeeds(window.ort.Tensor, enc, positions, withTerms), fetches);
    return { enc, out };
  };
  // The model's score terms of (a, b) for the query/key view, or null past the cap: a pass of their own.
  const scoreTerms = async (a, b, r) => {
    if (!termsFit(model, r.length)) return null;
    const { out } = await run(a, b, [0], true, ["score_terms"]);
    return { names: model.scoreTerms, values: out.score_terms.data, scale: model.scoreScale };
  };
  const api = {
    ready: ctx.ready, tokenizer, timings: ctx.timings,
    get viewer() { return viewer; },
    async analyze(a, b = null) {
      checkText(a);
      const { enc, out } = await run(a, b);
      return analysisOf(enc, out, model);
    },
    async fillMask(text, k = 5) {
      checkText(text);
      const masked = maskedInput(text, (t) => tokenizer.encode(t, null, model.maxTokens).tokens, model.maxMasks);
      const { out } = await run(masked.text, null, masked.positions);
      return topPredictions(out.mlm_logits.data, out.mlm_logits.dims[1], k, tokenizer.token);
    },
    async nextSentence(a, b) {
      checkText(a);
      checkText(b);
      const { out } = await run(a, b);
      return isNextProbability(out.nsp_logits.data);
    },
    async show(a, b = null, selection = null, fromLink = false) {
      const t0 = performance.now();
      const r = await api.analyze(a, b);
      const viewsData = viewsDataOf(r, a, b, model.name);
      // Made when the query/key view first opens (0.3 s at 512 tokens that most visits never need), with the
      // model's score terms from a pass that asks for them (docs/ARCHITECTURE.md, "Measured").
      const loadQueryKey = async () => queryKeyData(r.queries, r.keys, r.layers, r.heads, r.length, r.headSize,
        viewsData.key, await scoreTerms(a, b, r));
      const keep = selection || (viewer ? viewer.selection.get() : {});
      viewer?.destroy();
      viewer = await ctx.mount(ctx.container, viewsData, { loadQueryKey, showTitle: false,
        selection: openingSelection(keep), fromLink });
      ctx.timings.showSeconds = (performance.now() - t0) / 1000;
      api.last = r; // what is on screen, for scripts and tests
      ctx.shown({ viewer, a, b, r });
      return r;
    },
  };
  return api;
}

/** The page's buttons and boxes, wired to the api; link() the address of what is on screen, or null. */
function wireControls(doc, api, link) {
  const $ = (id) => doc.getElementById(id);
  const say = (where, text) => { $(where).textContent = text; };
  const guarded = (where, fn) => async () => {
    say(where, "");
    try { await fn(); } catch (error) { say(where, error.message || String(error)); }
  };
  $("analyze").addEventListener("click", guarded("input-error", async () => {
    const [a, b] = inputOf(doc);
    checkText(a);
    await api.show(a, b);
  }));
  for (const id of ["text-a", "text-b"]) {
    $(id).addEventListener("keydown", (e) => { if (e.key === "Enter") $("analyze").click(); });
  }
  $("copy-link").addEventListener("click", guarded("input-error", async () => {
    const url = link();
    if (!url) throw new Error(t("analyze a sentence first; the link holds it"));
    $("link-out").value = url;
    $("link-out").hidden = false;
    try { await navigator.clipboard.writeText(url); } catch { $("link-out").select(); }
  }));
  $("presenter").addEventListener("click", () => {
    const on = doc.body.classList.toggle("bv-presenter");
    $("presenter").textContent = on ? t("Leave presenter mode") : t("Presenter mode");
    fitPresenter(doc);
  });
  $("fill").addEventListener("click", guarded("fill-out", async () => {
    const rows = await api.fillMask($("fill-text").value, 5);
    $("fill-out").replaceChildren(...rows.map((row, m) => {
      const item = doc.createElement("li");
      item.textContent = `[MASK] ${m + 1}: ` + row.map((p) => `${p.token} ${(100 * p.probability).toFixed(1)} %`)
        .join(", "); // text, never markup
      return item;
    }));
  }));
  $("nsp").addEventListener("click", guarded("nsp-out", async () => {
    const p = await api.nextSentence($("nsp-a").value, $("nsp-b").value);
    say("nsp-out", t("P(B follows A) = {p} %", { p: (100 * p).toFixed(1) }));
  }));
}

/**
 * Presenter mode gives the picture the screen, as the app's does: the views' controls fold to one row (the others
 * under "More options", open again on leaving where the screen is wide), and the views size themselves again to the
 * room this leaves (they listen to the window's resize).
 */
export function fitPresenter(doc) {
  const on = doc.body.classList.contains("bv-presenter");
  const wide = (doc.defaultView?.innerWidth ?? 0) >= 700; // main.mjs opens "More options" from 700 px
  doc.querySelectorAll("#views .bv-more").forEach((more) => { more.open = !on && wide; });
  doc.defaultView?.dispatchEvent(new Event("resize"));
}

/** The two boxes' sentences: B is null when its box is blank. */
function inputOf(doc) {
  const b = doc.getElementById("text-b").value;
  return [doc.getElementById("text-a").value, b.trim() ? b : null];
}

export function start(doc = document) {
  // the page's language: ?lang=, else the browser's; this script's strings and the views' (their own bundle)
  const lang = setLanguage(chooseLanguage(window.location.search, navigator.languages));
  window.BertvizViews.i18n.setLanguage(lang);
  doc.documentElement.lang = lang;
  translateTree(doc.documentElement);
  const manifest = window.bertvizManifest;
  if (lang !== "en") doc.title = t("BERT attention, in your browser: {name}", { name: manifest.model.name });
  const model = manifest.model;
  const links = window.BertvizViews.permalink;
  const $ = (id) => doc.getElementById(id);
  const threads = threadCount(new URLSearchParams(window.location.search));
  const total = manifest.files.model.bytes + manifest.files.wasm.bytes + manifest.files.glue.bytes;
  let loaded = 0;
  const progress = (n) => {
    loaded += n;
    $("load-progress").value = loaded / total;
    $("load-note").textContent = loadingNote(loaded, total);
  };
  progress(0);
  const timings = { loadSeconds: null, threads };
  const t0 = performance.now();
  const ready = startSession(doc, manifest, threads, progress, (text) => { $("load-note").textContent = text; })
    .then((session) => {
      timings.loadSeconds = (performance.now() - t0) / 1000;
      $("load-note").textContent = runningNote(model.name, total, threads, model.weights);
      $("load-progress").hidden = true;
      return session;
    });
  ready.catch((error) => {
    $("load-note").textContent = t("The model could not start in this browser: {why}", { why: error.message });
  });

  let onScreen = null; // { viewer, a, b } of the last show
  const at = { lesson: null, step: null }; // the lesson playing, for the link
  const link = () => (onScreen ? pageLink(links, window.location.href, { a: onScreen.a, b: onScreen.b,
    model: model.name }, onScreen.viewer.selection.get(), at.lesson ? at : null) : null);
  const updateLink = () => {
    if (!onScreen) return;
    try { window.history.replaceState(null, "", link()); } catch { /* some file:// hosts refuse: no harm */ }
  };
  const api = createApi({ ready, tokenizer: createTokenizer(manifest.tokenizer), model, timings,
    mount: window.BertvizViews.mount, container: $("views"),
    shown: ({ viewer, a, b, r }) => {
      onScreen = { viewer, a, b };
      if (doc.body.classList.contains("bv-presenter")) fitPresenter(doc); // views mounted afresh: fold them too
      viewer.selection.subscribe(updateLink);
      updateLink();
      $("truncated").textContent = r.truncated
        ? t("The input was longer than {most} tokens: {n} were left out.", { most: model.maxTokens, n: r.truncated })
        : "";
    } });
  wireControls(doc, api, link);

  const opened = links.readLink(window.location.search);
  if (opened.tooLong) {
    $("input-error").textContent = t("The link's sentence {which} is longer than {most} characters, the most a box "
      + "takes; it was left out.", { which: opened.tooLong.join(` ${t("and")} `).toUpperCase(),
      most: links.MAX_LINK_CHARS.toLocaleString("en") });
  } else if (opened.a !== null) { // a link holds the whole input: no B in it means a single sentence
    $("text-a").value = opened.a;
    $("text-b").value = opened.b ?? "";
  }
  const lessonCtx = { doc, api, views: window.BertvizViews, onScreen: () => onScreen, at, updateLink };
  const shelf = window.BertvizViews.lessonShelf;
  const cards = shelf.readCards(manifest.lessons); // the folder's lessons (export-static writes them)
  $("lesson-open").hidden = !cards.length;
  $("keys").addEventListener("click", () => window.BertvizViews.showKeys($("input-row"), doc));
  window.BertvizViews.theme.restoreTheme(doc, $("projector-theme"));
  $("projector-theme").addEventListener("click",
    () => window.BertvizViews.theme.toggleTheme(doc, $("projector-theme")));
  window.BertvizViews.palette.restorePalette(doc, $("colorblind-theme"));
  $("colorblind-theme").addEventListener("click",
    () => window.BertvizViews.palette.togglePalette(doc, $("colorblind-theme")));
  // the Lesson button shows the list (again: hides it); a lesson picked from it plays, and the list goes
  $("lesson-open").addEventListener("click", () => {
    const open = $("lesson-shelf");
    if (open) { open.remove(); return; }
    $("lesson-place").before(shelf.makeShelf(doc, cards, (name) => {
      $("lesson-shelf")?.remove();
      openLesson(lessonCtx, name, 1).catch((error) => { $("input-error").textContent = error.message || String(error); });
    }));
  });
  const first = opened.lesson !== undefined
    ? () => openLesson(lessonCtx, opened.lesson, opened.step).catch((error) => {
      $("input-error").textContent = error.message || String(error); // the page still shows its boxes' input
      return api.show(...inputOf(doc), opened.selection);
    })
    : () => api.show(...inputOf(doc), opened.selection, true);
  const firstShown = ready.then(first);
  firstShown.then(() => { timings.firstPictureSeconds = performance.now() / 1000; },
    (error) => { $("input-error").textContent = error.message || String(error); });
  // a first visit is offered the tour (lesson-tour.mjs): the folder's lesson 1, played after the first picture
  const tour = window.BertvizViews.lessonTour;
  if (cards.some((card) => card.name === tour.TOUR_LESSON)) {
    let storage = null;
    try { storage = window.localStorage; } catch { /* refused (a private window's setting): no offer */ }
    tour.offerTour(doc, { search: window.location.search, storage, start: () => firstShown.catch(() => null)
      .then(() => openLesson(lessonCtx, tour.TOUR_LESSON, 1))
      .catch((error) => { $("input-error").textContent = error.message || String(error); }) });
  }
  window.bertvizPage = api;
  return api;
}
