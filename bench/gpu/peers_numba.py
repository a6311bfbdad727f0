# bench/gpu/peers_numba.py: the numba-cuda peers of bench_gpu.lua.
import time
import numpy as np
if not hasattr(np, "row_stack"):
    np.row_stack = np.vstack          # numba-cuda 0.30 with NumPy 2.5
from numba import cuda, float32

def out(name, v, unit):
    print(f"{name}\t{v:.4g}\t{unit}")

def events(f, runs):
    a, b = cuda.event(), cuda.event()
    f(); cuda.synchronize()
    ts = []
    for _ in range(runs):
        a.record(); f(); b.record(); b.synchronize()
        ts.append(cuda.event_elapsed_time(a, b))
    ts.sort()
    return ts[len(ts) // 2]

def launches(f):
    # as bench_gpu.lua: median of 100 batches of 100 launches, synchronized between
    for _ in range(1000): f()
    cuda.synchronize()
    per = []
    for _ in range(100):
        t0 = time.perf_counter()
        for _ in range(100): f()
        per.append((time.perf_counter() - t0) / 100 * 1e6)
        cuda.synchronize()
    per.sort()
    return per[len(per) // 2]

t0 = time.perf_counter()
@cuda.jit
def empty(): pass
empty[1, 1](); cuda.synchronize()
out("first_launch_incl_compile", (time.perf_counter() - t0) * 1e3, "ms")
out("launch_empty", launches(lambda: empty[1, 1]()), "us")

@cuda.jit
def four(a, b, s, n): pass
da, db = cuda.device_array(1024, np.float32), cuda.device_array(1024, np.float32)
out("launch_4args", launches(lambda: four[1, 1](da, db, 1.5, 3)), "us")

@cuda.jit
def saxpy(a, x, y, o):
    i = cuda.grid(1)
    if i < x.size: o[i] = a * x[i] + y[i]
n = 1 << 28
x, y, o = (cuda.device_array(n, np.float32) for _ in range(3))
ms = events(lambda: saxpy[(n + 255) // 256, 256](np.float32(2.0), x, y, o), 20)
out("saxpy_2^28_f32", ms, "ms")
out("saxpy_bandwidth", 3 * 4 * n / (ms * 1e-3) / 1e12, "TB/s")

@cuda.jit
def mandel(img, xmin, ymin, dx, dy, maxit):
    c, r = cuda.grid(2)   # x along the contiguous rows: coalesced, as in CUDA C
    if r < img.shape[0] and c < img.shape[1]:
        cx = xmin + c * dx; cy = ymin + r * dy
        x = float32(0); y = float32(0); k = 0
        while k < maxit and x * x + y * y <= float32(4):
            x, y = x * x - y * y + cx, float32(2) * x * y + cy
            k += 1
        img[r, c] = k
W = 4096
img = cuda.device_array((W, W), np.float32)
f = np.float32
out("mandelbrot_4096_f32", events(lambda: mandel[(W // 16, W // 16), (16, 16)](img, f(-2), f(-1.5), f(3 / W), f(3 / W), 256), 10), "ms")
himg = img.copy_to_host()   # the pixels bench_gpu.lua checks (1-based there)
for r, c, want in ((W // 2, W // 2, 256), (W // 2, W // 3, 256), (1, 1, 1)):
    if himg[r - 1, c - 1] != want:
        print(f"# MISMATCH mandelbrot: img[{r}][{c}] = {himg[r - 1, c - 1]}, want {want}")

# 2-D Jacobi stencil, one sweep of 8192x8192 f32
@cuda.jit
def jacobi(a, b):
    j, i = cuda.grid(2)
    if i > 0 and i < a.shape[0] - 1 and j > 0 and j < a.shape[1] - 1:
        b[i, j] = float32(0.25) * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1])
SW = 8192
ii, jj = np.meshgrid(np.arange(1, SW + 1), np.arange(1, SW + 1), indexing="ij")
ha = ((ii * 3 + jj * 5) % 17).astype(np.float32)
del ii, jj
ga, gb = cuda.to_device(ha), cuda.device_array((SW, SW), np.float32)
ms = events(lambda: jacobi[(SW // 32, SW // 8), (32, 8)](ga, gb), 20)
out("stencil_8192_f32", ms, "ms")
out("stencil_bandwidth", 2 * 4 * SW * SW / (ms * 1e-3) / 1e12, "TB/s")
hb = gb.copy_to_host()
want = np.float32(0.25) * (ha[:-2, 1:-1] + ha[2:, 1:-1] + ha[1:-1, :-2] + ha[1:-1, 2:])
if not np.array_equal(hb[1:-1, 1:-1], want):
    print("# MISMATCH stencil: interior differs from NumPy")
del ga, gb, ha, hb, want

# a shared-memory block reduction written as a kernel (the CUDA samples' tree)
@cuda.jit
def block_sum(x, o):
    s = cuda.shared.array(256, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.size else float32(0)
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:
        if t < step:
            s[t] += s[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        o[cuda.blockIdx.x] = s[0]
bn = 1 << 26
bx = cuda.to_device((np.arange(1, bn + 1) % 7).astype(np.float32))
bo = cuda.device_array(bn // 256, np.float32)
ms = events(lambda: block_sum[bn // 256, 256](bx, bo), 20)
out("block_reduce_2^26_f32", ms, "ms")
out("block_reduce_bandwidth", 4 * bn / (ms * 1e-3) / 1e12, "TB/s")
if bo.copy_to_host()[0] != sum(i % 7 for i in range(1, 257)):
    print("# MISMATCH block_reduce: out[0] differs")
del bx, bo

# vectorize: saxpy as a CUDA ufunc on the 2^28 f32 device arrays, in place
from numba import vectorize
@vectorize(["float32(float32, float32, float32)"], target="cuda")
def vsaxpy(a, xv, yv):
    return a * xv + yv
ms = events(lambda: vsaxpy(np.float32(2.0), x, y, out=o), 20)
out("vectorize_saxpy_2^28_f32", ms, "ms")
out("vectorize_saxpy_bandwidth", 3 * 4 * n / (ms * 1e-3) / 1e12, "TB/s")
del x, y, o, img

# cuda.reduce: sum of 2^26 and 2^28 f32/f64 ones on the device, the result
# returned to the host (what the call gives), as GB/s read
sum_reduce = cuda.reduce(lambda a, b: a + b)
@cuda.jit
def fill(xa, v):
    i = cuda.grid(1)
    if i < xa.size: xa[i] = v
for t, dt in (("f32", np.float32), ("f64", np.float64)):
    for lg in (26, 28):
        nr = 1 << lg
        d = cuda.device_array(nr, dt)
        fill[(nr + 255) // 256, 256](d, dt(1))
        got = sum_reduce(d)
        if abs(got - nr) > nr * 1e-6:
            print(f"# reduce_sum_2^{lg}_{t}: got {got}, want {nr}")
        ms = events(lambda: sum_reduce(d), 20)
        out(f"reduce_sum_2^{lg}_{t}", nr * np.dtype(dt).itemsize / (ms * 1e-3) / 1e9, "GB/s")
        del d
