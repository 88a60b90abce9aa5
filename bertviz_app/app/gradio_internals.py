"""The one place the app reaches into gradio's internals, kept apart so that a gradio upgrade that changes them
fails one test loudly (tests/test_app.py::test_gradio_internals_are_as_the_workaround_expects) instead of quietly
letting sessions grow again.

A prop update (gr.update(choices=...)) makes gradio build a new component for the session. Gradio 6.31 then files
that component under its own new id as well, the next time it is an input, and never drops it: a session grew by
about three components (~15 kB) per analysis, for as long as it lived. Gradio looks components up by the page's own
ids, and files the current replacement of each under its new id while it prepares an event, so only replacements
that have since been replaced again can go.
"""

from __future__ import annotations

import gradio as gr


def session_blocks(demo: gr.Blocks, session_hash: str | None):
    """(blocks, config_values) of one session's state, or None when gradio keeps none for it (or keeps it in a shape
    this code does not know: then it raises AttributeError)."""
    state = demo.state_holder.session_data.get(session_hash)
    if state is None:
        return None
    return state.blocks_config.blocks, state.config_values


def forget_replaced_components(demo: gr.Blocks, request: gr.Request | None) -> None:
    """Drop from the visitor's session the components that a prop update replaced and that were replaced again
    since. Best effort: if gradio's internals change shape, the session grows as it did before."""
    try:
        found = session_blocks(demo, getattr(request, "session_hash", None))
        if found is None:
            return
        blocks, config_values = found
        live = {id(blocks[k]) for k in demo.blocks if k in blocks}
        for key in [k for k, block in blocks.items() if k not in demo.blocks and id(block) not in live]:
            blocks.pop(key, None)
            config_values.pop(key, None)
    except (AttributeError, KeyError, RuntimeError):  # RuntimeError: another event changed the dict meanwhile
        pass
