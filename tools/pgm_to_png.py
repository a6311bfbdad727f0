#!/usr/bin/env python3
"""tools/pgm_to_png.py IN.pgm OUT.png [SCALE]: the demo's grey-level PGM
(binary P5, 8-bit) as a PNG, shrunk by an integer SCALE (box average,
default 2), with Python's standard library only (zlib). The README's
picture, docs/images/mandelbrot.png, is made this way from the image
`bash demo/run.sh` writes:
    python3 tools/pgm_to_png.py demo/mandelbrot.pgm docs/images/mandelbrot.png
"""
import struct, sys, zlib

def read_pgm(path):
    data = open(path, "rb").read()
    fields, pos = [], 0
    while len(fields) < 4:   # magic, width, height, maxval (no comments: the demo writes none)
        while data[pos:pos + 1].isspace(): pos += 1
        start = pos
        while not data[pos:pos + 1].isspace(): pos += 1
        fields.append(data[start:pos])
    if fields[0] != b"P5" or int(fields[3]) != 255:
        sys.exit("%s: not an 8-bit binary PGM" % path)
    w, h = int(fields[1]), int(fields[2])
    return w, h, data[pos + 1:pos + 1 + w * h]

def shrink(w, h, px, s):
    ow, oh = w // s, h // s
    out = bytearray(ow * oh)
    for y in range(oh):
        for x in range(ow):
            t = sum(px[(y * s + dy) * w + x * s + dx] for dy in range(s) for dx in range(s))
            out[y * ow + x] = t // (s * s)
    return ow, oh, bytes(out)

def chunk(kind, body):
    c = struct.pack(">I", len(body)) + kind + body
    return c + struct.pack(">I", zlib.crc32(kind + body) & 0xffffffff)

def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    w, h, px = read_pgm(sys.argv[1])
    w, h, px = shrink(w, h, px, int(sys.argv[3]) if len(sys.argv) == 4 else 2)
    raw = b"".join(b"\x00" + px[y * w:(y + 1) * w] for y in range(h))   # filter 0 per row
    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
    open(sys.argv[2], "wb").write(png)

main()
