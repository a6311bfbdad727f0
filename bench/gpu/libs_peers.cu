// bench/gpu/libs_peers.cu: the CUDA C peer of bench/gpu/libs.lua: the same
// gemm and FFT cases with cuBLAS and cuFFT called directly, on preallocated
// device arrays, plans made once. Prints "name<TAB>ms<TAB>ms": the median
// over 7 runs (after a warm-up) of events around 20 calls, divided by 20.
//
//   nvcc -O3 -o libs_peers bench/gpu/libs_peers.cu -lcublas -lcufft
//
// Row-major C = A B is column-major C^T = B^T A^T: cublas?gemm(N, N, n, n,
// n, 1, B, n, A, n, 0, C, n), as kjit.cuda.blas maps it. FFT sizes and axes
// as libs.lua (the last axis of a row-major array is cuFFT's innermost).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>

#define CK(x) do { auto r_ = (x); if ((int)r_ != 0) { \
  fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #x, (int)r_); exit(1); } } while (0)

static const int REPS = 20;

static double time_ms(const std::function<void()> &fn) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  fn(); CK(cudaDeviceSynchronize());
  std::vector<float> t;
  for (int r = 0; r < 7; r++) {
    CK(cudaEventRecord(a));
    for (int i = 0; i < REPS; i++) fn();
    CK(cudaEventRecord(b)); CK(cudaEventSynchronize(b));
    float ms; CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms / REPS);
  }
  std::sort(t.begin(), t.end());
  CK(cudaEventDestroy(a)); CK(cudaEventDestroy(b));
  return t[3];
}

static void *dev(size_t bytes) {
  void *p; CK(cudaMalloc(&p, bytes)); CK(cudaMemset(p, 0, bytes)); return p;
}

int main() {
  cublasHandle_t h;
  CK(cublasCreate(&h));
  int v = 0; cufftGetVersion(&v);
  printf("# cuBLAS and cuFFT %d from CUDA C\n", v);
  for (int dbl = 0; dbl < 2; dbl++)
    for (int n : { 1024, 2048, 4096 }) {
      size_t es = dbl ? 8 : 4, bytes = (size_t)n * n * es;
      void *A = dev(bytes), *B = dev(bytes), *C = dev(bytes);
      double ms;
      if (dbl) {
        double one = 1, zero = 0;
        ms = time_ms([&] { CK(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (double *)B, n,
                                          (double *)A, n, &zero, (double *)C, n)); });
      } else {
        float one = 1, zero = 0;
        ms = time_ms([&] { CK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (float *)B, n,
                                          (float *)A, n, &zero, (float *)C, n)); });
      }
      printf("gemm_%s_%d\t%.5g\tms\n", dbl ? "f64" : "f32", n, ms);
      cudaFree(A); cudaFree(B); cudaFree(C);
    }
  cublasDestroy(h);

  struct Case { const char *name; int rank; int n[3]; long long batch; cufftType type; };
  const Case cases[] = {
    { "fft_f32_1d_1M", 1, { 1 << 20 }, 1, CUFFT_C2C },
    { "fft_f64_1d_1M", 1, { 1 << 20 }, 1, CUFFT_Z2Z },
    { "fft_f32_batch_1024x1024", 1, { 1024 }, 1024, CUFFT_C2C },
    { "fft2_f32_2048x2048", 2, { 2048, 2048 }, 1, CUFFT_C2C },
    { "rfft_f32_1d_4M", 1, { 1 << 22 }, 1, CUFFT_R2C },
    { "rfftn_f32_3d_256", 3, { 256, 256, 256 }, 1, CUFFT_R2C },
  };
  for (const Case &c : cases) {
    long long total = c.batch, half = c.batch;
    for (int k = 0; k < c.rank; k++) {
      total *= c.n[k];
      half *= k == c.rank - 1 ? c.n[k] / 2 + 1 : c.n[k];
    }
    int real = c.type == CUFFT_R2C, dbl = c.type == CUFFT_Z2Z;
    size_t es = dbl ? 8 : 4;
    void *in = dev(total * es * (real ? 1 : 2)), *out = dev((real ? half : total) * es * 2);
    cufftHandle p;
    int n[3] = { c.n[0], c.n[1], c.n[2] };
    CK(cufftPlanMany(&p, c.rank, n, nullptr, 1, 0, nullptr, 1, 0, c.type, (int)c.batch));
    double ms = time_ms([&] {
      if (c.type == CUFFT_C2C) CK(cufftExecC2C(p, (cufftComplex *)in, (cufftComplex *)out, CUFFT_FORWARD));
      else if (c.type == CUFFT_Z2Z) CK(cufftExecZ2Z(p, (cufftDoubleComplex *)in, (cufftDoubleComplex *)out, CUFFT_FORWARD));
      else CK(cufftExecR2C(p, (cufftReal *)in, (cufftComplex *)out));
    });
    printf("%s\t%.5g\tms\n", c.name, ms);
    cufftDestroy(p);
    cudaFree(in); cudaFree(out);
  }
  return 0;
}
