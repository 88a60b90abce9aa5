#!/usr/bin/env bash
# Continue the shipped model's pretraining on a lent GPU in one command (scripts/train_on_device.py says what it
# writes into $OUT). Rehearse it here first: scripts/train_on_device.sh --rehearse
#
# Before the lent session, here (once; the corpus is ignored by git and travels as a carried path):
#   python scripts/build_corpus.py --out runs/corpus --sources runs/sources --fetch
#   python scripts/tokenize_corpus.py runs/corpus --out runs/device/corpus
# The device tool's run, with carry ["runs/device/corpus"] (resuming: also "runs/device/state.json" and
# "runs/device/figures.json"; never all of runs/device, where a rehearsal may have left 46 MB):
#   PYTHONUNBUFFERED=1 bash scripts/train_on_device.sh 2>&1 | tee $OUT/train.log
# To resume in a later session, from the returned files (FILES = the reply's files_at):
#   cat FILES/model.safetensors.part* > assets/minilm-l6-mlm-nsp-en/model.safetensors   # not committed
#   cp FILES/state.json FILES/figures.json runs/device/
# then the same run; afterwards `git checkout assets/minilm-l6-mlm-nsp-en/model.safetensors` unless it ships.
# (The returned weights replace the shipped ones in place because the tree, the corpus and a second 46 MB model
# would not fit the 64 MiB that travels.)
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-$(command -v python3)}  # PYTHON: another interpreter (a virtual environment here)
[ -z "${PYTHON:-}" ] && [ -x .venv/bin/python ] && python=.venv/bin/python
[ -f runs/device/figures.json ] && [ -n "${OUT:-}" ] && cp runs/device/figures.json "$OUT/"
PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" exec "$python" scripts/train_on_device.py "$@"
