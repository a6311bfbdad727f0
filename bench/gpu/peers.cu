// bench/gpu/peers.cu: the CUDA C peers of bench_gpu.lua (nvcc -O3 -arch=sm_90).
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cmath>
#include <vector>
#include <cuda_runtime.h>

__global__ void empty() {}
__global__ void four(float *a, float *b, float s, long long n) {}
__global__ void saxpy(float a, const float *x, const float *y, float *out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
__global__ void mandel(float *img, int w, int h, float xmin, float ymin, float dx, float dy, int maxit) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < h && c < w) {
    float cx = xmin + c * dx, cy = ymin + r * dy, x = 0, y = 0;
    int k = 0;
    while (k < maxit && x * x + y * y <= 4.0f) { float t = x * x - y * y + cx; y = 2.0f * x * y + cy; x = t; k++; }
    img[(long long)r * w + c] = k;
  }
}

__global__ void fill_mod7(float *x, long long n, float v) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] = v + (i + 1) % 7;   // kjit's 1-based x[i] = v + i % 7
}
__global__ void jacobi(const float *a, float *b, int h, int w) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i > 0 && i < h - 1 && j > 0 && j < w - 1)
    b[(long long)i * w + j] = 0.25f * (a[(long long)(i - 1) * w + j] + a[(long long)(i + 1) * w + j] +
                                       a[(long long)i * w + j - 1] + a[(long long)i * w + j + 1]);
}
__global__ void init_grid(float *a, int h, int w) {
  int j = blockIdx.x * blockDim.x + threadIdx.x, i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i < h && j < w) a[(long long)i * w + j] = ((i + 1) * 3 + (j + 1) * 5) % 17;
}
// the shared-memory tree of the CUDA samples, as bench_gpu.lua writes it
__global__ void block_sum(const float *x, float *out, long long n) {
  __shared__ float s[256];
  int t = threadIdx.x;
  long long i = blockIdx.x * (long long)blockDim.x + t;
  s[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int step = blockDim.x / 2; step > 0; step /= 2) {
    if (t < step) s[t] += s[t + step];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// mandel with a 64-bit iteration count, as Lua integers are (and kjit's is)
__global__ void mandel64(float *img, int w, int h, float xmin, float ymin, float dx, float dy, long long maxit) {
  int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < h && c < w) {
    float cx = xmin + c * dx, cy = ymin + r * dy, x = 0, y = 0;
    long long k = 0;
    while (k < maxit && x * x + y * y <= 4.0f) { float t = x * x - y * y + cx; y = 2.0f * x * y + cy; x = t; k++; }
    img[(long long)r * w + c] = k;
  }
}

// Sum reduction, as a CUDA C programmer writes it: a grid-stride loop with
// four independent loads in flight per thread, warp shuffles, one partial per
// block; a second launch of the same kernel (one block) sums the partials.
template <class T> __global__ void reduce_sum(const T *x, T *part, long long n) {
  __shared__ T warps[32];
  long long stride = (long long)gridDim.x * blockDim.x;
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  T acc = 0;
  for (; i + 3 * stride < n; i += 4 * stride) {
    T a = x[i], b = x[i + stride], c = x[i + 2 * stride], d = x[i + 3 * stride];
    acc += a + b + c + d;
  }
  for (; i < n; i += stride) acc += x[i];
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) warps[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x < 32) {
    acc = threadIdx.x < (blockDim.x >> 5) ? warps[threadIdx.x] : T(0);
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if (threadIdx.x == 0) part[blockIdx.x] = acc;
  }
}
template <class T> __global__ void fill(T *x, long long n, T v) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] = v;
}

template <class F> static float events(F f, int runs) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  f(); cudaDeviceSynchronize();
  std::vector<float> t;
  for (int i = 0; i < runs; i++) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms); }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// as bench_gpu.lua: median of 100 batches of 100 launches, synchronized between
template <class F> static double launches(F f) {
  for (int i = 0; i < 1000; i++) f();
  cudaDeviceSynchronize();
  std::vector<double> per;
  for (int b = 0; b < 100; b++) {
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 100; i++) f();
    auto t1 = std::chrono::steady_clock::now();
    per.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 100);
    cudaDeviceSynchronize();
  }
  std::sort(per.begin(), per.end());
  return per[per.size() / 2];
}

template <class T> static void reduce_bench(const char *name, int sms) {
  const int block = 256, maxblocks = sms * 8;
  T *part, *res;
  cudaMalloc(&part, maxblocks * sizeof(T)); cudaMalloc(&res, sizeof(T));
  for (int lg : {26, 28}) {
    long long n = 1LL << lg;
    T *x; cudaMalloc(&x, n * sizeof(T));
    fill<T><<<(n + 255) / 256, 256>>>(x, n, T(1));
    int nb = (int)std::min<long long>((n + block - 1) / block, maxblocks);
    T h = 0;
    // timed as kjit's and numba's calls are: both kernels and the result back on the host
    auto call = [&] {
      reduce_sum<T><<<nb, block>>>(x, part, n);
      reduce_sum<T><<<1, block>>>(part, res, nb);
      cudaMemcpy(&h, res, sizeof(T), cudaMemcpyDeviceToHost);
    };
    float ms = events(call, 20);
    if (std::abs((double)h - (double)n) > n * 1e-6) printf("# reduce_sum_2^%d_%s: got %g, want %lld\n", lg, name, (double)h, n);
    printf("reduce_sum_2^%d_%s\t%.4g\tGB/s\n", lg, name, n * sizeof(T) / (ms * 1e-3) / 1e9);
    cudaFree(x);
  }
  cudaFree(part); cudaFree(res);
}

int main() {
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) { printf("# CUDA C: no GPU\n"); return 0; }
  float *a, *b;
  cudaMalloc(&a, 4096); cudaMalloc(&b, 4096);
  printf("launch_empty\t%.4g\tus\n", launches([] { empty<<<1, 1>>>(); }));
  printf("launch_4args\t%.4g\tus\n", launches([&] { four<<<1, 1>>>(a, b, 1.5f, 3); }));
  long long n = 1LL << 28;
  float *x, *y, *o;
  cudaMalloc(&x, n * 4); cudaMalloc(&y, n * 4); cudaMalloc(&o, n * 4);
  float ms = events([&] { saxpy<<<(n + 255) / 256, 256>>>(2.0f, x, y, o, n); }, 20);
  printf("saxpy_2^28_f32\t%.4g\tms\n", ms);
  printf("saxpy_bandwidth\t%.4g\tTB/s\n", 3.0 * 4 * n / (ms * 1e-3) / 1e12);
  float cms = events([&] { cudaMemcpy(o, x, n * 4, cudaMemcpyDeviceToDevice); }, 20);
  printf("copy_bandwidth\t%.4g\tTB/s\n", 2.0 * 4 * n / (cms * 1e-3) / 1e12);
  int W = 4096;
  float *img; cudaMalloc(&img, (long long)W * W * 4);
  dim3 blk(16, 16), grd(W / 16, W / 16);
  printf("mandelbrot_4096_f32\t%.4g\tms\n", events([&] { mandel<<<grd, blk>>>(img, W, W, -2.0f, -1.5f, 3.0f / W, 3.0f / W, 256); }, 10));
  printf("mandelbrot_4096_f32_i64_count\t%.4g\tms\n", events([&] { mandel64<<<grd, blk>>>(img, W, W, -2.0f, -1.5f, 3.0f / W, 3.0f / W, 256); }, 10));
  for (auto p : {std::vector<int>{W / 2, W / 2, 256}, {W / 2, W / 3, 256}, {1, 1, 1}}) {  // 1-based, as bench_gpu.lua
    float h; cudaMemcpy(&h, img + (long long)(p[0] - 1) * W + p[1] - 1, 4, cudaMemcpyDeviceToHost);
    if (h != p[2]) printf("# MISMATCH mandelbrot: img[%d][%d] = %g, want %d\n", p[0], p[1], h, p[2]);
  }
  {
    const int SW = 8192;
    float *ga, *gb; cudaMalloc(&ga, (long long)SW * SW * 4); cudaMalloc(&gb, (long long)SW * SW * 4);
    dim3 sb(32, 8), sg(SW / 32, SW / 8);
    init_grid<<<sg, sb>>>(ga, SW, SW);
    float sms = events([&] { jacobi<<<sg, sb>>>(ga, gb, SW, SW); }, 20);
    printf("stencil_8192_f32\t%.4g\tms\n", sms);
    printf("stencil_bandwidth\t%.4g\tTB/s\n", 2.0 * 4 * SW * SW / (sms * 1e-3) / 1e12);
    float h; cudaMemcpy(&h, gb + (long long)(SW / 2 - 1) * SW + SW / 3 - 1, 4, cudaMemcpyDeviceToHost);
    auto av = [](int i, int j) { return (float)((i * 3 + j * 5) % 17); };
    int i = SW / 2, j = SW / 3;  // 1-based, as bench_gpu.lua checks it
    float want = 0.25f * (av(i - 1, j) + av(i + 1, j) + av(i, j - 1) + av(i, j + 1));
    if (h != want) printf("# MISMATCH stencil: b[%d][%d] = %g, want %g\n", i, j, h, want);
    cudaFree(ga); cudaFree(gb);
  }
  {
    long long bn = 1LL << 26;
    float *bx, *bo; cudaMalloc(&bx, bn * 4); cudaMalloc(&bo, bn / 256 * 4);
    fill_mod7<<<bn / 256, 256>>>(bx, bn, 0.0f);
    float bms = events([&] { block_sum<<<bn / 256, 256>>>(bx, bo, bn); }, 20);
    printf("block_reduce_2^26_f32\t%.4g\tms\n", bms);
    printf("block_reduce_bandwidth\t%.4g\tTB/s\n", 4.0 * bn / (bms * 1e-3) / 1e12);
    float h; cudaMemcpy(&h, bo, 4, cudaMemcpyDeviceToHost);
    float want = 0; for (int i = 1; i <= 256; i++) want += i % 7;
    if (h != want) printf("# MISMATCH block_reduce: out[1] = %g, want %g\n", h, want);
    cudaFree(bx); cudaFree(bo);
  }
  // the peer of kjit.vectorize's and numba's CUDA ufunc: the same element-wise kernel
  printf("vectorize_saxpy_2^28_f32\t%.4g\tms\n", ms = events([&] { saxpy<<<(n + 255) / 256, 256>>>(2.0f, x, y, o, n); }, 20));
  printf("vectorize_saxpy_bandwidth\t%.4g\tTB/s\n", 3.0 * 4 * n / (ms * 1e-3) / 1e12);
  cudaFree(x); cudaFree(y); cudaFree(o); cudaFree(img);
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  reduce_bench<float>("f32", sms);
  reduce_bench<double>("f64", sms);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) { fprintf(stderr, "CUDA error: %s\n", cudaGetErrorString(e)); return 1; }
  return 0;
}
