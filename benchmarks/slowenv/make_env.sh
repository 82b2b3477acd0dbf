#!/usr/bin/env bash
# A second environment for benchmarks/ab_power.py: a venv that sees this machine's packages
# (--system-site-packages: the same torch) and whose torch has Conv2d slowed (dlperf_slowconv.py).
# Usage: bash benchmarks/slowenv/make_env.sh DIR   -> DIR/bin/python
set -euo pipefail
dir=${1:?usage: make_env.sh DIR}
here=$(cd "$(dirname "$0")" && pwd)
python3 -m venv --system-site-packages "$dir"
site=$("$dir/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cp "$here/dlperf_slowconv.py" "$site/"
echo "import dlperf_slowconv" > "$site/dlperf_slowconv.pth"
"$dir/bin/python" -c 'import torch; print("slowed:", torch.nn.Conv2d.forward.__name__)'
