"""bench/numba_kernels.py: the kernels of bench/kernels.lua for Numba (@njit
with default options: no fastmath, bounds checks off as Numba defaults),
the same loops with 0-based indices, and a runner with the protocol of
bench/run_lua.lua:

    bench/.venv/bin/python bench/numba_kernels.py <kernel> <runs> <params...>
      -> result <median s> <min s> <runs> <checksum>

The warm-up call compiles. Times are process CPU time (time.process_time).
"""
import math
import sys
import time

import numpy as np
from numba import njit


@njit
def saxpy(n, a, x, y, out):
    for i in range(n):
        out[i] = a * x[i] + y[i]


@njit
def dot(n, x, y):
    s = 0.0
    for i in range(n):
        s = s + x[i] * y[i]
    return s


@njit
def mandelbrot(w, h, maxiter, img):
    scale = 3.0 / w
    for y in range(h):
        ci = y * scale - 1.0
        for x in range(w):
            cr = x * scale - 2.0
            zr, zi, n = 0.0, 0.0, 0
            while n < maxiter and zr * zr + zi * zi <= 4.0:
                zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
                n = n + 1
            img[y, x] = n


@njit
def nbody(nb, steps, dt, x, y, z, vx, vy, vz, m):
    for _ in range(steps):
        for i in range(nb):
            for j in range(i + 1, nb):
                dx, dy, dz = x[i] - x[j], y[i] - y[j], z[i] - z[j]
                d2 = dx * dx + dy * dy + dz * dz
                mag = dt / (d2 * math.sqrt(d2))
                mi, mj = m[i] * mag, m[j] * mag
                vx[i] = vx[i] - dx * mj
                vy[i] = vy[i] - dy * mj
                vz[i] = vz[i] - dz * mj
                vx[j] = vx[j] + dx * mi
                vy[j] = vy[j] + dy * mi
                vz[j] = vz[j] + dz * mi
        for i in range(nb):
            x[i] = x[i] + dt * vx[i]
            y[i] = y[i] + dt * vy[i]
            z[i] = z[i] + dt * vz[i]
    e = 0.0
    for i in range(nb):
        e = e + 0.5 * m[i] * (vx[i] * vx[i] + vy[i] * vy[i] + vz[i] * vz[i])
        for j in range(i + 1, nb):
            dx, dy, dz = x[i] - x[j], y[i] - y[j], z[i] - z[j]
            e = e - m[i] * m[j] / math.sqrt(dx * dx + dy * dy + dz * dz)
    return e


@njit
def matmul(n, A, B, C):
    for i in range(n):
        for j in range(n):
            s = 0.0
            for k in range(n):
                s = s + A[i, k] * B[k, j]
            C[i, j] = s


@njit
def jacobi(n, iters, A, B):
    for _ in range(iters):
        for i in range(1, n - 1):
            for j in range(1, n - 1):
                B[i, j] = 0.25 * (A[i - 1, j] + A[i + 1, j] + A[i, j - 1] + A[i, j + 1])
        A, B = B, A


@njit
def convolve(n, m, a, z, out):
    for i in range(n + m - 1):
        s = max(i - m + 1, 0)
        e = min(i, n - 1)
        acc = 0.0
        for j in range(e - s + 1):
            acc = acc + a[j + s] * z[i - j - s]
        out[i] = acc


@njit
def histogram(n, x, nbins, counts):
    for i in range(n):
        b = math.floor(x[i] * nbins)
        if b > nbins - 1:
            b = nbins - 1
        counts[b] = counts[b] + 1


@njit
def prefix_sum(n, x, out):
    s = 0.0
    for i in range(n):
        s = s + x[i]
        out[i] = s


@njit
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


# ---- inputs and checksums, as in bench/workload.lua (untimed) ----------

G1, G2 = 0.618033988749895, 0.414213562373095


@njit
def fill_frac(x, g, off):
    for i in range(1, x.shape[0] + 1):
        x[i - 1] = np.fmod(i * g, 1.0) + off


@njit
def fill_frac2(m, g, si, sj):
    for i in range(1, m.shape[0] + 1):
        for j in range(1, m.shape[1] + 1):
            m[i - 1, j - 1] = np.fmod((si * i + sj * j) * g, 1.0)


@njit
def jacobi_init(m):
    n = m.shape[0]
    for i in range(n):
        for j in range(n):
            m[i, j] = 1.0 if i == 0 else (0.5 if j == 0 else 0.0)


@njit
def seq_sum(x):
    """Sums in index order in f64 (np.sum pairs terms up: other rounding)."""
    s = 0.0
    for v in x.ravel():
        s = s + v
    return s


PI = 3.141592653589793
SOLAR_MASS = 4 * PI * PI
DAYS = 365.24
BODIES = [
    [0, 0, 0, 0, 0, 0, SOLAR_MASS],
    [4.84143144246472090e+00, -1.16032004402742839e+00, -1.03622044471123109e-01,
     1.66007664274403694e-03 * DAYS, 7.69901118419740425e-03 * DAYS,
     -6.90460016972063023e-05 * DAYS, 9.54791938424326609e-04 * SOLAR_MASS],
    [8.34336671824457987e+00, 4.12479856412430479e+00, -4.03523417114321381e-01,
     -2.76742510726862411e-03 * DAYS, 4.99852801234917238e-03 * DAYS,
     2.30417297573763929e-05 * DAYS, 2.85885980666130812e-04 * SOLAR_MASS],
    [1.28943695621391310e+01, -1.51111514016986312e+01, -2.23307578892655734e-01,
     2.96460137564761618e-03 * DAYS, 2.37847173959480950e-03 * DAYS,
     -2.96589568540237556e-05 * DAYS, 4.36624404335156298e-05 * SOLAR_MASS],
    [1.53796971148509165e+01, -2.59193146099879641e+01, 1.79258772950371181e-01,
     2.68067772490389322e-03 * DAYS, 1.62824170038242295e-03 * DAYS,
     -9.51592254519715870e-05 * DAYS, 5.15138902046611451e-05 * SOLAR_MASS],
]


def nbody_init(st):
    for i, b in enumerate(BODIES):
        for k in range(7):
            st[k][i] = b[k]
    px = py = pz = 0.0
    for b in BODIES:
        px, py, pz = px + b[3] * b[6], py + b[4] * b[6], pz + b[5] * b[6]
    st[3][0], st[4][0], st[5][0] = -px / SOLAR_MASS, -py / SOLAR_MASS, -pz / SOLAR_MASS


def vector(n, dtype=np.float64):
    return np.zeros(n, dtype=dtype)


def setup(name, p):
    """Returns (reset, run, check) closures for kernel `name`."""
    nothing = lambda: None
    if name == "saxpy":
        n, = p
        x, y, out = vector(n, np.float32), vector(n, np.float32), vector(n, np.float32)
        fx, fy = vector(n), vector(n)
        fill_frac(fx, G1, 0.0)
        fill_frac(fy, G2, 0.0)
        x[:], y[:] = fx, fy                      # rounds to f32, as a store does
        return nothing, lambda: saxpy(n, 2.0, x, y, out), lambda r: seq_sum(out)
    if name == "dot":
        n, = p
        x, y = vector(n), vector(n)
        fill_frac(x, G1, 0.0)
        fill_frac(y, G2, 0.0)
        return nothing, lambda: dot(n, x, y), lambda r: r
    if name == "mandelbrot":
        w, h, maxiter = p
        img = np.zeros((h, w), dtype=np.int32)
        return nothing, lambda: mandelbrot(w, h, maxiter, img), lambda r: seq_sum(img)
    if name == "nbody":
        steps, = p
        st = [vector(5) for _ in range(7)]
        return (lambda: nbody_init(st), lambda: nbody(5, steps, 0.01, *st), lambda r: r)
    if name == "matmul":
        n, = p
        A, B, C = (np.zeros((n, n)) for _ in range(3))
        fill_frac2(A, G1, 1, 2)
        fill_frac2(B, G2, 2, 1)
        return nothing, lambda: matmul(n, A, B, C), lambda r: seq_sum(C)
    if name == "jacobi":
        n, iters = p
        if iters % 2:
            raise SystemExit("jacobi: iters must be even")
        A, B = np.zeros((n, n)), np.zeros((n, n))
        return ((lambda: (jacobi_init(A), jacobi_init(B))), lambda: jacobi(n, iters, A, B),
                lambda r: seq_sum(A))
    if name == "convolve":
        n, m = p
        a, z, out = vector(n), vector(m), vector(n + m - 1)
        fill_frac(a, G1, 0.0)
        fill_frac(z, G2, -0.5)
        return nothing, lambda: convolve(n, m, a, z, out), lambda r: seq_sum(out)
    if name == "histogram":
        n, nbins = p
        x, counts = vector(n), np.zeros(nbins, dtype=np.int64)
        fill_frac(x, G1, 0.0)

        def check(r):
            return float(sum((b + 1) * int(c) for b, c in enumerate(counts)))
        return (lambda: counts.fill(0)), lambda: histogram(n, x, nbins, counts), check
    if name == "prefix_sum":
        n, = p
        x, out = vector(n), vector(n)
        fill_frac(x, G1, -0.5)
        return nothing, lambda: prefix_sum(n, x, out), lambda r: seq_sum(out)
    if name == "fib":
        n, = p
        return nothing, lambda: fib(n), lambda r: r
    raise SystemExit(f"numba_kernels: unknown kernel '{name}'")


def main(argv):
    if len(argv) < 4:
        raise SystemExit("usage: numba_kernels.py <kernel> <runs> <params...>")
    name, runs, params = argv[1], int(argv[2]), [int(a) for a in argv[3:]]
    reset, run, check = setup(name, params)
    reset()
    r = run()                                    # warm-up: compiles
    times = []
    for _ in range(runs):
        reset()
        t0 = time.process_time()
        r = run()
        times.append(time.process_time() - t0)
    times.sort()
    median = times[runs // 2] if runs % 2 else (times[runs // 2 - 1] + times[runs // 2]) / 2
    print("result %.9g %.9g %d %.17g" % (median, times[0], runs, float(check(r))))


if __name__ == "__main__":
    main(sys.argv)
