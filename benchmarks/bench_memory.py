"""The server's bounds, measured from outside (not a test: prints a Markdown table).

    .venv/bin/python benchmarks/bench_memory.py [--inputs 100] [--tokens 512] [--views] [--threads 1]
                                                [--server-arg=--cache-mb=128 ...] [--skip-probes]

`bertviz-app serve --max-tokens TOKENS` runs as its own process on 127.0.0.1 with the built-in models on the CPU;
this process sends it `--inputs` distinct inputs of `--tokens` word pieces through gradio_client (the `/analyze`
event; with `--views` also the views the page asks for after an analysis) and reads the server's resident set
(VmRSS, and its peak VmHWM) from /proc. Target (issue #11): 100 distinct 512-token inputs keep RSS under ~1.5 GB.

Then three probes of the HTTP surface, each against the same server:
- the bypass route: `POST /gradio_api/run/predict` naming the analyze event by its fn_index, as a client that skips
  the queue would; what it answers (a forward pass in the answer means the queue and --concurrency were skipped);
- a 200 MB JSON body to `/gradio_api/queue/join`, sent in 1 MiB pieces on a raw socket: how long until the server
  answers, how much of the body it had taken by then, and the server's RSS afterwards;
- an upload of 100 kB and one of 5 MB to `/gradio_api/upload`.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_app import WORDS, make_client, print_measures, rss_mib, served  # noqa: E402

MIB = 2**20


def long_input(i: int, tokens: int) -> str:
    """A distinct input of at least `tokens` word pieces; the counter comes first, so it survives truncation."""
    return f"{i} " + " ".join(WORDS[(i + k) % len(WORDS)] for k in range(tokens))


def analyze_event(url: str) -> tuple[int, str]:
    """(fn_index, first model name) of the public analyze event, from the page's config."""
    with urllib.request.urlopen(url + "config", timeout=30) as response:
        config = json.load(response)
    fn_index = next(d["id"] for d in config["dependencies"] if d.get("api_name") == "analyze")
    model = next(c["props"]["value"] for c in config["components"] if c["props"].get("elem_id") == "model")
    return fn_index, model


def fill(url: str, pid: int, model: str, args) -> list[tuple[str, str]]:
    client = make_client(url)
    rows = [("RSS before the first input", f"{rss_mib(pid):.0f} MiB")]
    start = time.perf_counter()
    for i in range(args.inputs):
        out = client.predict(model, long_input(i, args.tokens), "", api_name="/analyze")
        if i == 0:
            rows.append(("tokens per input", str(len(out[0]["data"]))))
        if args.views:
            # what the page's other tabs draw after an analysis (the attention views come with /analyze)
            client.predict(128, api_name="/embeddings")
            client.predict(6, api_name="/hidden_states")
            client.predict(api_name="/next_sentence")
        if (i + 1) % 10 == 0:
            print(f"{i + 1} inputs: RSS {rss_mib(pid):.0f} MiB ({time.perf_counter() - start:.0f} s)",
                  file=sys.stderr, flush=True)
    rows += [(f"RSS after {args.inputs} distinct inputs", f"{rss_mib(pid):.0f} MiB"),
             ("peak RSS (VmHWM)", f"{rss_mib(pid, 'VmHWM'):.0f} MiB"),
             ("time for the inputs", f"{time.perf_counter() - start:.0f} s")]
    return rows


def bypass(url: str, fn_index: int, model: str) -> str:
    body = json.dumps({"data": [model, "Skip the queue.", ""], "fn_index": fn_index,
                       "session_hash": "benchbypass"}).encode()
    request = urllib.request.Request(url + "gradio_api/run/predict", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        status, text = err.code, err.read().decode()
    answered = "a forward pass (tokens in the answer)" if "[CLS]" in text else text[:120]
    return f"{status}: {answered}"


def big_post(port: int, pid: int, size: int = 200 * MIB, path: str = "/gradio_api/queue/join",
             content_type: str = "application/json") -> list[tuple[str, str]]:
    """Send a `size`-byte body in 1 MiB pieces; stop when the server answers (or has taken everything)."""
    before = rss_mib(pid)
    sock = socket.create_connection(("127.0.0.1", port), timeout=300)
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {size}\r\n\r\n").encode()
    piece = b'{"data": ["' + b"x" * (MIB - 11)
    start = time.perf_counter()
    sock.sendall(head)
    sent, answer = 0, b""
    sock.setblocking(False)
    try:
        while sent < size and not answer:
            try:
                answer = sock.recv(4096)
                break
            except BlockingIOError:
                pass
            chunk = piece if sent == 0 else b"x" * MIB
            chunk = chunk[: size - sent]
            view = memoryview(chunk)
            while view and not answer:
                try:
                    n = sock.send(view)
                    view, sent = view[n:], sent + n
                except BlockingIOError:
                    try:
                        answer = sock.recv(4096)
                    except BlockingIOError:
                        time.sleep(0.001)
                except (BrokenPipeError, ConnectionResetError):
                    break
            if view:  # the server closed or answered mid-piece
                break
        sock.setblocking(True)
        sock.settimeout(300)
        if not answer:
            answer = sock.recv(4096)
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        elapsed = time.perf_counter() - start
        sock.close()
    status = answer.split(b"\r\n", 1)[0].decode(errors="replace") or "(connection closed without an answer)"
    time.sleep(1)
    return [(f"{size // MIB} MB POST to {path}: answer", status),
            (f"{size // MIB} MB POST to {path}: time to the answer", f"{elapsed * 1000:.1f} ms"),
            (f"{size // MIB} MB POST to {path}: body sent before the answer", f"{sent / MIB:.1f} MiB"),
            (f"{size // MIB} MB POST to {path}: server RSS before / after", f"{before:.0f} / {rss_mib(pid):.0f} MiB")]


def upload(url: str, size: int) -> str:
    """What POST /gradio_api/upload answers for one file of `size` bytes (httpx: it keeps the connection open, so an
    early refusal is read, where urllib's `Connection: close` turns it into a reset)."""
    import httpx

    files = {"files": ("big.bin", b"\0" * size, "application/octet-stream")}
    try:
        answer = httpx.post(url + "gradio_api/upload", files=files, timeout=120)
    except httpx.HTTPError as err:
        return f"connection error: {err}"
    return f"{answer.status_code}: {answer.text[:120]}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=int, default=100)
    parser.add_argument("--tokens", type=int, default=512, help="the server's --max-tokens and the input length")
    parser.add_argument("--threads", type=int, default=1, help="the server's --threads")
    parser.add_argument("--views", action="store_true", help="also draw the views a page asks for after an input")
    parser.add_argument("--server-arg", action="append", default=[],
                        help="one more argument for `bertviz-app serve`, e.g. --server-arg=--cache-mb=128")
    parser.add_argument("--skip-probes", action="store_true", help="only the memory figures")
    args = parser.parse_args()
    with served("memory", args.threads, ("--max-tokens", str(args.tokens), *args.server_arg)) as (proc, url):
        fn_index, model = analyze_event(url)
        rows = [("server", "`bertviz-app serve --device cpu --max-tokens "
                           f"{args.tokens} {' '.join(args.server_arg)}`".replace(" `", "`")),
                ("model", model)]
        rows += fill(url, proc.pid, model, args)
        if not args.skip_probes:
            rows.append(("`POST /gradio_api/run/predict` (analyze's fn_index)", bypass(url, fn_index, model)))
            rows += big_post(urllib.parse.urlsplit(url).port, proc.pid)
            rows.append(("100 kB `POST /gradio_api/upload`", upload(url, 100_000)))
            rows.append(("5 MB `POST /gradio_api/upload`", upload(url, 5 * MIB)))
            rows.append(("server RSS at the end", f"{rss_mib(proc.pid):.0f} MiB"))
    print_measures(rows)

if __name__ == "__main__":
    main()
