#!/usr/bin/env bash
# Creates .venv when missing and installs the pinned dependencies (offline-safe: local wheels + PyPI mirror).
# Re-runs only when pyproject.toml, constraints.txt or this script changed (a stamp records what was installed).
# constraints.txt pins every transitive package too, so two fresh machines get the same set.
set -euo pipefail
cd "$(dirname "$0")/.."

stamp=.venv/.bootstrap-stamp
want=$(cat pyproject.toml constraints.txt scripts/bootstrap.sh | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

py=${PYTHON:-$(command -v python3.11 || command -v python3)}
if [ ! -x .venv/bin/python ]; then
  echo "bootstrap: creating .venv with $py"
  "$py" -m venv .venv
fi
pip=(.venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt)

# torch first, pinned: anything else asking for torch would otherwise pull a multi-GB CUDA build.
"${pip[@]}" torch==2.14.1 torchvision==0.29.1
"${pip[@]}" -e ".[dev]"
# The canonical `rf100vl` package path. roboflow wants opencv-python-headless, which would clobber the
# opencv-python LibreYOLO uses (same cv2 module): install it without deps, plus its pure-Python needs.
"${pip[@]}" --no-deps rf100vl==1.1.2 roboflow==1.7.3
"${pip[@]}" requests-toolbelt filetype python-dotenv "pillow-avif-plugin<2"

echo "$want" > "$stamp"
echo "bootstrap: .venv ready"
