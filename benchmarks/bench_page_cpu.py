"""What one visitor's Analyze costs the server, pressed in Chromium (not a test: prints a Markdown table).

    .venv/bin/python benchmarks/bench_page_cpu.py [--inputs 10] [--tab "Hidden states"]

`bertviz-app serve` (the served defaults) runs as its own process; a page at 1280 x 720 analyzes `--inputs` new
32-token sentences, one every 2.5 s, with the Tokens tab open (or `--tab`). Reported: the server's CPU time per
Analyze, that time less what the idle server spends over the same wait (gradio's poll loop), the requests the page
made, and the events it asked the server to run, by endpoint name. A class of 50 on two cores pays the first figure
50 times over, so the page should ask for the picture and the tab on screen, nothing more.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_app import CHROMIUM_ARGS, analyze_in, sentence, start_server, stop_server  # noqa: E402

from bertviz_app import limits  # noqa: E402

WAIT_MS = 2500  # after each Analyze: the steps it started are done well within this


def cpu_ms(pid: int) -> float:
    """User + system CPU time of process `pid` so far, in ms."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


def event_names(url: str) -> dict[int, str]:
    """fn_index -> the endpoint's name without gradio's `_` of a private use and `_1`, `_2` of later ones."""
    with urllib.request.urlopen(url + "config") as answer:
        return {d["id"]: re.sub(r"_\d+$", "", (d.get("api_name") or "").lstrip("_"))
                for d in json.load(answer)["dependencies"]}


def measure(url: str, pid: int, args) -> list[tuple[str, str]]:
    from playwright.sync_api import sync_playwright

    names = event_names(url)
    requests, events = [], collections.Counter()

    def record(request):
        requests.append(request.url)
        if request.method == "POST" and re.search(r"/(queue/join|run/predict)", request.url):
            events[names.get((request.post_data_json or {}).get("fn_index"), "?")] += 1

    with sync_playwright() as pw, tempfile.TemporaryDirectory() as profile:
        context = pw.chromium.launch_persistent_context(profile, executable_path="/usr/bin/chromium", headless=True,
                                                        args=CHROMIUM_ARGS, viewport={"width": 1280, "height": 720})
        page = context.new_page()
        page.goto(url)
        page.wait_for_function("() => document.querySelector('#attention-view')?.dataset.key", timeout=120_000)
        if args.tab:
            page.get_by_role("tab", name=args.tab, exact=True).click()
        page.wait_for_timeout(4000)
        start = cpu_ms(pid)
        page.wait_for_timeout(WAIT_MS * args.inputs)
        idle = (cpu_ms(pid) - start) / args.inputs
        page.on("request", record)
        start = cpu_ms(pid)
        for i in range(args.inputs):
            analyze_in(page, sentence(70_000 + i, 32))
            page.wait_for_timeout(WAIT_MS)
        busy = (cpu_ms(pid) - start) / args.inputs
        context.close()
    per_input = ", ".join(f"{name} {n / args.inputs:g}" for name, n in sorted(events.items()))
    return [("server CPU per Analyze (with the idle server's share)", f"{busy:.0f} ms"),
            (f"idle server over the same {WAIT_MS / 1000:g} s", f"{idle:.0f} ms"),
            ("server CPU per Analyze, less idle", f"{busy - idle:.0f} ms"),
            ("requests per Analyze", f"{len(requests) / args.inputs:.1f}"),
            ("events per Analyze", per_input)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=10)
    parser.add_argument("--tab", default="", help="the tab open while analyzing (default: Tokens)")
    args = parser.parse_args()
    from bertviz_app.app import free_port

    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    with tempfile.TemporaryFile("w+") as log:
        server = start_server(port, limits.THREADS, limits.CONCURRENCY, log)
        try:
            rows = measure(url, server.pid, args)
        finally:
            stop_server(server)
    print(f"{os.cpu_count()} CPUs visible, load average {os.getloadavg()[0]:.1f}; tab open: {args.tab or 'Tokens'}\n")
    print("| measure | value |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    main()
