// The static page: BERT runs here, in onnxruntime-web's WebAssembly backend, and the views draw what it returns
// through the same mount as the app's (BertvizViews.mount, given a payload written in the page by payload.mjs).
//
// Everything the page reads is a classic script of its own folder (file:// allows nothing else: no fetch, no
// module import): data/manifest.js names the files, and the model, the WebAssembly binary and its JavaScript glue
// arrive as base64 parts, data/<name>-NN.js, each calling bertvizStatic.part(name, index, base64).
//
// For scripts and tests: window.bertvizPage.analyze(a, b) -> {tokens, layers, heads, length, attention: Float32Array
// (L, h, T, T)}, .fillMask(text, k) -> per [MASK]: [{token, probability}, ...], .nextSentence(a, b) -> P(IsNext),
// .ready (a promise), .viewer (the mounted views).

import { encodePayload, encodeQueryKey } from "./payload.mjs";
import { createTokenizer } from "./wordpiece.mjs";

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

const MB = (n) => `${(n / 1e6).toFixed(1)} MB`;

export function threadCount(params) {
  const asked = Number(params.get("threads"));
  if (!globalThis.crossOriginIsolated) return 1; // threads need SharedArrayBuffer, which needs isolation
  const cores = navigator.hardwareConcurrency || 1;
  return Number.isInteger(asked) && asked > 0 ? Math.min(asked, cores) : Math.min(4, cores);
}

/** What a permalink holds: input, layer, head, token and view (tab), read leniently (the views clamp). */
export function readLink(search) {
  const p = new URLSearchParams(search);
  const int = (name) => (p.has(name) && /^\d+$/.test(p.get(name)) ? Number(p.get(name)) : undefined);
  const selection = {};
  for (const name of ["layer", "token"]) if (int(name) !== undefined) selection[name] = int(name);
  if (p.get("head") === "all") selection.head = "all";
  else if (int("head") !== undefined) selection.head = int("head");
  if (["lines", "matrix", "overview", "qk"].includes(p.get("tab"))) selection.view = p.get("tab");
  return { a: p.get("a"), b: p.get("b"), selection };
}

export function writeLink(base, a, b, state) {
  const p = new URLSearchParams();
  p.set("a", a);
  if (b) p.set("b", b);
  p.set("layer", String(state.layer));
  p.set("head", String(state.head));
  if (state.token !== null && state.token !== undefined) p.set("token", String(state.token));
  p.set("tab", state.view);
  return `${base}?${p.toString()}`;
}

export function start(doc = document) {
  const manifest = window.bertvizManifest;
  const $ = (id) => doc.getElementById(id);
  const note = $("load-note");
  const bar = $("load-progress");
  const params = new URLSearchParams(window.location.search);
  const threads = threadCount(params);
  const link = readLink(window.location.search);
  const tokenizer = createTokenizer(manifest.tokenizer);
  const model = manifest.model;
  const total = manifest.files.model.bytes + manifest.files.wasm.bytes + manifest.files.glue.bytes;
  let loaded = 0;
  const progress = (n) => {
    loaded += n;
    bar.value = loaded / total;
    note.textContent = `Loading the model into this page: ${MB(loaded)} of ${MB(total)} (once per visit; `
      + `nothing leaves your computer).`;
  };
  progress(0);

  let session = null;
  let viewer = null;
  let current = null; // {a, b}
  const timings = { loadSeconds: null, threads };

  const ready = (async () => {
    const t0 = performance.now();
    const glue = await loadParts(doc, "glue", manifest.files.glue, progress);
    const wasm = await loadParts(doc, "wasm", manifest.files.wasm, progress);
    const onnx = await loadParts(doc, "model", manifest.files.model, progress);
    note.textContent = `Starting the model (${MB(onnx.length)}, ${threads} thread${threads > 1 ? "s" : ""})\u2026`;
    const ort = window.ort;
    ort.env.wasm.numThreads = threads;
    ort.env.wasm.proxy = false;
    ort.env.wasm.wasmBinary = wasm;
    // The glue is an ES module: from a blob URL, since file:// pages may not import files.
    ort.env.wasm.wasmPaths = { mjs: URL.createObjectURL(new Blob([glue], { type: "text/javascript" })) };
    session = await ort.InferenceSession.create(onnx, { executionProviders: ["wasm"],
      graphOptimizationLevel: "all" });
    timings.loadSeconds = (performance.now() - t0) / 1000;
    note.textContent = `${model.name} runs in this page (${MB(total)} loaded, ${threads} `
      + `thread${threads > 1 ? "s" : ""}${threads > 1 ? "" : ": this host does not allow more"}).`;
    bar.hidden = true;
  })();
  ready.catch((error) => { note.textContent = `The model could not start in this browser: ${error.message}`; });

  const run = async (a, b, positions = [0]) => {
    await ready;
    const enc = tokenizer.encode(a, b, model.maxTokens);
    const T = enc.tokens.length;
    const ort = window.ort;
    const feeds = {
      input_ids: new ort.Tensor("int64", BigInt64Array.from(enc.ids, BigInt), [1, T]),
      token_type_ids: new ort.Tensor("int64", BigInt64Array.from(enc.segments, BigInt), [1, T]),
      mlm_positions: new ort.Tensor("int64", BigInt64Array.from(positions, BigInt), [positions.length]),
    };
    const out = await session.run(feeds);
    return { enc, T, out };
  };

  const checkText = (a) => {
    if (typeof a !== "string" || !a.trim()) throw new Error("the text is empty; type a sentence to analyze");
  };

  const api = {
    ready, timings, tokenizer,
    get viewer() { return viewer; },
    async analyze(a, b = null) {
      checkText(a);
      const { enc, T, out } = await run(a, b);
      return { tokens: enc.tokens, segments: enc.segments, special: enc.special, layers: model.layers,
        heads: model.heads, length: T, attention: out.attentions.data, queries: out.queries.data,
        keys: out.keys.data, rollout: out.rollout.data, headSize: model.headSize, truncated: enc.truncated,
        nsp: Array.from(out.nsp_logits.data) };
    },
    async fillMask(text, k = 5) {
      checkText(text);
      text = text.replace(MASK_SPELLING, "[MASK]"); // every spelling of the mask, as masked_lm.normalize_mask
      const enc = tokenizer.encode(text, null, model.maxTokens);
      const positions = enc.tokens.flatMap((t, i) => (t === "[MASK]" ? [i] : []));
      if (!positions.length) throw new Error("put [MASK] where a word should be predicted");
      const { out } = await run(text, null, positions);
      const V = out.mlm_logits.dims[1];
      const logits = out.mlm_logits.data;
      return positions.map((_, m) => {
        const row = logits.subarray(m * V, (m + 1) * V);
        let max = -Infinity;
        for (const v of row) max = Math.max(max, v);
        let sum = 0;
        for (const v of row) sum += Math.exp(v - max);
        const order = Array.from(row.keys()).sort((x, y) => row[y] - row[x]).slice(0, k);
        return order.map((id) => ({ token: tokenizer.token(id), probability: Math.exp(row[id] - max) / sum }));
      });
    },
    async nextSentence(a, b) {
      checkText(a);
      checkText(b);
      const { out } = await run(a, b);
      const [isNext, notNext] = out.nsp_logits.data;
      return 1 / (1 + Math.exp(notNext - isNext)); // index 0 is IsNext, as in BERT's pretraining
    },
    async show(a, b = null, selection = null) {
      const t0 = performance.now();
      const r = await api.analyze(a, b);
      const key = `${r.tokens.join("\u0001")}#${r.segments.join("")}`;
      const title = b ? `${a} | ${b}` : a;
      const payload = encodePayload({ tokens: r.tokens, segments: r.segments, special: r.special,
        attention: r.attention, rollout: r.rollout, layers: r.layers, heads: r.heads, model: model.name, text: title,
        title: title.length > 100 ? `${title.slice(0, 99)}\u2026` : title, key });
      // Written when the query/key view first opens (0.3 s at 512 tokens that most visits never need).
      const loadQueryKey = async () => encodeQueryKey(r.queries, r.keys, r.layers, r.heads, r.length, r.headSize,
        key);
      const keep = selection || (viewer ? viewer.selection.get() : {});
      viewer?.destroy();
      // Only what is known: without a layer and a head the views pick an informative one to open on.
      const start = Object.fromEntries(["layer", "head", "token", "view"].filter((k) => keep[k] !== undefined)
        .map((k) => [k, keep[k]]));
      viewer = await window.BertvizViews.mount($("views"), payload, { loadQueryKey, showTitle: false,
        selection: start });
      current = { a, b };
      viewer.selection.subscribe(() => updateLink());
      updateLink();
      $("truncated").textContent = r.truncated
        ? `The input was longer than ${model.maxTokens} tokens: ${r.truncated} were left out.` : "";
      timings.showSeconds = (performance.now() - t0) / 1000;
      api.last = r; // what is on screen, for scripts and tests
      return r;
    },
  };

  const linkFor = () => {
    const base = window.location.href.split(/[?#]/)[0];
    return writeLink(base, current.a, current.b, viewer.selection.get());
  };
  const updateLink = () => {
    if (!current || !viewer) return;
    try { window.history.replaceState(null, "", linkFor()); } catch { /* some file:// hosts refuse: no harm */ }
  };

  const say = (where, text) => { $(where).textContent = text; };
  const guarded = (where, fn) => async () => {
    say(where, "");
    try { await fn(); } catch (error) { say(where, error.message || String(error)); }
  };

  $("analyze").addEventListener("click", guarded("input-error", async () => {
    const a = $("text-a").value;
    const b = $("text-b").value.trim() ? $("text-b").value : null;
    checkText(a);
    await api.show(a, b);
  }));
  for (const id of ["text-a", "text-b"]) {
    $(id).addEventListener("keydown", (e) => { if (e.key === "Enter") $("analyze").click(); });
  }
  $("copy-link").addEventListener("click", guarded("input-error", async () => {
    if (!viewer) throw new Error("analyze a sentence first; the link holds it");
    const url = linkFor();
    $("link-out").value = url;
    $("link-out").hidden = false;
    try { await navigator.clipboard.writeText(url); } catch { $("link-out").select(); }
  }));
  $("presenter").addEventListener("click", () => {
    const on = doc.body.classList.toggle("bv-presenter");
    $("presenter").textContent = on ? "Leave presenter mode" : "Presenter mode";
  });
  $("fill").addEventListener("click", guarded("fill-out", async () => {
    const rows = await api.fillMask($("fill-text").value, 5);
    const list = $("fill-out");
    list.replaceChildren(...rows.map((row, m) => {
      const item = doc.createElement("li");
      item.textContent = `[MASK] ${m + 1}: ` + row.map((p) => `${p.token} ${(100 * p.probability).toFixed(1)} %`)
        .join(", "); // text, never markup
      return item;
    }));
  }));
  $("nsp").addEventListener("click", guarded("nsp-out", async () => {
    const p = await api.nextSentence($("nsp-a").value, $("nsp-b").value);
    say("nsp-out", `P(B follows A) = ${(100 * p).toFixed(1)} %`);
  }));

  if (link.a !== null) { // a link holds the whole input: no B in it means a single sentence
    $("text-a").value = link.a;
    $("text-b").value = link.b ?? "";
  }
  ready.then(() => api.show($("text-a").value, $("text-b").value.trim() ? $("text-b").value : null,
    link.selection)).then(() => { timings.firstPictureSeconds = performance.now() / 1000; },
    (error) => say("input-error", error.message || String(error)));
  window.bertvizPage = api;
  return api;
}
