// strata's OpenCL C definitions of the Intel GPU built-ins that Xe kernels
// import (convert-xevm-to-llvm writes calls to them; an Intel GPU driver
// provides them natively). Linked into every Xe program built on a device
// that lacks them (Intel's CPU OpenCL runtime), so the kernels run there
// with the results the extensions specify:
//
// cl_intel_subgroup_2d_block_io, sub-group size 16:
//   intel_sub_group_2d_block_read_<E>b_<R>r<W>x<C>c(base, width, height,
//   pitch, coord, dst): C blocks of R rows x W columns of E-bit elements,
//   the first at column coord.x, row coord.y of the surface at `base`
//   (`width` and `pitch` in bytes, `height` in rows). Work-item i receives
//   column i of each block (W = 16): dst[c * R + r] = element (coord.y + r,
//   coord.x + 16 c + i). Elements outside the surface read as 0.
//   ..._read_transform_16b_<R>r16x<C>c: the same rows packed in pairs (VNNI):
//   dst[c * R / 2 + j] = row 2j | row 2j + 1 << 16.
//   ..._read_transpose_32b_16r8x1c: 16 rows x 8 columns of 32-bit elements,
//   work-item i receiving row i: dst[j] = element (coord.y + i, coord.x + j).
//   ..._write_<E>b_<R>r16x1c(base, width, height, pitch, coord, src):
//   element (coord.y + r, coord.x + i) = src[r], skipped outside the surface.
//   The surface must meet the hardware's rules (base 64-byte aligned, width
//   and pitch at least 32 bytes, width a multiple of 4 and pitch of 16 bytes
//   and at least the width, coord.x times the element size a multiple of 4):
//   where it does not, a read returns all-ones bits (NaN) and a write stores
//   them, so a kernel that breaks a rule fails its conformance test instead
//   of passing here and failing on a GPU.
//
// cl_intel_subgroup_matrix_multiply_accumulate, sub-group size 16, K = 16
// for 16-bit operands: intel_sub_group_<T>_<T>_matrix_mad_k16(short8 a, int8
// b, float8 acc), T = f16 or bf16: result[m] in work-item n = acc[m] +
// sum_k A[m][k] B[k][n], where A[m][k] is a[m] of work-item k and B[k][n] is
// half k % 2 (low half first) of b[k / 2] in work-item n. Products are
// summed in f32 (each 16-bit value is exact in f32), in k order.

#pragma OPENCL EXTENSION cl_khr_fp16 : enable

#define XE_OVERLOAD __attribute__((overloadable, noinline))

static bool xe_surface_ok(global const void* base, int width, int height, int pitch, int x, int elemBytes) {
  return ((ulong)base % 64) == 0 && width >= 32 && width % 4 == 0 && pitch >= 32 && pitch % 16 == 0 &&
         pitch >= width && height > 0 && (x * elemBytes) % 4 == 0;
}

static ulong xe_read(global const void* base, int width, int height, int pitch, int x, int y, int elemBytes) {
  if (x < 0 || y < 0 || x * elemBytes >= width || y >= height) return 0;
  global const uchar* p = (global const uchar*)base + (long)y * pitch + (long)x * elemBytes;
  if (elemBytes == 1) return *p;
  if (elemBytes == 2) return *(global const ushort*)p;
  return *(global const uint*)p;
}

static void xe_write(global void* base, int width, int height, int pitch, int x, int y, int elemBytes, uint v) {
  if (x < 0 || y < 0 || x * elemBytes >= width || y >= height) return;
  global uchar* p = (global uchar*)base + (long)y * pitch + (long)x * elemBytes;
  if (elemBytes == 1) *p = (uchar)v;
  else if (elemBytes == 2) *(global ushort*)p = (ushort)v;
  else *(global uint*)p = v;
}

#define XE_READ(E, T, R, C)                                                                                      \
  void XE_OVERLOAD intel_sub_group_2d_block_read_##E##b_##R##r16x##C##c(global void* base, int width, int height, \
                                                                        int pitch, int2 coord, private T* dst) {  \
    int lane = get_sub_group_local_id();                                                                          \
    bool ok = xe_surface_ok(base, width, height, pitch, coord.x, E / 8);                                          \
    for (int c = 0; c < C; ++c)                                                                                   \
      for (int r = 0; r < R; ++r)                                                                                 \
        dst[c * R + r] = ok ? (T)xe_read(base, width, height, pitch, coord.x + 16 * c + lane, coord.y + r, E / 8) \
                            : (T)~(T)0;                                                                           \
  }

#define XE_READ_TRANSFORM(R, C)                                                                                  \
  void XE_OVERLOAD intel_sub_group_2d_block_read_transform_16b_##R##r16x##C##c(                                 \
      global void* base, int width, int height, int pitch, int2 coord, private uint* dst) {                      \
    int lane = get_sub_group_local_id();                                                                          \
    bool ok = xe_surface_ok(base, width, height, pitch, coord.x, 2);                                              \
    for (int c = 0; c < C; ++c)                                                                                   \
      for (int j = 0; j < R / 2; ++j) {                                                                           \
        int x = coord.x + 16 * c + lane, y = coord.y + 2 * j;                                                     \
        uint lo = (uint)xe_read(base, width, height, pitch, x, y, 2);                                             \
        uint hi = (uint)xe_read(base, width, height, pitch, x, y + 1, 2);                                         \
        dst[c * (R / 2) + j] = ok ? (lo | hi << 16) : ~0u;                                                        \
      }                                                                                                           \
  }

// Transposed: R rows x W columns of 32-bit elements; work-item i receives
// row i (R = 16): dst[j] = element (coord.y + i, coord.x + j).
#define XE_READ_TRANSPOSE(R, W)                                                                                  \
  void XE_OVERLOAD intel_sub_group_2d_block_read_transpose_32b_##R##r##W##x1c(                                  \
      global void* base, int width, int height, int pitch, int2 coord, private uint* dst) {                      \
    int lane = get_sub_group_local_id();                                                                          \
    bool ok = xe_surface_ok(base, width, height, pitch, coord.x, 4);                                              \
    for (int j = 0; j < W; ++j)                                                                                   \
      dst[j] = ok ? (uint)xe_read(base, width, height, pitch, coord.x + j, coord.y + lane, 4) : ~0u;             \
  }

#define XE_WRITE(E, T, R)                                                                                        \
  void XE_OVERLOAD intel_sub_group_2d_block_write_##E##b_##R##r16x1c(global void* base, int width, int height,   \
                                                                     int pitch, int2 coord, private T* src) {    \
    int lane = get_sub_group_local_id();                                                                          \
    bool ok = xe_surface_ok(base, width, height, pitch, coord.x, E / 8);                                          \
    for (int r = 0; r < R; ++r)                                                                                   \
      xe_write(base, width, height, pitch, coord.x + lane, coord.y + r, E / 8, ok ? (uint)src[r] : ~0u);          \
  }

XE_READ(16, ushort, 1, 1)
XE_READ(16, ushort, 2, 1)
XE_READ(16, ushort, 4, 1)
XE_READ(16, ushort, 8, 1)
XE_READ(16, ushort, 16, 1)
XE_READ(16, ushort, 32, 1)
XE_READ(16, ushort, 8, 2)
XE_READ(16, ushort, 16, 2)
XE_READ(16, ushort, 32, 2)
XE_READ(32, uint, 1, 1)
XE_READ(32, uint, 2, 1)
XE_READ(32, uint, 4, 1)
XE_READ(32, uint, 8, 1)
XE_READ(32, uint, 16, 1)
XE_READ(32, uint, 32, 1)
XE_READ_TRANSFORM(16, 1)
XE_READ_TRANSFORM(32, 1)
XE_READ_TRANSFORM(16, 2)
XE_READ_TRANSFORM(32, 2)
XE_READ_TRANSPOSE(16, 8)
XE_WRITE(16, ushort, 1)
XE_WRITE(16, ushort, 2)
XE_WRITE(16, ushort, 4)
XE_WRITE(16, ushort, 8)
XE_WRITE(32, uint, 1)
XE_WRITE(32, uint, 2)
XE_WRITE(32, uint, 4)
XE_WRITE(32, uint, 8)

static float xe_f16(ushort bits) { return vload_half(0, (const private half*)&bits); }
static float xe_bf16(ushort bits) { return as_float((uint)bits << 16); }

#define XE_DPAS(T, TO_F32)                                                                          \
  float8 XE_OVERLOAD intel_sub_group_##T##_##T##_matrix_mad_k16(short8 a, int8 b, float8 acc) {   \
    short av[8];                                                                                    \
    int bv[8];                                                                                      \
    float cv[8];                                                                                    \
    vstore8(a, 0, av);                                                                              \
    vstore8(b, 0, bv);                                                                              \
    vstore8(acc, 0, cv);                                                                            \
    for (int m = 0; m < 8; ++m) {                                                                   \
      float s = cv[m];                                                                              \
      for (int k = 0; k < 16; ++k) {                                                                \
        ushort ak = (ushort)intel_sub_group_shuffle(av[m], (uint)k);                                \
        ushort bk = (ushort)((uint)bv[k / 2] >> (16 * (k % 2)));                                    \
        s += TO_F32(ak) * TO_F32(bk);                                                               \
      }                                                                                             \
      cv[m] = s;                                                                                    \
    }                                                                                               \
    return vload8(0, cv);                                                                           \
  }

XE_DPAS(f16, xe_f16)
XE_DPAS(bf16, xe_bf16)
