#include "codegen/GemmKernel.h"

#include <fmt/format.h>

#include "codegen/UArch.h"

namespace strata::tile {

GemmKernelSpec cpuGemmSpec(const std::string& target, bool weightsNK, int64_t rows) {
  const UArch& u = uarchFor(target);
  GemmKernelSpec s;
  s.weightsNK = weightsNK;
  if (rows <= 1) {
    s.name = "gemv";
    s.numWarps = 1;
    s.blockM = 1;
    s.blockN = 4 * u.vectorBytes / 4;
    s.blockK = 8;
    return s;
  }
  s.numWarps = 4;
  s.blockM = 4 * s.numWarps;               // 4 accumulator rows per warp
  s.blockN = 2 * u.vectorBytes / 4;        // two f32 vector registers per row
  s.blockK = 8;
  return s;
}

std::string emitGemmKernel(const GemmKernelSpec& s) {
  std::string hint = s.tiling.empty() ? "" : fmt::format(" {{tiling = \"{}\"}}", s.tiling);
  // B's view is [K, N] either way; for [N, K] storage it is transposed
  // (strides [1, K]).
  std::string bStrides = s.weightsNK ? "[%c1, %K]" : "[%N, %c1]";
  const int64_t M = s.blockM, N = s.blockN, K = s.blockK;
  std::string aT = fmt::format("tensor<{}x{}xf32>", M, K), bT = fmt::format("tensor<{}x{}xf32>", K, N),
              cT = fmt::format("tensor<{}x{}xf32>", M, N);
  std::string aP = "!tile.block_ptr<" + aT + ">", bP = "!tile.block_ptr<" + bT + ">";

  std::string args = "%a: !tile.ptr<f32>, %b: !tile.ptr<f32>, ";
  if (s.swiglu) args += "%b2: !tile.ptr<f32>, ";
  args += "%c: !tile.ptr<f32>, ";
  if (s.bias) args += s.swiglu ? "%bias: !tile.ptr<f32>, %bias2: !tile.ptr<f32>, " : "%bias: !tile.ptr<f32>, ";
  if (s.residual) args += "%res: !tile.ptr<f32>, ";
  args += "%M: index, %N: index, %K: index";

  // The K loop carries one accumulator per weight plus the block pointers.
  std::string iterArgs = "%acc = %zero, %pa = %ap, %pb = %bp", iterTypes = cT + ", " + aP + ", " + bP;
  std::string body = fmt::format(R"(    %x = tile.load %pa : {aP}
    %y = tile.load %pb : {bP}
    %d = tile.dot %x, %y, %acc{hint} : {aT} * {bT} -> {cT}
    %na = tile.advance %pa, [%c0, %bk] : {aP}
    %nb = tile.advance %pb, [%bk, %c0] : {bP}
)",
                                 fmt::arg("aP", aP), fmt::arg("bP", bP), fmt::arg("aT", aT), fmt::arg("bT", bT),
                                 fmt::arg("cT", cT), fmt::arg("hint", hint));
  std::string yields = "%d, %na, %nb", results = "%r:3";
  std::string prologue;
  if (s.swiglu) {
    prologue = fmt::format("  %bp2 = tile.make_block_ptr %b2, [%K, %N], {}, [%c0, %col] : !tile.ptr<f32> -> {}\n",
                           bStrides, bP);
    iterArgs += ", %acc2 = %zero, %pb2 = %bp2";
    iterTypes += ", " + cT + ", " + bP;
    body += fmt::format(R"(    %y2 = tile.load %pb2 : {bP}
    %d2 = tile.dot %x, %y2, %acc2 : {aT} * {bT} -> {cT}
    %nb2 = tile.advance %pb2, [%bk, %c0] : {bP}
)",
                        fmt::arg("aP", aP), fmt::arg("bP", bP), fmt::arg("aT", aT), fmt::arg("bT", bT),
                        fmt::arg("cT", cT));
    yields += ", %d2, %nb2";
    results = "%r:5";
  }

  // Epilogue on the accumulators, then one store.
  std::string epi;
  auto addBias = [&](const char* buf, const char* in, const char* out) {
    epi += fmt::format(R"(  %{o}p = tile.make_block_ptr {buf}, [%N], [%c1], [%col] : !tile.ptr<f32> -> !tile.block_ptr<tensor<{N}xf32>>
  %{o}v = tile.load %{o}p : !tile.block_ptr<tensor<{N}xf32>>
  %{o}e = tile.expand_dims %{o}v {{axis = 0 : i64}} : tensor<{N}xf32> -> tensor<1x{N}xf32>
  %{o}b = tile.broadcast %{o}e : tensor<1x{N}xf32> -> {cT}
  %{o} = arith.addf {in}, %{o}b : {cT}
)",
                       fmt::arg("o", out), fmt::arg("buf", buf), fmt::arg("in", in), fmt::arg("N", N),
                       fmt::arg("cT", cT));
  };
  std::string out = "%r#0";
  if (s.bias) {
    addBias("%bias", "%r#0", "gate");
    out = "%gate";
  }
  if (s.swiglu) {
    std::string up = "%r#3";
    if (s.bias) {
      addBias("%bias2", "%r#3", "up");
      up = "%up";
    }
    epi += fmt::format("  %act = tile.silu {} : {}\n  %glu = arith.mulf %act, {} : {}\n", out, cT, up, cT);
    out = "%glu";
  }
  if (s.residual) {
    epi += fmt::format(R"(  %rp = tile.make_block_ptr %res, [%M, %N], [%N, %c1], [%row, %col] : !tile.ptr<f32> -> !tile.block_ptr<{cT}>
  %rv = tile.load %rp : !tile.block_ptr<{cT}>
  %withres = arith.addf {in}, %rv : {cT}
)",
                       fmt::arg("cT", cT), fmt::arg("in", out));
    out = "%withres";
  }

  return fmt::format(R"(func.func @{name}({args}) attributes {{tile.num_warps = {W} : i64}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bm = arith.constant {BM} : index
  %bn = arith.constant {BN} : index
  %bk = arith.constant {BK} : index
  %pm = tile.program_id 0
  %pn = tile.program_id 1
  %row = arith.muli %pm, %bm : index
  %col = arith.muli %pn, %bn : index
  %ap = tile.make_block_ptr %a, [%M, %K], [%K, %c1], [%row, %c0] : !tile.ptr<f32> -> {aP}
  %bp = tile.make_block_ptr %b, [%K, %N], {bStrides}, [%c0, %col] : !tile.ptr<f32> -> {bP}
{prologue}  %zero = arith.constant dense<0.0> : {cT}
  {results} = scf.for %k = %c0 to %K step %bk iter_args({iterArgs}) -> ({iterTypes}) {{
{body}    scf.yield {yields} : {iterTypes}
  }}
{epi}  %cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [%row, %col] : !tile.ptr<f32> -> !tile.block_ptr<{cT}>
  tile.store %cp, {out} : !tile.block_ptr<{cT}>
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("args", args), fmt::arg("W", s.numWarps), fmt::arg("BM", M),
                     fmt::arg("BN", N), fmt::arg("BK", K), fmt::arg("aP", aP), fmt::arg("bP", bP),
                     fmt::arg("bStrides", bStrides), fmt::arg("prologue", prologue), fmt::arg("cT", cT),
                     fmt::arg("results", results), fmt::arg("iterArgs", iterArgs), fmt::arg("iterTypes", iterTypes),
                     fmt::arg("body", body), fmt::arg("yields", yields), fmt::arg("epi", epi), fmt::arg("out", out));
}

}  // namespace strata::tile
