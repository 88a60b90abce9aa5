"""Serving the app: safe defaults (127.0.0.1, no run history, no monitoring page, no MCP server, no extra file
paths), a clear line when a --share link cannot be made, and gradio's own banner replaced by ours."""

from __future__ import annotations

import contextlib
import io
import logging
import socket
import sys

import gradio as gr

from ..catalog import ASSETS
from . import gradio_internals
from .common import check_inputs

log = logging.getLogger("bertviz_app.app")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def serve(demo: gr.Blocks, *, host: str = "127.0.0.1", port: int = 7860, share: bool = False,
          auth: list[tuple[str, str]] | None = None, block: bool = True, max_queue: int = 64) -> str:
    """Launch `demo` with safe defaults and return the local URL; with `block`, serve until Ctrl-C.

    Safe defaults: bound to 127.0.0.1 unless told otherwise; no run history (gradio 6 would otherwise record
    every call in the visitor's browser and offer a /gradio_api/runs page), no monitoring page, no MCP server,
    no extra file paths (gradio serves only its own cache of files our handlers return, and we return none).
    Every event's values are checked before gradio processes them (common.check_inputs), so that a bad value is
    refused in words that name the field.
    A --share link that cannot be made (offline) is reported in one clear line while the local server goes on."""
    demo.queue(max_size=max_queue, default_concurrency_limit=4)
    gradio_internals.check_inputs_first(demo, check_inputs)
    captured = io.StringIO()
    with contextlib.redirect_stdout(captured):  # gradio's banner and its long share advice: we say it shorter
        demo.launch(server_name=host, server_port=port or free_port(host), share=share, auth=auth,
                    prevent_thread_lock=True, quiet=True, show_error=False, run_history=False, ssr_mode=False,
                    mcp_server=False, enable_monitoring=False, footer_links=["api", "settings"],
                    css_paths=[ASSETS / "app.css"] if (ASSETS / "app.css").exists() else None)
    log.debug("gradio said: %s", captured.getvalue())
    url = demo.local_url
    print(f"bertviz-app: serving on {url} (Ctrl-C stops)", flush=True)
    if share:
        if demo.share_url:
            print(f"bertviz-app: public link {demo.share_url}", flush=True)
        else:
            print(f"bertviz-app: could not create the public --share link: gradio.live cannot be reached (no "
                  f"internet connection, or a firewall blocks it). The app keeps serving locally on {url}",
                  file=sys.stderr, flush=True)
    if block:
        demo.block_thread()
    return url
