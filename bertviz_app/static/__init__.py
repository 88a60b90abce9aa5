"""A page that runs BERT itself: `export_static(folder, model, tokenizer, name)` (or `Explorer.export_static`,
`bertviz-app export-static DIR`) writes the model as ONNX (onnx_export.py), onnxruntime-web (runtime.py, fetched
into the package at setup) and the views with the page's own glue (js/) into a folder for any static host."""

from .onnx_export import ExportError, export_onnx
from .runtime import RuntimeMissing
from .site import export_static

__all__ = ["ExportError", "RuntimeMissing", "export_onnx", "export_static"]
