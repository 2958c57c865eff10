import struct, numpy as np, sys
def read(path):
    out = {}
    with open(path, "rb") as f:
        while True:
            b = f.read(4)
            if not b: break
            n = struct.unpack("<I", b)[0]
            name = f.read(n).decode()
            ne = struct.unpack("<4q", f.read(32))
            cnt = ne[0]*ne[1]*ne[2]*ne[3]
            a = np.frombuffer(f.read(4*cnt), dtype=np.float32)
            shape = [x for x in reversed(ne)]
            while len(shape) > 1 and shape[0] == 1: shape = shape[1:]
            out[name] = a.reshape(shape)
    return out
if __name__ == "__main__":
    d = read(sys.argv[1])
    for k in sorted(d): print(k, d[k].shape)
