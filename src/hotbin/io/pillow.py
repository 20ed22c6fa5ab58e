"""Pillow images as pixel arrays: every mode turned into one the luma rule reads.

:func:`pillow_pixels` owns the conversion (which modes are kept, widened or
converted to RGB(A), so palette images are counted by their colours);
:func:`is_pillow` recognizes a Pillow image without importing Pillow. Used by
:mod:`hotbin.images` and the image CLI.
"""
from __future__ import annotations

import sys

import numpy as np

__all__ = ["is_pillow", "pillow_pixels"]


def is_pillow(obj) -> bool:
    """Whether ``obj`` is a Pillow image (without importing Pillow)."""
    pil = sys.modules.get("PIL.Image")  # not imported: obj cannot be a Pillow image
    return pil is not None and isinstance(obj, pil.Image)


def pillow_pixels(im, name="image") -> np.ndarray:
    """The pixels of a Pillow image, in a mode the luma rule reads.

    Parameters
    ----------
    im : PIL.Image.Image
    name : str
        The argument's name, for error messages.

    Returns
    -------
    ndarray
        "L", "LA", "RGB", "RGBA" as they are (uint8); "1" as "L" (0 and 255);
        "I;16*" as uint16; "I" as uint16 when every value is in 0..65535 (else
        ``ValueError``); "F" as float32; "La" as "LA"; every other mode ("P", "PA",
        "RGBX", "RGBa", "CMYK", "YCbCr", ...) converted to RGB, or to RGBA when it has
        alpha or a transparency entry. Palette images are so counted by their
        colours, never by their palette indices.
    """
    mode = im.mode
    if mode in ("L", "LA", "RGB", "RGBA"):
        return np.asarray(im)
    if mode in ("1", "La"):
        return np.asarray(im.convert("L" if mode == "1" else "LA"))
    if mode.startswith("I;16"):
        return np.asarray(im).astype(np.uint16)
    if mode == "I":
        a = np.asarray(im)
        if a.size and (a.min() < 0 or a.max() > 65535):
            raise ValueError(f"{name}: 32-bit integer pixels outside 0..65535 (Pillow mode I)")
        return a.astype(np.uint16)
    if mode == "F":
        return np.asarray(im).astype(np.float32)
    has_alpha = "A" in mode or "a" in mode or "transparency" in im.info
    return np.asarray(im.convert("RGBA" if has_alpha else "RGB"))
