"""The attention views as a notebook widget that talks back: an anywidget (JupyterLab, Notebook 7, VS Code, Colab,
marimo) whose traits `layer`, `head`, `token` and `view` are the views' selection, both ways.

    w = run.widget()          # the last line of a cell draws it
    w.layer = 3               # the picture moves
    w.head                    # after a click on a head in the overview: that head
    w.observe(print, names="token")

The drawing is the same bundle as everywhere else (page.py); its ESM adds one line that hands anywidget's render to
`BertvizViews.widgetHost` (js/widget-host.mjs), which mirrors the one shared selection to the model and back.
anywidget is imported on the first widget, not with the package: `bertviz_app` works without it.
"""

from __future__ import annotations

from functools import lru_cache

from .page import GLOBAL, _initial_view, bundle_js
from .payload import PayloadError, read_header

INSTALL = "pip install bertviz-app[notebook]"


def widget_esm() -> str:
    """The widget's ES module: the views' bundle, then anywidget's entry handing render to the widget's host (the
    bundle object is taken at once, so another bundle loaded later in the page cannot swap it)."""
    return (bundle_js("widget") + f"const views = globalThis.{GLOBAL};\n"
            "export default { render: (context) => views.startWidgetHost(context, { mount: views.mount }) };\n")


@lru_cache(maxsize=1)
def widget_class() -> type:
    """`AttentionWidget`, made on first use, when anywidget is imported."""
    try:
        import anywidget
        import traitlets
    except ImportError as error:
        raise ImportError(f"run.widget() needs anywidget, which the notebook extra installs: {INSTALL}") from error

    class AttentionWidget(anywidget.AnyWidget):
        """The attention views of one Run as a widget. Synced both ways: `layer`, `head` (a number or "all"),
        `token` (a number, or None for none) and `view` ('lines', 'matrix', 'overview' or 'query_key'). Layer and
        head are None until the views open without them asked for; the views then choose a head worth a look and
        set them."""

        _esm = widget_esm()
        _payload = traitlets.Bytes().tag(sync=True)
        _query_key = traitlets.Bytes(b"").tag(sync=True)
        _max_height = traitlets.Int(520).tag(sync=True)  # a view box's pixels: a notebook's page scrolls inside
        layer = traitlets.Int(None, allow_none=True).tag(sync=True)
        head = traitlets.Union([traitlets.Int(), traitlets.Unicode()], default_value=None,
                               allow_none=True).tag(sync=True)
        token = traitlets.Int(None, allow_none=True).tag(sync=True)
        view = traitlets.Unicode("lines").tag(sync=True)

        def __init__(self, payload: bytes, query_key: bytes | None = None, **traits):
            header, _ = read_header(payload)  # a blob that is not a payload fails here, not when the notebook draws
            if header.get("kind") != "attention":
                raise PayloadError(f"expected an attention payload, got kind {header.get('kind')!r}")
            self._sizes = {"layers": header["layers"], "heads": header["heads"], "tokens": header["length"]}
            self._input_title = header.get("title") or "attention"
            super().__init__(_payload=bytes(payload), _query_key=bytes(query_key or b""), **traits)

        def __repr__(self) -> str:
            return (f"<AttentionWidget {self._input_title!r}: view={self.view} layer={self.layer} head={self.head} "
                    f"token={self.token}>")

        def _in_range(self, proposal, size: str, what: str):
            value, count = proposal["value"], self._sizes[size]
            if value is not None and not 0 <= value < count:
                whose = "input" if size == "tokens" else "model"
                raise traitlets.TraitError(f"{what} must be from 0 to {count - 1} (this {whose} has {count} "
                                           f"{size}), not {value}")
            return value

        @traitlets.validate("layer")
        def _check_layer(self, proposal):
            return self._in_range(proposal, "layers", "layer")

        @traitlets.validate("head")
        def _check_head(self, proposal):
            if proposal["value"] == "all":
                return "all"
            if isinstance(proposal["value"], str):
                raise traitlets.TraitError(f"head must be a number or 'all', not {proposal['value']!r}")
            return self._in_range(proposal, "heads", "head")

        @traitlets.validate("token")
        def _check_token(self, proposal):
            return self._in_range(proposal, "tokens", "token")

        @traitlets.validate("view")
        def _check_view(self, proposal):
            try:
                _initial_view(proposal["value"])  # the registry's sentence for an unknown view
            except ValueError as error:
                raise traitlets.TraitError(str(error)) from None
            return proposal["value"]

    return AttentionWidget


def attention_widget(payload: bytes, query_key: bytes | None = None, *, view: str = "lines",
                     layer: int | None = None, head: int | str | None = None, token: int | None = None,
                     height: int = 520):
    """The views of `payload` (and its query/key blob) as an `AttentionWidget`, opening on `view`, and on `layer`
    and `head` when given (otherwise on a head worth a look); height: a view box's pixels."""
    return widget_class()(payload, query_key, view=view, layer=layer, head=head, token=token,
                          _max_height=int(height))
