"""onnxruntime-web, the page's forward pass, brought into the package once at setup (`make setup` runs
`python -m bertviz_app.static`), so that exporting a static page later needs no network.

The npm tarball is pinned by version and by the registry's sha512 integrity; from its 33 MB only the three files a
page needs are kept (the classic-script API, the WebAssembly module's JavaScript glue and the SIMD + threads
WebAssembly binary, 14.3 MB together) and a note of its MIT license. `npm pack` fetches it where npm is installed,
otherwise a plain HTTPS download from the same registry.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
from pathlib import Path

PACKAGE = "onnxruntime-web"
VERSION = "1.30.0"
INTEGRITY = "sha512-q0y+JrrtukXSzsBWEMccVfqX25LRmosXHF+CaRJmg8pZClzcV7svNc4rKY3jL02Vb7QmRMDs1SigqR4CXAfKYQ=="
LICENSE = "MIT"
FILES = ("ort.wasm.min.js", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm")
MIT_LICENSE = f"""{PACKAGE} {VERSION} (https://www.npmjs.com/package/{PACKAGE}), MIT License

Copyright (c) Microsoft Corporation

Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated
documentation files (the "Software"), to deal in the Software without restriction, including without limitation the
rights to use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies of the Software, and to
permit persons to whom the Software is furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all copies or substantial portions of the
Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE
WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE AUTHORS OR
COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR
OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.
"""
RUNTIME_DIR = Path(__file__).resolve().parent / "runtime"


class RuntimeMissing(RuntimeError):
    """The runtime has not been fetched into the package."""


def runtime_dir() -> Path:
    """The folder with FILES, LICENSE and VERSION, or RuntimeMissing saying how to fetch it."""
    stamp = RUNTIME_DIR / "VERSION"
    if not stamp.exists() or stamp.read_text().strip() != VERSION or not all((RUNTIME_DIR / f).exists()
                                                                           for f in (*FILES, "LICENSE")):
        raise RuntimeMissing(f"{PACKAGE} {VERSION} is not in the package yet; fetch it once with "
                             f"`python -m bertviz_app.static` (`make setup` does), then export again")
    return RUNTIME_DIR


def _check(tarball: bytes) -> None:
    algorithm, _, expected = INTEGRITY.partition("-")
    actual = base64.b64encode(hashlib.new(algorithm, tarball).digest()).decode("ascii")
    if actual != expected:
        raise RuntimeError(f"the downloaded {PACKAGE}-{VERSION}.tgz does not match its pinned {algorithm} "
                           "integrity; refusing to use it")


def _download() -> bytes:
    if shutil.which("npm"):
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["npm", "pack", f"{PACKAGE}@{VERSION}", "--pack-destination", tmp, "--silent"],
                           check=True, stdout=subprocess.DEVNULL)
            return next(Path(tmp).glob("*.tgz")).read_bytes()
    registry = os.environ.get("npm_config_registry", "https://registry.npmjs.org/").rstrip("/")
    with urllib.request.urlopen(f"{registry}/{PACKAGE}/-/{PACKAGE}-{VERSION}.tgz", timeout=120) as response:
        return response.read()


def fetch(force: bool = False) -> Path:
    """Fetch, check and unpack the pinned runtime into the package (nothing happens when it is there already)."""
    if not force:
        try:
            return runtime_dir()
        except RuntimeMissing:
            pass
    tarball = _download()
    _check(tarball)
    RUNTIME_DIR.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(tarball), mode="r:gz") as archive:
        names = {m.name: m for m in archive.getmembers()}
        wanted = {f"package/dist/{f}": f for f in FILES}
        for member, target in wanted.items():
            (RUNTIME_DIR / target).write_bytes(archive.extractfile(names[member]).read())
    # The tarball carries no license file; its package.json says MIT, and the page's folder must say so.
    (RUNTIME_DIR / "LICENSE").write_text(MIT_LICENSE)
    (RUNTIME_DIR / "VERSION").write_text(VERSION + "\n")
    return RUNTIME_DIR
