// functions.cu: external device functions in numba-cuda's calling
// convention (its documentation's ffi example, and more), linked into
// kjit kernels by tests/lua/test_cuda_interop.lua and docs/guide/cuda-interop.md:
//   extern "C" __device__ int f(T *return_value, args...)
extern "C" __device__ int mul_f32_f32(float *return_value, float x, float y) {
  *return_value = x * y;
  return 0;
}

extern "C" __device__ int sum_reduce(float *return_value, float *array, int n) {
  double sum = 0.0;
  for (int i = 0; i < n; ++i) sum += array[i];
  *return_value = (float)sum;
  return 0;
}

extern "C" __device__ int mix_ints(long long *return_value, int a, long long b, unsigned char c) {
  *return_value = (long long)a * 1000 + b * 10 + c;
  return 0;
}

extern "C" __device__ int scale_inplace(int *unused, double *a, int n, double s) {
  for (int i = 0; i < n; ++i) a[i] *= s;
  return 0;
}
