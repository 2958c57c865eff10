import zlib, struct, random
random.seed(3)
def chunk(t, d): return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
def png(path, w, h, depth, colour, rows, palette=None):
    ch = {0:1, 2:3, 3:1, 4:2, 6:4}[colour]
    bpp = max(1, ch * depth // 8)
    raw = b''
    prev = bytes(len(rows[0]))
    for y, r in enumerate(rows):
        f = y % 5
        out = bytearray()
        for i, v in enumerate(r):
            a = r[i - bpp] if i >= bpp else 0; u = prev[i]; c = prev[i - bpp] if i >= bpp else 0
            if f == 0: p = 0
            elif f == 1: p = a
            elif f == 2: p = u
            elif f == 3: p = (a + u) // 2
            else:
                pp = a + u - c; pa, pb, pc = abs(pp - a), abs(pp - u), abs(pp - c)
                p = a if pa <= pb and pa <= pc else (u if pb <= pc else c)
            out.append((v - p) & 255)
        raw += bytes([f]) + bytes(out); prev = r
    data = b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, depth, colour, 0, 0, 0))
    if palette: data += chunk(b'PLTE', bytes(palette))
    data += chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b'')
    open(path, 'wb').write(data)
w, h = 13, 7
# 16-bit RGBA
rows=[]; exp=bytearray()
for y in range(h):
    r=bytearray()
    for x in range(w):
        px=[random.randrange(65536) for _ in range(4)]
        for v in px: r += struct.pack('>H', v)
        exp += bytes([px[0]>>8, px[1]>>8, px[2]>>8])
    rows.append(bytes(r))
png('rgba16.png', w, h, 16, 6, rows); open('rgba16.rgb','wb').write(exp)
# palette 4-bit
pal=[random.randrange(256) for _ in range(16*3)]
rows=[]; exp=bytearray()
for y in range(h):
    vals=[random.randrange(16) for _ in range(w)]
    r=bytearray((w*4+7)//8)
    for x,v in enumerate(vals):
        r[x*4//8] |= v << (4 - (x*4)%8)
        exp += bytes(pal[v*3:v*3+3])
    rows.append(bytes(r))
png('pal4.png', w, h, 4, 3, rows, pal); open('pal4.rgb','wb').write(exp)
# grey 2-bit
rows=[]; exp=bytearray()
for y in range(h):
    vals=[random.randrange(4) for _ in range(w)]
    r=bytearray((w*2+7)//8)
    for x,v in enumerate(vals):
        r[x*2//8] |= v << (6 - (x*2)%8)
        g=v*255//3; exp += bytes([g,g,g])
    rows.append(bytes(r))
png('grey2.png', w, h, 2, 0, rows); open('grey2.rgb','wb').write(exp)
# grey+alpha 8-bit
rows=[]; exp=bytearray()
for y in range(h):
    r=bytearray()
    for x in range(w):
        g=random.randrange(256); a=random.randrange(256); r+=bytes([g,a]); exp+=bytes([g,g,g])
    rows.append(bytes(r))
png('ga8.png', w, h, 8, 4, rows); open('ga8.rgb','wb').write(exp)
