"""The serving side of the app, apart from the page: `launch.py` (serve with the bounds the README lists under
"Security and limits"), `guards.py` (plain ASGI middleware in front of gradio), `gradio_internals.py` (the one place
that reaches into gradio's private parts, each use pinned by a test) and `polls.py` (progress polls counted before
gradio sees them); the training lane is a package of its own (`app/lane/`). Nothing here imports the page or its
tabs."""

from .launch import MAX_BODY_BYTES, MAX_QUEUE, MAX_SESSIONS, SESSION_IDLE_S, free_port, listening_line, serve

__all__ = ["MAX_BODY_BYTES", "MAX_QUEUE", "MAX_SESSIONS", "SESSION_IDLE_S", "free_port", "listening_line", "serve"]
