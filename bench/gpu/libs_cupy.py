# bench/gpu/libs_cupy.py: the CuPy peer of bench/gpu/libs.lua (cupy.matmul
# on cuBLAS, cupy.fft on cuFFT with CuPy's plan cache): the same cases,
# "name<TAB>ms<TAB>ms", the median over 7 runs (after a warm-up) of events
# around 20 calls, divided by 20. CuPy allocates each result from its
# memory pool (kjit and CUDA C write into kept arrays). Without CuPy it
# prints one "# ..." line and exits 0.
try:
    import cupy as cp
except Exception as e:  # noqa: BLE001 (any import failure: no peer)
    print("# no CuPy: %s" % e)
    raise SystemExit(0)

REPS = 20

def time_ms(fn):
    fn()
    cp.cuda.Device().synchronize()
    a, b, t = cp.cuda.Event(), cp.cuda.Event(), []
    for _ in range(7):
        a.record()
        for _ in range(REPS):
            fn()
        b.record()
        b.synchronize()
        t.append(cp.cuda.get_elapsed_time(a, b) / REPS)
    return sorted(t)[3]

def filled(shape, dt):
    n = 1
    for d in shape:
        n *= d
    i = cp.arange(n, dtype=cp.int64)
    return (((i * 7919) % 1000) / 1000 - 0.5).astype(dt).reshape(shape)

print("# CuPy %s" % cp.__version__)
for dt in ("f32", "f64"):
    for n in (1024, 2048, 4096):
        t = cp.float32 if dt == "f32" else cp.float64
        a, b = filled((n, n), t), filled((n, n), t)
        c = cp.empty((n, n), t)
        print("gemm_%s_%d\t%.5g\tms" % (dt, n, time_ms(lambda: cp.matmul(a, b, out=c))), flush=True)

def cplx(shape, t, ct):
    x = filled(tuple(shape) + (2,), t)
    return (x[..., 0] + 1j * x[..., 1]).astype(ct)

cases = [
    ("fft_f32_1d_1M", lambda: cplx((1 << 20,), cp.float32, cp.complex64), cp.fft.fft),
    ("fft_f64_1d_1M", lambda: cplx((1 << 20,), cp.float64, cp.complex128), cp.fft.fft),
    ("fft_f32_batch_1024x1024", lambda: cplx((1024, 1024), cp.float32, cp.complex64), cp.fft.fft),
    ("fft2_f32_2048x2048", lambda: cplx((2048, 2048), cp.float32, cp.complex64), cp.fft.fft2),
    ("rfft_f32_1d_4M", lambda: filled((1 << 22,), cp.float32), cp.fft.rfft),
    ("rfftn_f32_3d_256", lambda: filled((256, 256, 256), cp.float32), cp.fft.rfftn),
]
for name, make, f in cases:
    x = make()
    print("%s\t%.5g\tms" % (name, time_ms(lambda: f(x))), flush=True)
