// The GEMV form's text (GemvKernel.cpp, GemvI8Kernel.cpp): the 16-bit K
// loop, the epilogue every GEMV form ends with, and what the two quantized
// forms share (QuantRowsText). No MLIR here.
#pragma once

#include <fmt/format.h>

#include <functional>
#include <string>
#include <vector>

#include "codegen/GemmKernel.h"
#include "codegen/GemmText.h"
#include "codegen/QuantText.h"
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
  // The accumulators' columns: blockK, or a quantized form's sums reshaped
  // to a row (QuantRowsText::path).
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

// A GEMV kernel around its paths (every GEMV form): the function with its
// warps and lane vector, %c0, %c1, %bn (weight rows a program), %bm (rows
// of A a program), `constants`; the program's weight rows from %col to
// %colEnd and rows of A from %row (%Mlast: M's last row); `setup`, which
// defines %fast; zero sums of `accT`; then `fast` where %fast holds, else
// `edge`.
inline std::string kernelText(const GemmKernelSpec& s, int64_t laneVector, const std::string& constants,
                              const std::string& setup, const std::string& accT, const std::string& fast,
                              const std::string& edge) {
  return fmt::format(R"(func.func @{name}({args}) attributes {{tile.num_warps = {W} : i64, tile.lane_vector = {V} : i64{minBlocks}}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %bn = arith.constant {R} : index
  %bm = arith.constant {MA} : index
{constants}  %pn = tile.program_id 0
  %pm = tile.program_id 1
  %row = arith.muli %pm, %bm : index
  %Mlast = arith.subi %M, %c1 : index
  %col = arith.muli %pn, %bn : index
  %colEnd = arith.addi %col, %bn : index
{setup}  %zero = arith.constant dense<0.0> : {accT}
  scf.if %fast {{
{fast}  }} else {{
{edge}  }}
  return
}}
)",
                     fmt::arg("name", s.name), fmt::arg("args", gemmSignature(s)), fmt::arg("W", s.numWarps),
                     fmt::arg("V", laneVector), fmt::arg("R", s.blockN), fmt::arg("MA", s.blockM),
                     fmt::arg("constants", constants), fmt::arg("setup", setup), fmt::arg("accT", accT),
                     fmt::arg("fast", fast), fmt::arg("edge", edge),
                     fmt::arg("minBlocks", s.minBlocksPerSM
                                               ? fmt::format(", tile.min_blocks_per_sm = {} : i64", s.minBlocksPerSM)
                                               : ""));
}

// The quantized GEMV's layout (GemmKernelSpec::int8Blocks, the integer
// form, GemvI8Kernel.cpp): weight
// row n is K / Q blocks of Q values (quantBlock), its integers i8 [N, K]
// (nibbles: [N, K / 2] bytes) and a scale (and offset) a block, read as
// [KB, Wd] tiles of block rows (KB = blockK / Q, Wd = Q, or Q / 2 a nibble
// half) through views of the rows as [K / Q, bytes a block] that end with
// the row's last block (n + 1 block rows, N at most), so a row's tail
// never reads the next row and rows past N read zeros; A's row a is viewed
// the same way. Names: %m<a>, %ar<a>, %ar<a>e (A row a and its block rows),
// %n<r>, %br<r>, %br<r>e (weight row r's), %pb<w>_<r>, %ps<w>_<r>,
// %po<w>_<r> (weight w row r's integers, scales, offsets).
struct QuantRowsText {
  const GemmKernelSpec& s;
  GemvText g{s};
  int64_t Q = s.quantBlock;
  int64_t halves() const { return s.quantNibbles ? 2 : 1; }
  int64_t Wd() const { return Q / halves(); }
  int64_t KB() const { return s.blockK / Q; }
  QuantBlockText blocks() const { return {Q, s.quantNibbles, s.quantOffsets, s.quantSuper != 0, KB()}; }
  std::string scaleDt() const { return blocks().scaleDt(); }
  std::string intT() const { return blocks().intT(); }  // [KB, Wd] i8
  std::string colT(const std::string& dt) const { return blocks().colT(dt); }
  // Sum (w, r, a): weight w, weight row r, A row a.
  int64_t acc(int64_t w, int64_t r, int64_t a) const { return (w * s.blockN + r) * s.blockM + a; }

  // A row a's index and block-row range.
  std::string aRow(int64_t a) const {
    return fmt::format("  %c{a}a = arith.constant {a} : index\n  %m{a}u = arith.addi %row, %c{a}a : index\n"
                       "  %m{a} = arith.minui %m{a}u, %Mlast : index\n  %m{a}e = arith.addi %m{a}, %c1 : index\n"
                       "  %ar{a}e = arith.muli %m{a}e, %kbt : index\n  %ar{a} = arith.muli %m{a}, %kbt : index\n",
                       fmt::arg("a", a));
  }

  // Weight row r's index and block-row range, and each weight's pointers.
  std::string weightRow(int64_t r) const {
    std::string t = fmt::format("  %c{r}r = arith.constant {r} : index\n  %n{r} = arith.addi %col, %c{r}r : index\n"
                                "  %n{r}e0 = arith.addi %n{r}, %c1 : index\n  %n{r}e = arith.minui %n{r}e0, %N : index\n"
                                "  %br{r}e = arith.muli %n{r}e, %kbt : index\n  %br{r} = arith.muli %n{r}, %kbt : index\n",
                                fmt::arg("r", r));
    const std::string P = fmt::format("!tile.ptr<{}>", scaleDt());
    for (int64_t w = 0; w < g.weights(); ++w) {
      const char* sfx = w ? "2" : "";
      t += fmt::format("  %pb{w}_{r} = tile.make_block_ptr %b{s}, [%br{r}e, %cc], [%cc, %c1], [%br{r}, %c0] : "
                       "!tile.ptr<i8> -> !tile.block_ptr<{B}>\n",
                       fmt::arg("w", w), fmt::arg("r", r), fmt::arg("s", sfx), fmt::arg("B", intT()));
      auto col = [&](const char* p, const char* buf) {
        t += fmt::format("  %{p}{w}_{r} = tile.make_block_ptr %{buf}{s}, [%br{r}e, %c1], [%c1, %c1], [%br{r}, %c0] : "
                         "{P} -> !tile.block_ptr<{T}>\n",
                         fmt::arg("p", p), fmt::arg("w", w), fmt::arg("r", r), fmt::arg("buf", buf), fmt::arg("s", sfx),
                         fmt::arg("P", P), fmt::arg("T", colT(scaleDt())));
      };
      col("ps", "bsc");
      if (s.quantOffsets) col("po", "boff");
    }
    return t;
  }

  // The weights' pointers (name, block pointer type), in loop order.
  void weightPointers(std::vector<std::pair<std::string, std::string>>& p) const {
    for (int64_t w = 0; w < g.weights(); ++w)
      for (int64_t r = 0; r < s.blockN; ++r) {
        p.push_back({fmt::format("%pb{}_{}", w, r), "!tile.block_ptr<" + intT() + ">"});
        p.push_back({fmt::format("%ps{}_{}", w, r), "!tile.block_ptr<" + colT(scaleDt()) + ">"});
        if (s.quantOffsets) p.push_back({fmt::format("%po{}_{}", w, r), "!tile.block_ptr<" + colT(scaleDt()) + ">"});
      }
  }

  // A loop over block rows [from, to) of K / Q: the accumulators `inits`
  // (of `accT`) and the pointers `ptrs` (of `types`) carried; the body
  // ends with the accumulators' next values `yields`, then every pointer
  // advances a step. Results `res`#..: the accumulators, then the pointers.
  std::string loop(const std::string& res, const char* from, const char* to, const std::vector<std::string>& inits,
                   const std::string& accT, const std::vector<std::string>& ptrs,
                   const std::vector<std::pair<std::string, std::string>>& types, std::string body,
                   std::string yields) const {
    std::string args, tys;
    for (size_t i = 0; i < inits.size(); ++i) {
      args += fmt::format("{}%acc{} = {}", i ? ", " : "", i, inits[i]);
      tys += (i ? ", " : "") + accT;
    }
    for (size_t i = 0; i < ptrs.size(); ++i) {
      args += fmt::format(", %p{} = {}", i, ptrs[i]);
      tys += ", " + types[i].second;
    }
    for (size_t i = 0; i < types.size(); ++i) {
      body += fmt::format("    %q{}n = tile.advance %p{}, [%ckb, %c0] : {}\n", i, i, types[i].second);
      yields += fmt::format(", %q{}n", i);
    }
    return fmt::format("    {}:{} = scf.for %k = {} to {} step %ckb iter_args({}) -> ({}) {{\n{}      scf.yield {} : {}\n    }}\n",
                       res, inits.size() + types.size(), from, to, args, tys, body, yields, tys);
  }

  // One path: the whole steps in bounds, then the tail checked (or all of
  // K checked) by `kLoop(res, from, to, inits, ptrs, inBounds)`; the sums
  // (of `accT`, `accCols` elements) reshaped to rows, the epilogues.
  using KLoop = std::function<std::string(const std::string&, const char*, const char*, const std::vector<std::string>&,
                                          const std::vector<std::string>&, bool)>;
  std::string path(const std::string& p, bool inBounds, const std::vector<std::string>& ptrs, const std::string& accT,
                   int64_t accCols, const KLoop& kLoop) const {
    const int64_t R = s.blockN, nAcc = g.sums(), MA = s.blockM;
    std::vector<std::string> zeros(nAcc, "%zero");
    std::string text, last = "%" + p;
    if (inBounds) {
      text = kLoop("%" + p, "%c0", "%kbfull", zeros, ptrs, true);
      std::vector<std::string> accs, next;
      for (int64_t i = 0; i < nAcc; ++i) accs.push_back(fmt::format("%{}#{}", p, i));
      for (size_t i = 0; i < ptrs.size(); ++i) next.push_back(fmt::format("%{}#{}", p, nAcc + i));
      text += kLoop("%" + p + "t", "%kbfull", "%kbt", accs, next, false);
      last = "%" + p + "t";
    } else {
      text = kLoop("%" + p, "%c0", "%kbt", zeros, ptrs, false);
    }
    GemvText e{s};
    e.accCols = accCols;
    for (int64_t i = 0; i < nAcc; ++i)
      text += fmt::format("    %{p}row{i} = tile.reshape {l}#{i} : {T} -> {R}\n", fmt::arg("p", p), fmt::arg("i", i),
                          fmt::arg("l", last), fmt::arg("T", accT), fmt::arg("R", e.accT()));
    for (int64_t r = 0; r < R; ++r)
      for (int64_t a = 0; a < MA; ++a)
        text += e.epilogue(MA == 1 ? fmt::format("{}{}", p, r) : fmt::format("{}{}_{}", p, r, a), a, r,
                           [&](int64_t w) { return fmt::format("%{}row{}", p, acc(w, r, a)); },
                           inBounds ? " {in_bounds}" : "");
    return text;
  }

  // The kernel: its constants (`constants`, after the block's), the
  // program's K steps of whole block rows, `setup`, and the paths for
  // programs whose weight rows are all inside N and the others
  // (kernelText).
  std::string kernel(int64_t laneVector, const std::string& constants, const std::string& setup,
                     const std::string& accT, const std::string& fast, const std::string& edge) const {
    return kernelText(s, laneVector,
                      fmt::format(R"(  %cq = arith.constant {Q} : index
  %cc = arith.constant {C} : index
  %ch0 = arith.constant 0 : index
  %ch1 = arith.constant {Wd} : index
  %ckb = arith.constant {KB} : index
)",
                                  fmt::arg("Q", Q), fmt::arg("C", s.quantNibbles ? Q / 2 : Q), fmt::arg("Wd", Wd()),
                                  fmt::arg("KB", KB())) +
                          constants,
                      R"(  %fast = arith.cmpi sle, %colEnd, %N : index
  %kbt = arith.divui %K, %cq : index
  %kbsteps = arith.divui %kbt, %ckb : index
  %kbfull = arith.muli %kbsteps, %ckb : index
)" + setup,
                      accT, fast, edge);
  }
};

}  // namespace strata::tile::gemv
