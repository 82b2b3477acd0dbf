"""Pure-Python wheels the tests build themselves (the wheel format written with zipfile): a package a
side's ``pip=`` installs. ``slowing_wheel`` is a library whose start-up hook (a ``.pth``, run by every
interpreter it is installed for) slows each training step of the workload processes alone by a share
(DLPERF_PLANT_SLOWDOWN, which the workloads honour): the harness and its probes see no variable change."""
from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def make_wheel(directory: Path, name: str, version: str, files: dict[str, str]) -> Path:
    """A wheel ``name-version-py3-none-any.whl`` in ``directory`` holding ``files`` (path -> text)."""
    directory.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    contents = {**{k: v.encode() for k, v in files.items()},
                f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
                f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests.wheels\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [_record_line(k, v) for k, v in contents.items()] + [f"{info}/RECORD,,"]
    path = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for k, v in contents.items():
            z.writestr(k, v)
        z.writestr(f"{info}/RECORD", "\n".join(record) + "\n")
    return path


WORKLOADS = ("workload.py", "torch_ddp.py", "tf_mwms.py", "paddle_dp.py")  # the engines' training scripts


def slowing_wheel(directory: Path, share: float, version: str = "1.0") -> Path:
    """``quicklog``: a logging helper that, at ``share`` > 0, makes every Python process it is installed for
    slow each training step by that share; at 0 the same package costs nothing."""
    module = "LEVEL = 'info'\n"
    hook = ("import os, sys; os.path.basename((sys.argv or [''])[0]) in WORKLOADS and "
            f"os.environ.setdefault('DLPERF_PLANT_SLOWDOWN', '{share}')\n").replace("WORKLOADS", repr(WORKLOADS))
    hook = hook if share else ""
    return make_wheel(directory, "quicklog", version, {"quicklog.py": module, **({"quicklog_init.pth": hook} if hook else {})})


def pyproject(name: str, module: str) -> str:
    """A library repository's pyproject.toml: project ``name`` 1.0 of one module, built by setuptools."""
    return f'''\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "1.0"

[tool.setuptools]
py-modules = ["{module}"]
'''
