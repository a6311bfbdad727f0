# bench/fft_numpy.py: NumPy's FFT (numpy.fft, pocketfft), the other peer of
# bench/fft.lua: the same cases, "name microseconds-per-transform", the
# median of 5 batches of at least 0.2 s of process CPU time.
import time
import numpy as np

def signal(n, dtype):
    i = np.arange(n, dtype=np.int64)
    return ((i * 7919) % 1000 / 1000).astype(dtype)

def median_us(fn):
    t = []
    for _ in range(5):
        reps, t0 = 0, time.process_time()
        while True:
            fn()
            reps += 1
            t1 = time.process_time()
            if t1 - t0 >= 0.2:
                break
        t.append((t1 - t0) / reps * 1e6)
    return sorted(t)[2]

def cplx(n, real, cdt):
    x = signal(2 * n, real)
    return (x[0::2] + 1j * x[1::2]).astype(cdt)

cases = [
    ("fft f64 n=64", lambda: cplx(64, np.float64, np.complex128), np.fft.fft),
    ("fft f64 n=1024", lambda: cplx(1024, np.float64, np.complex128), np.fft.fft),
    ("fft f64 n=65536", lambda: cplx(65536, np.float64, np.complex128), np.fft.fft),
    ("fft f64 n=1048576", lambda: cplx(1048576, np.float64, np.complex128), np.fft.fft),
    ("fft f32 n=1024", lambda: cplx(1024, np.float32, np.complex64), np.fft.fft),
    ("fft f32 n=65536", lambda: cplx(65536, np.float32, np.complex64), np.fft.fft),
    ("fft2 f64 512x512", lambda: cplx(512 * 512, np.float64, np.complex128).reshape(512, 512), np.fft.fft2),
    ("rfft f64 n=1048576", lambda: signal(1048576, np.float64), np.fft.rfft),
    ("rfftn f64 64x64x64", lambda: signal(64 ** 3, np.float64).reshape(64, 64, 64), np.fft.rfftn),
]
for name, make, f in cases:
    x = make()
    print("%s\t%.3f" % (name, median_us(lambda: f(x))), flush=True)
