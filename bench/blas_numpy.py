# bench/blas_numpy.py: NumPy's matrix product (numpy.matmul on OpenBLAS,
# the copy NumPy ships), the NumPy peer of bench/blas.lua: the same square
# integer-valued matrices, each time the median of RUNS batches after a
# warm-up, in process CPU time (time.process_time, as os.clock there), with
# the same repetitions per batch for small sizes. The caller sets
# OPENBLAS_NUM_THREADS (bench/blas.lua: 1, unless set).
#
#   python3 bench/blas_numpy.py RUNS SIZES      e.g. 7 64,256,512
# prints "dtype n ms checksum" lines.
import sys
import time
import numpy as np

runs = int(sys.argv[1])
sizes = [int(s) for s in sys.argv[2].split(",")]

def fill(n, dt):
    i = np.arange(n * n, dtype=np.int64)
    a = ((i * 7) % 11 - 5).astype(dt).reshape(n, n)
    b = ((i * 5) % 13 - 6).astype(dt).reshape(n, n)
    return a, b

for dt in ("f64", "f32"):
    for n in sizes:
        a, b = fill(n, np.float64 if dt == "f64" else np.float32)
        reps = max(1, int(2e7 // (n * n * n)))
        c = a @ b
        t = []
        for _ in range(runs):
            t0 = time.process_time()
            for _ in range(reps):
                c = a @ b
            t.append((time.process_time() - t0) * 1e3 / reps)
        t.sort()
        m = t[len(t) // 2] if runs % 2 else (t[runs // 2 - 1] + t[runs // 2]) / 2
        print("%s %d %.6f %.1f" % (dt, n, m, float(c.sum(dtype=np.float64))), flush=True)
