"""A slower JPEG decoder, for benchmarks/real_data.py's second environment: once Pillow's JPEG plugin is imported
in a Python of that environment, every JPEG file it loads is decoded twice (as a libjpeg build without its SIMD
paths would cost). The project knows nothing of it: the candidate side is just another interpreter
(``python=``). Loaded by a .pth file at start-up; it touches nothing but Pillow."""
from __future__ import annotations

from dlperf_afterimport import install  # copied beside this file


def _decode_twice(module) -> None:  # noqa: ANN001 - PIL.JpegImagePlugin
    cls = module.JpegImageFile
    load = cls.load

    def twice(self):  # noqa: ANN001, ANN202
        got = load(self)
        name = getattr(self, "filename", "")
        if name and not getattr(self, "_dlperf_again", False):
            from PIL import Image

            with Image.open(name) as again:
                again._dlperf_again = True
                load(again)
        return got

    cls.load = twice


install("PIL.JpegImagePlugin", _decode_twice)
