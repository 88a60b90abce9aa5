"""The attention views in Chromium: payload sizes and the time from a layer, head or token change to the next frame.

    python benchmarks/bench_views.py [--tokens 32,128,512] [--repeat 20]

For each length, a sentence pair of exactly that many tokens (from PROSE) goes through the default model; the
payload is measured as bytes and as base64 (how a JSON value or an HTML page carries it), with the query/key
blob beside it. Then the standalone page opens in Debian's headless Chromium (file://, network blocked) at
1280 x 720 and, in each view, a control's event is dispatched `--repeat` times (see MEASURE_JS for what is
timed: "work" is what a change costs the page up to its painted frame, "latency" adds the wait for that frame).
Targets: under 16 ms at 32 tokens, under 50 ms at 512. Prints Markdown tables. On a shared machine absolute
times move with the neighbours' load (the load average is printed); medians, never single runs.
"""

from __future__ import annotations

import argparse
import base64
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]

# Plain, varied English (no repetition, which would flatter the compression), long enough for 512 tokens.
PROSE = (
    "The lighthouse keeper had kept a log for thirty years, and every entry began with the weather. On the morning "
    "the ferry failed to arrive, he wrote that the fog had come in low and thick, swallowing the harbour wall before "
    "breakfast. His daughter, who had returned from the city to help him through the winter, read the old volumes in "
    "the evenings and found them stranger than any novel. Storms were counted like relatives. Ships were named, "
    "praised, scolded and sometimes mourned. A whale had once followed the supply boat for an entire afternoon, and "
    "the keeper had drawn it in the margin with surprising care. She asked him why he never wrote about himself. He "
    "said the sea was more interesting, and that a log was meant to be useful to whoever came next. Nobody came next, "
    "of course; the light had been automated years ago, and the council only let him stay because moving him would "
    "have cost more than leaving him alone. Still, he climbed the spiral stairs each night, polished the brass, "
    "checked the batteries that no longer needed checking, and looked out across the water as though someone might "
    "be depending on him. In spring the researchers arrived, three of them, with crates of instruments and a permit "
    "to measure the seabirds. They slept in the old storeroom and cooked strange meals that filled the tower with the "
    "smell of ginger. The youngest, a quiet man from the north, asked to see the logs, and the keeper brought them "
    "down one by one, blowing dust from the covers. For weeks the researcher copied numbers into a laptop: "
    "temperatures, wind directions, the dates when the puffins returned. He explained that nobody else had recorded "
    "this island so patiently, and that the notes might show how the colonies had shrunk as the water warmed. The "
    "keeper listened without saying much. That night he wrote a longer entry than usual. He described the "
    "researchers, their instruments, the gingery kitchen and the young man's excitement over columns of figures he "
    "had always considered dull. At the end he added a line about himself, the first in thirty years: that he had "
    "been glad of the company, and that perhaps the log had been useful after all. When the autumn gales came, the "
    "researchers left with their crates and a promise to send copies of whatever they published. A parcel arrived in "
    "December, wrapped in brown paper and tied with string. Inside was a journal article with a graph on the second "
    "page, a long thin line falling slowly across the decades, and beneath it, in small print, a sentence thanking "
    "the keeper of the island light for observations made with remarkable care. His daughter framed the page and "
    "hung it beside the stairs. He pretended not to notice it for a week, then began pausing there each evening on "
    "his way up to the lamp, as if checking that it was still true. The following year the council wrote to say that "
    "the tower would be sold. A hotel company wanted the island, and the keeper was offered a small flat on the "
    "mainland, near the harbour, with a view of the water if one leaned out of the kitchen window. He packed the logs "
    "into tea chests and refused to let anyone else carry them. On his last night he climbed the stairs once more and "
    "sat beside the lamp until it was light, watching the birds return from the sea in long, untidy lines."
)


def sample_pair(explorer, tokens: int) -> tuple[str, str]:
    """Two halves of a stretch of PROSE that encodes to exactly `tokens` tokens ([CLS] A [SEP] B [SEP])."""
    words = PROSE.split()
    # BERT splits on spaces before WordPiece, so a stretch's length is the sum of its words' piece counts.
    pieces = [len(explorer.tokenizer.tokenize(w)) for w in words]
    for start in range(len(words)):
        total, end = 0, start
        while end < len(words) and total < tokens - 3:
            total += pieces[end]
            end += 1
        if total == tokens - 3:
            half = (start + end) // 2
            a, b = " ".join(words[start:half]), " ".join(words[half:end])
            if len(explorer.encode(a, b)) == tokens:
                return a, b
    raise RuntimeError(f"PROSE has no stretch of exactly {tokens} tokens")


# One change as the browser sees it: t0 before the control's event, t1 after its handlers ran; the views draw in the
# next animation frame (callback time stamp ts), then the browser lays out and paints; a message posted from a
# later callback of the same frame arrives after that paint (t3). work = (t1 - t0) + (t3 - max(ts, t1)) is what the
# change costs the page; latency = t3 - t0 adds the wait for the frame (0 to 16.7 ms, by when the event came).
# The values cycle through every layer, head or a spread of tokens, so the first pass meets empty caches (the
# worst case, reported as "max") and later passes find the decoded matrices kept (the median).
MEASURE_JS = """
async ([id, values, event, repeat]) => {
  const control = document.getElementById(id);
  const frame = () => new Promise((resolve) => requestAnimationFrame(resolve));
  const afterPaint = () => new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => resolve(performance.now());
    channel.port2.postMessage(0);
  });
  const work = [], latency = [];
  for (let k = 0; k < repeat; k++) {
    await frame();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const t0 = performance.now();
    control.value = values[k % values.length];
    control.dispatchEvent(new Event(event, { bubbles: true }));
    const t1 = performance.now();
    const ts = await frame();
    const t3 = await afterPaint();
    work.push(t1 - t0 + t3 - Math.max(ts, t1));
    latency.push(t3 - t0);
  }
  return { work, latency };
}
"""

CHANGES = {  # control id, values to cycle through (None: all of them), the event a person's input fires
    "layer": ("view-layer", None, "input"),
    "head": ("view-head", None, "input"),
    "token": ("view-token", None, "change"),
}


def payload_sizes(explorer, lengths, repeat: int) -> list[dict]:
    rows = []
    for tokens in lengths:
        run = explorer.run(*sample_pair(explorer, tokens))
        run.head_statistics()  # cached in the Run: its cost belongs to the analysis, not to the payload
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            blob = run.views_payload()
            times.append(time.perf_counter() - start)
        qk = run.query_key_payload()
        rows.append({"tokens": tokens, "payload": len(blob), "payload_b64": len(base64.b64encode(blob)),
                     "qk": len(qk), "qk_b64": len(base64.b64encode(qk)), "encode_ms": 1000 * statistics.median(times),
                     "run": run})
    return rows


def frame_times(pages: dict[int, Path], repeat: int) -> list[dict]:
    from playwright.sync_api import sync_playwright
    rows = []
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
        context = pw.chromium.launch_persistent_context(profile, executable_path=CHROMIUM, headless=True,
                                                        args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 720})
        for tokens, path in pages.items():
            page = context.new_page()
            page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:", "blob:"))
                       else r.abort())
            start = time.perf_counter()
            page.goto(path.as_uri())
            page.wait_for_function("() => document.querySelector('#view-pane-lines .bv-view')?.dataset.drawn",
                                   timeout=120_000)
            first_ms = 1000 * (time.perf_counter() - start)
            cycle = {"layer": [str(k) for k in range(1, 6)] + ["0"],
                     "head": [str(k) for k in range(1, 12)] + ["0"],
                     "token": [str(k) for k in range(1, tokens, max(1, tokens // 10))]}
            for view, setup in (("lines", {}), ("lines, all heads", {"head": "all"}), ("matrix", {}),
                                ("matrix, all heads", {"head": "all"}), ("overview", {}), ("qk", {})):
                name = view.split(",")[0]
                page.evaluate("([v, s]) => document.querySelector('#view-tab-' + v).click()", [name, setup])
                if setup:
                    page.check("#view-all-heads")
                else:
                    page.evaluate("() => { const h = document.getElementById('view-all-heads'); "
                                  "if (h.checked) { h.checked = false; h.dispatchEvent(new Event('change')); } }")
                page.wait_for_timeout(300)
                for change, (control, values, event) in CHANGES.items():
                    if setup.get("head") == "all" and change == "head":
                        continue  # moving the head slider would leave "all heads"
                    result = page.evaluate(MEASURE_JS, [control, cycle[change], event, repeat])
                    rows.append({"tokens": tokens, "view": view, "change": change,
                                 "work": statistics.median(result["work"]), "max": max(result["work"]),
                                 "latency": statistics.median(result["latency"]), "first_ms": first_ms})
            page.close()
        context.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", default="32,128,512", help="comma-separated lengths (default 32,128,512)")
    parser.add_argument("--frames", default="32,512", help="lengths to time in Chromium (default 32,512)")
    parser.add_argument("--repeat", type=int, default=20, help="changes per measurement (default 20)")
    args = parser.parse_args()

    import bertviz_app
    from bertviz_app.views import standalone_html

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    explorer = bertviz_app.load(device="cpu", max_tokens=512)
    lengths = sorted({int(x) for x in args.tokens.split(",")} | {int(x) for x in args.frames.split(",")})
    sizes = payload_sizes(explorer, lengths, repeat=5)
    print("\n| tokens | payload | as base64 | query/key blob | as base64 | encode (median of 5) |")
    print("|---|---|---|---|---|---|")
    for r in sizes:
        print(f"| {r['tokens']} | {r['payload'] / 1e3:,.0f} kB | {r['payload_b64'] / 1e3:,.0f} kB | "
              f"{r['qk'] / 1e3:,.0f} kB | {r['qk_b64'] / 1e3:,.0f} kB | {r['encode_ms']:.0f} ms |")

    with tempfile.TemporaryDirectory() as folder:
        pages = {}
        for r in sizes:
            if str(r["tokens"]) in args.frames.split(","):
                pages[r["tokens"]] = Path(folder) / f"page{r['tokens']}.html"
                pages[r["tokens"]].write_text(standalone_html(r["run"].views_payload(), r["run"].query_key_payload()),
                                              encoding="utf-8")
        rows = frame_times(pages, args.repeat)
    print(f"\nChromium {CHROMIUM}, 1280 x 720, median of {args.repeat} changes; work = input handlers + the "
          "views' drawing + layout and paint of that frame; latency adds the wait for the frame")
    for tokens in pages:
        first = next(r["first_ms"] for r in rows if r["tokens"] == tokens)
        print(f"\n{tokens} tokens (page open to first drawing: {first:,.0f} ms)\n")
        print("| view | layer: work (max) | latency | head: work (max) | latency | token: work (max) | latency |")
        print("|---|---|---|---|---|---|---|")
        for view in dict.fromkeys(r["view"] for r in rows):
            cells = []
            for change in CHANGES:
                r = next((r for r in rows if r["tokens"] == tokens and r["view"] == view and r["change"] == change),
                         None)
                cells += ["-", "-"] if r is None else [f"{r['work']:.1f} ({r['max']:.0f}) ms", f"{r['latency']:.1f} ms"]
            print(f"| {view} | " + " | ".join(cells) + " |")
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
