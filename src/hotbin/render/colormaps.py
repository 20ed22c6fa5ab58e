"""Colormaps as data: control points, interpolated to 256-entry tables on first use.

Each map is a string of six-digit hex colours (``rrggbb``, whitespace optional)
at evenly spaced positions from 0 to 1, interpolated linearly in sRGB to 256
entries by :func:`hotbin.render.shade.colormap`. The sampled maps keep 33 points of the
published 256-entry tables; the reconstruction stays within 2/255 per channel of
the originals for inferno, magma, plasma and viridis (3/255 for plasma's hue
turn), 6/255 for cividis and 13/255 for fire, whose tables have small kinks.

Sources: viridis, magma, inferno, plasma (Nathaniel J. Smith and Stéfan van der
Walt, CC0) and cividis (Jamie R. Nuñez, Christopher R. Anderton, Ryan S. Renslow,
as shipped in matplotlib); fire (Peter Kovesi's linear_kryw_0-100_c71, as shipped
in colorcet, CC-BY 4.0). ``gray`` runs from black to white.
"""
from __future__ import annotations

CONTROL_POINTS = {
    "inferno": (
        "000004 040312 0b0724 150b37 210c4a 2e0a5a 3c0965 4a0c6b"
        "57106d 63146e 70196e 7d1e6d 89226a 962766 a32b61 af315c"
        "bb3755 c63e4d d14644 db4f3b e35932 eb6528 f1711e f67f14"
        "f98d0a fb9c06 fcab0f fbba1f f9ca32 f5d949 f2e865 f3f586"
        "fcffa4"
    ),
    "magma": (
        "000004 030311 0a0822 130d33 1d1146 28115a 36106a 430f76"
        "50127c 5d177f 691c81 762181 822681 8f2a81 9c2e7f a9327d"
        "b63779 c33b75 cf4170 db486a e65163 ee5c5e f5695c f9785d"
        "fb8761 fd9668 fea571 feb47b fec387 fed194 fde0a2 fceeb0"
        "fcfdbf"
    ),
    "plasma": (
        "0d0887 220690 310596 3f049c 4c02a1 5901a5 6600a7 7201a8"
        "7e03a8 8909a6 9511a2 9f1a9c a92396 b22c8e bb3587 c33e80"
        "cb4778 d25071 d9596a e06263 e66c5c eb7555 f07f4f f48a48"
        "f89441 fb9f3a fdab33 feb72d fdc328 fcd025 f9dd25 f5eb27"
        "f0f921"
    ),
    "viridis": (
        "440154 470d60 48186a 482374 472d7b 453681 424086 3f4989"
        "3b528b 375a8d 33638d 2f6a8e 2c728e 297a8e 26818e 23898e"
        "21908c 1f988b 1f9f88 21a685 28ae80 31b57b 3ebc74 4cc26c"
        "5dc963 6ece58 82d34c 96d83f abdc32 c0df24 d5e21a eae51a"
        "fde725"
    ),
    "cividis": (
        "00224e 00285b 002e6a 043371 1a386f 273e6e 32436d 3b496c"
        "434e6c 4b546c 52596d 5a5f6e 61656f 686a71 6f7073 757676"
        "7c7b78 848179 8b8778 938d78 9b9376 a39a75 aba072 b3a670"
        "bbad6c c3b469 ccba64 d4c15f ddc958 e6d051 efd748 f8df3c"
        "fee838"
    ),
    "fire": (
        "000000 220000 320000 3e0000 4a0000 560000 630100 700100"
        "7c0200 8a0200 970300 a50400 b30500 c10700 d00900 de0d00"
        "ec1400 f62700 fb3e00 fd5400 fe6700 fe7800 ff8800 ff9700"
        "ffa401 ffb202 ffbf03 ffcc05 ffd909 ffe50e fff11e fffb73"
        "ffffff"
    ),
    "gray": "000000 ffffff",
}

#: other spellings accepted by :func:`hotbin.render.shade.colormap`
ALIASES = {"grey": "gray", "greys": "gray", "grays": "gray"}
