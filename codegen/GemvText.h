// The GEMV form's text (GemvKernel.cpp, GemvI8Kernel.cpp): the 16-bit K
// loop and the epilogue every GEMV form ends with. No MLIR here.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

#include "codegen/GemmKernel.h"
#include "codegen/GemmText.h"
#include "codegen/StorageText.h"

namespace strata::tile::gemv {

// Text of one GEMV kernel. Names: %m<a> is the program's row a of A and C
// (clamped to M - 1), %pa<a> its block pointer into A; %n<r> is weight row
// r's column of C, %pb<w>_<r> its block pointer into weight w (0: B, 1:
// the up projection). Sum (w, r, a) is accumulator (w R + r) MA + a.
struct GemvText {
  const GemmKernelSpec& s;
  StorageText st{s.dtype};
  int64_t weights() const { return s.swiglu ? 2 : 1; }
  int64_t rowsA() const { return s.blockM; }
  int64_t sums() const { return weights() * s.blockN * rowsA(); }
  // The accumulators' columns: blockK, or the quantized form's blockK /
  // halves (QuantGemvText: its [KB, Wd] sums reshaped to a row).
  int64_t accCols = s.blockK;
  std::string row() const { return fmt::format("1x{}", s.blockK); }
  std::string accT() const { return fmt::format("tensor<1x{}xf32>", accCols); }
  std::string ptrT() const { return st.blockPtr(row()); }
  // Elements of one 16-byte access: each lane holds its part of a row in
  // vectors of this many (the kernel's tile.lane_vector), loaded whole on
  // the fast path.
  int64_t vec() const { return st.sixteenBit() ? 8 : 4; }

  // A K loop over [from, to) from accumulators `inits` and pointers `ptrs`
  // (A's rows first, then weight w row r at MA + w blockN + r); results
  // `res`#..: the accumulators, then the pointers. `ib` marks the loads in
  // bounds.
  std::string kLoop(const std::string& res, const char* from, const char* to, const std::vector<std::string>& inits,
                    const std::vector<std::string>& ptrs, const char* ib) const {
    const int64_t nAcc = sums(), MA = rowsA();
    std::string args, types, body, yields;
    for (int64_t i = 0; i < nAcc; ++i) {
      args += fmt::format("{}%acc{} = {}", i ? ", " : "", i, inits[i]);
      types += (i ? ", " : "") + accT();
    }
    for (size_t i = 0; i < ptrs.size(); ++i) {
      args += fmt::format(", %p{} = {}", i, ptrs[i]);
      types += ", " + ptrT();
    }
    // The fast path's loads promise aligned runs of vec() along K (K % vec()
    // = 0 there, 16-byte aligned buffers).
    const std::string attrs = *ib ? fmt::format(" {{in_bounds, contiguous = 1 : i64, run = {} : i64}}", vec()) : "";
    for (int64_t a = 0; a < MA; ++a) body += st.load(fmt::format("x{}", a), fmt::format("%p{}", a), row(), attrs);
    for (int64_t j = 0; j < nAcc / MA; ++j) {
      body += st.load(fmt::format("y{}", j), fmt::format("%p{}", MA + j), row(), attrs);
      for (int64_t a = 0; a < MA; ++a) {
        const int64_t i = j * MA + a;
        body += fmt::format("    %p{i}x = arith.mulf %y{j}, %x{a} : {T}\n    %a{i} = arith.addf %acc{i}, %p{i}x : {T}\n",
                            fmt::arg("i", i), fmt::arg("j", j), fmt::arg("a", a), fmt::arg("T", accT()));
      }
    }
    for (int64_t i = 0; i < nAcc; ++i) yields += fmt::format("{}%a{}", i ? ", " : "", i);
    for (size_t i = 0; i < ptrs.size(); ++i) {
      body += fmt::format("    %q{} = tile.advance %p{}, [%c0, %bk] : {}\n", i, i, ptrT());
      yields += fmt::format(", %q{}", i);
    }
    return fmt::format("    {}:{} = scf.for %k = {} to {} step %bk iter_args({}) -> ({}) {{\n{}      scf.yield {} : {}\n    }}\n",
                       res, nAcc + ptrs.size(), from, to, args, types, body, yields, types);
  }

  // Row a's and weight row r's sums reduced, the epilogue (bias, SwiGLU,
  // residual, as the GEMM form's, on one element) and the store of C[m<a>,
  // n<r>]. `acc(w)` names weight w's accumulator. A row clamped to M - 1
  // repeats row M - 1's instructions on its inputs: it stores the same
  // bits there (C aliases neither A nor the residual).
  std::string epilogue(const std::string& p, int64_t a, int64_t r, const std::function<std::string(int64_t)>& acc,
                       const char* ib) const {
    const std::string m = fmt::format("%m{}", a);
    std::string e;
    auto one = [&](const std::string& name, const char* buf, const char* rows, const std::string& row) {
      e += fmt::format("    %{p}{n}p = tile.make_block_ptr {buf}, [{rows}, %N], [%N, %c1], [{row}, %n{r}] : {P} -> {BP}\n",
                       fmt::arg("p", p), fmt::arg("n", name), fmt::arg("buf", buf), fmt::arg("rows", rows),
                       fmt::arg("row", row), fmt::arg("r", r), fmt::arg("P", st.ptr()), fmt::arg("BP", st.blockPtr("1x1")));
      e += st.load(p + name, "%" + p + name + "p", "1x1", ib);
      return "%" + p + name;
    };
    std::string out[2];
    for (int64_t w = 0; w < weights(); ++w) {
      const std::string v = fmt::format("{}s{}", p, w);
      e += fmt::format(R"(    %{v}r = tile.reduce {acc} {{kind = "sum", axis = 1 : i64}} : {T} -> tensor<1xf32>
    %{v} = tile.expand_dims %{v}r {{axis = 1 : i64}} : tensor<1xf32> -> tensor<1x1xf32>
)",
                       fmt::arg("v", v), fmt::arg("acc", acc(w)), fmt::arg("T", accT()));
      out[w] = "%" + v;
      if (s.bias) {
        std::string b = one(fmt::format("bias{}", w), w ? "%bias2" : "%bias", "%c1", "%c0");
        e += fmt::format("    %{v}b = arith.addf {o}, {b} : tensor<1x1xf32>\n", fmt::arg("v", v), fmt::arg("o", out[w]),
                         fmt::arg("b", b));
        out[w] = "%" + v + "b";
      }
    }
    std::string o = gemm::activationText(s, p, out[0], s.swiglu ? out[1] : "", "tensor<1x1xf32>", e);
    if (s.residual) {
      std::string rv = one("res", "%res", "%M", m);
      e += fmt::format("    %{p}rs = arith.addf {o}, {rv} : tensor<1x1xf32>\n", fmt::arg("p", p), fmt::arg("o", o),
                       fmt::arg("rv", rv));
      o = "%" + p + "rs";
    }
    e += fmt::format("    %{p}cp = tile.make_block_ptr %c, [%M, %N], [%N, %c1], [{m}, %n{r}] : {P} -> {BP}\n",
                     fmt::arg("p", p), fmt::arg("m", m), fmt::arg("r", r), fmt::arg("P", st.ptr()), fmt::arg("BP", st.blockPtr("1x1")));
    return e + st.store("%" + p + "cp", o, "1x1", ib);
  }

  // One path: the K loops (whole blocks, then the tail, or all of K
  // checked) and every row's epilogue.
  std::string path(const std::string& p, bool inBounds) const {
    const int64_t R = s.blockN, nAcc = sums(), MA = rowsA();
    std::vector<std::string> zeros(nAcc, "%zero"), ptrs;
    for (int64_t a = 0; a < MA; ++a) ptrs.push_back(fmt::format("%pa{}", a));
    for (int64_t w = 0; w < weights(); ++w)
      for (int64_t r = 0; r < R; ++r) ptrs.push_back(fmt::format("%pb{}_{}", w, r));
    std::string text, last = "%" + p;
    if (inBounds) {
      text = kLoop("%" + p, "%c0", "%kfull", zeros, ptrs, " {in_bounds}");
      std::vector<std::string> accs, next;
      for (int64_t i = 0; i < nAcc; ++i) accs.push_back(fmt::format("%{}#{}", p, i));
      for (size_t i = 0; i < ptrs.size(); ++i) next.push_back(fmt::format("%{}#{}", p, nAcc + i));
      text += kLoop("%" + p + "t", "%kfull", "%K", accs, next, "");
      last = "%" + p + "t";
    } else {
      text = kLoop("%" + p, "%c0", "%K", zeros, ptrs, "");
    }
    for (int64_t r = 0; r < R; ++r)
      for (int64_t a = 0; a < MA; ++a)
        text += epilogue(MA == 1 ? fmt::format("{}{}", p, r) : fmt::format("{}{}_{}", p, r, a), a, r,
                         [&](int64_t w) { return fmt::format("{}#{}", last, (w * R + r) * MA + a); },
                         inBounds ? " {in_bounds}" : "");
    return text;
  }
};

}  // namespace strata::tile::gemv
