#!/usr/bin/env bash
# A second environment for the benchmarks (ab_power.py, side_by_side.py): a venv over the packages of the
# python3 that makes it (the same torch; a .pth adds that interpreter's site directories, so it works from
# inside a venv too, where --system-site-packages would see the base interpreter's packages instead) and
# whose torch has Conv2d slowed (dlperf_slowconv.py: every K-th forward computed twice, K=4 unless --every K,
# set inside the environment, so that nothing in the workers' variables shows it). With --twin, the same
# environment without the slow-down.
# With --slow-jpeg, Pillow's JPEG decoding is slowed instead (dlperf_slowjpeg.py: every JPEG decoded twice).
# With --extra-matmul K, every attention block also computes K products of its queries and keys
# (dlperf_extramatmul.py: one operator family slowed, for benchmarks/explain.py).
# Usage: bash benchmarks/slowenv/make_env.sh DIR [--twin | --every K | --slow-jpeg | --extra-matmul K]   -> DIR/bin/python
set -euo pipefail
dir=${1:?usage: make_env.sh DIR [--twin | --every K]}
here=$(cd "$(dirname "$0")" && pwd)
python3 -m venv --without-pip "$dir"
site=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
python3 - "$site" <<'PY'
import sys
from pathlib import Path
ours = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and Path(p).is_dir()]
Path(sys.argv[1], "_dlperf_parent.pth").write_text(f"import site; list(map(site.addsitedir, {ours!r}))\n")
PY
cp "$here/dlperf_afterimport.py" "$site/dlperf_afterimport.py"
if [ "${2:-}" = "--extra-matmul" ]; then
  sed "s/^REPEAT = 6/REPEAT = ${3:?--extra-matmul K}/" "$here/dlperf_extramatmul.py" > "$site/dlperf_extramatmul.py"
  echo "import dlperf_extramatmul" > "$site/dlperf_extramatmul.pth"
elif [ "${2:-}" = "--slow-jpeg" ]; then
  cp "$here/dlperf_slowjpeg.py" "$site/dlperf_slowjpeg.py"
  echo "import dlperf_slowjpeg" > "$site/dlperf_slowjpeg.pth"
elif [ "${2:-}" != "--twin" ]; then
  every=4
  if [ "${2:-}" = "--every" ]; then every=${3:?--every K}; fi
  sed "s/^EVERY = \"4\"/EVERY = \"$every\"/" "$here/dlperf_slowconv.py" > "$site/dlperf_slowconv.py"
  echo "import dlperf_slowconv" > "$site/dlperf_slowconv.pth"
fi
"$dir/bin/python" -c 'import torch; print("Conv2d.forward:", torch.nn.Conv2d.forward.__name__)'
