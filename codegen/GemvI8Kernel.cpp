// The quantized GEMV's integer form (GemmKernelSpec::int8Activations):
// A's rows come quantized to i8 per block of the weights' (QuantizeKernel.h:
// integers, scales, block sums d sum(q)), and each block of a weight row is
// multiplied with them in four-way byte dot products (tile.segment_dot:
// dp4a on sm_90), whose i32 sum is scaled once a block by the product of
// the two scales, plus the weight block's offset times A's block sum. A
// lane holds one block row of a step ([KB, Wd] tiles, a lane vector of Wd
// bytes: Q values, or Q / 2 bytes a nibble half), so a block's dot
// products, its scaling and its accumulation stay in that lane; the
// [KB, 1] sums become [1, KB] rows for the GEMV epilogue. Against
// widening the weights to f32 (the form it replaced) it spends four bytes
// of weights per instruction instead of one, at the cost of A's rounding
// to 8 bits (ggml's quantized dot products round A the same way, in
// blocks of 32).
#include <fmt/format.h>

#include <map>

#include "codegen/GemmKernel.h"
#include "codegen/GemvText.h"
#include "codegen/QuantText.h"
#include "ops/error.h"

namespace strata::tile {

namespace {

struct I8GemvText : gemv::QuantRowsText {
  std::string sumT() const { return colT("i32"); }
  std::string accT() const { return colT("f32"); }

  // Pointer names: %pa<a>_<h> (A row a's integers, half h), %pas<a>,
  // %pao<a> (its scales and block sums), then the weights'.
  std::vector<std::pair<std::string, std::string>> pointers() const {
    std::vector<std::pair<std::string, std::string>> p;  // name, block pointer type
    auto bp = [](const std::string& t) { return "!tile.block_ptr<" + t + ">"; };
    for (int64_t a = 0; a < s.blockM; ++a) {
      for (int64_t h = 0; h < halves(); ++h) p.push_back({fmt::format("%pa{}_{}", a, h), bp(intT())});
      p.push_back({fmt::format("%pas{}", a), bp(colT("f32"))});
      if (s.quantOffsets) p.push_back({fmt::format("%pao{}", a), bp(colT("f32"))});
    }
    weightPointers(p);
    return p;
  }

  // The pointers at the start of K: A's integers as the weights' (a view
  // ending with the row's last block), its scales and sums as [blocks, 1].
  std::string setup() const {
    std::string t;
    for (int64_t a = 0; a < s.blockM; ++a) {
      t += aRow(a);
      for (int64_t h = 0; h < halves(); ++h)
        t += fmt::format("  %pa{a}_{h} = tile.make_block_ptr %a, [%ar{a}e, %cq], [%cq, %c1], [%ar{a}, %ch{h}] : "
                         "!tile.ptr<i8> -> !tile.block_ptr<{T}>\n",
                         fmt::arg("a", a), fmt::arg("h", h), fmt::arg("T", intT()));
      auto col = [&](const char* name, const char* buf) {
        t += fmt::format("  %{n}{a} = tile.make_block_ptr %{buf}, [%ar{a}e, %c1], [%c1, %c1], [%ar{a}, %c0] : "
                         "!tile.ptr<f32> -> !tile.block_ptr<{T}>\n",
                         fmt::arg("n", name), fmt::arg("a", a), fmt::arg("buf", buf), fmt::arg("T", colT("f32")));
      };
      col("pas", "asc");
      if (s.quantOffsets) col("pao", "asum");
    }
    for (int64_t r = 0; r < s.blockN; ++r) t += weightRow(r);
    return t;
  }

  // A loop over block rows [from, to) of K / Q, as GemvText::kLoop.
  std::string kLoop(const std::string& res, const char* from, const char* to, const std::vector<std::string>& inits,
                    const std::vector<std::string>& ptrs, bool inBounds) const {
    const auto types = pointers();
    std::string body, yields;
    const char* ib = inBounds ? " {in_bounds}" : "";
    // A lane's block row is one run of Wd bytes: in bounds on the fast
    // path; elsewhere wholly inside or outside its view (block rows past
    // the row's last block, rows past N), so masked as one.
    const std::string vattrs =
        fmt::format(" {{{}contiguous = 1 : i64, run = {} : i64}}", inBounds ? "in_bounds, " : "", Wd());
    std::map<std::string, std::string> local;  // pointer -> its loop-local name
    for (size_t i = 0; i < types.size(); ++i) local[types[i].first] = fmt::format("%p{}", i);
    // A column of f32 values (scales of f16 widened).
    auto column = [&](const std::string& name, const std::string& ptr, const std::string& dt) {
      return blocks().column(body, name, local[ptr], dt, ib);
    };
    std::vector<std::vector<std::string>> x(s.blockM);
    std::vector<std::string> xs(s.blockM), xo(s.blockM);
    for (int64_t a = 0; a < s.blockM; ++a) {
      for (int64_t h = 0; h < halves(); ++h) {
        body += fmt::format("    %x{a}_{h} = tile.load {p}{v} : !tile.block_ptr<{T}>\n", fmt::arg("a", a), fmt::arg("h", h),
                            fmt::arg("p", local[fmt::format("%pa{}_{}", a, h)]), fmt::arg("v", vattrs),
                            fmt::arg("T", intT()));
        x[a].push_back(fmt::format("%x{}_{}", a, h));
      }
      xs[a] = column(fmt::format("xs{}", a), fmt::format("%pas{}", a), "f32");
      if (s.quantOffsets) xo[a] = column(fmt::format("xo{}", a), fmt::format("%pao{}", a), "f32");
    }
    for (int64_t w = 0; w < g.weights(); ++w)
      for (int64_t r = 0; r < s.blockN; ++r) {
        const std::string id = fmt::format("{}_{}", w, r);
        body += fmt::format("    %q{id} = tile.load {p}{v} : !tile.block_ptr<{T}>\n", fmt::arg("id", id),
                            fmt::arg("p", local["%pb" + id]), fmt::arg("v", vattrs), fmt::arg("T", intT()));
        // The weights' bytes a half: nibbles are 0..15, unsigned.
        std::vector<std::string> wv = {"%q" + id};
        if (s.quantNibbles) {
          body += fmt::format("    %lo{id} = arith.andi %q{id}, %c15b : {T}\n    %hi{id} = arith.shrui %q{id}, %c4b : {T}\n",
                              fmt::arg("id", id), fmt::arg("T", intT()));
          wv = {"%lo" + id, "%hi" + id};
        }
        const std::string sw = column("sw" + id, "%ps" + id, scaleDt());
        const std::string off = s.quantOffsets ? column("of" + id, "%po" + id, scaleDt()) : "";
        for (int64_t a = 0; a < s.blockM; ++a) {
          const int64_t i = acc(w, r, a);
          std::string d = "%zi";
          for (int64_t h = 0; h < halves(); ++h) {
            body += fmt::format("    %d{i}_{h} = tile.segment_dot {x}, {wv}, {d}{u} : {T}, {T} -> {S}\n", fmt::arg("i", i),
                                fmt::arg("h", h), fmt::arg("x", x[a][h]), fmt::arg("wv", wv[h]), fmt::arg("d", d),
                                fmt::arg("u", s.quantNibbles ? " {b_unsigned}" : ""), fmt::arg("T", intT()),
                                fmt::arg("S", sumT()));
            d = fmt::format("%d{}_{}", i, h);
          }
          body += fmt::format(R"(    %df{i} = tile.convert {d} : {S} -> {F}
    %sc{i} = arith.mulf {sw}, {xs} : {F}
    %t{i} = arith.mulf %df{i}, %sc{i} fastmath<contract> : {F}
    %s{i} = arith.addf %acc{i}, %t{i} fastmath<contract> : {F}
)",
                              fmt::arg("i", i), fmt::arg("d", d), fmt::arg("S", sumT()), fmt::arg("F", accT()),
                              fmt::arg("sw", sw), fmt::arg("xs", xs[a]));
          std::string next = fmt::format("%s{}", i);
          if (s.quantOffsets) {
            body += fmt::format("    %o{i} = arith.mulf {off}, {xo} fastmath<contract> : {F}\n"
                                "    %so{i} = arith.addf %s{i}, %o{i} fastmath<contract> : {F}\n",
                                fmt::arg("i", i), fmt::arg("off", off), fmt::arg("xo", xo[a]), fmt::arg("F", accT()));
            next = fmt::format("%so{}", i);
          }
          yields += fmt::format("{}{}", i ? ", " : "", next);
        }
      }
    // Accumulators are yielded in index order (w, r, a nest as acc()).
    return loop(res, from, to, inits, accT(), ptrs, types, body, yields);
  }

  std::string path(const std::string& p, bool inBounds) const {
    std::vector<std::string> ptrs;
    for (const auto& [name, type] : pointers()) ptrs.push_back(name);
    return QuantRowsText::path(p, inBounds, ptrs, accT(), KB(),
                               [&](auto&&... a) { return kLoop(std::forward<decltype(a)>(a)...); });
  }
};

}  // namespace

std::string emitInt8ActivationGemvKernel(const GemmKernelSpec& s) {
  I8GemvText t{{s}};
  const int64_t Q = s.quantBlock, W = s.numWarps;
  if (!(Q == 16 || Q == 32) || (s.quantSuper && s.quantSuper != Q) || s.quantSubScales || !s.weightsNK ||
      s.blockM < 1 || s.blockN < 1 || W < 1 || s.blockK % (Q * W) || (t.KB() / W) % 32 || s.stages || s.groupDot ||
      s.splitKPrograms || s.packedB || s.gelu)
    fail("quantized gemv '{}' (i8 activations): [N, K] weights in blocks of 16 or 32 with f16 (quant_super = block) or "
         "f32 scales, blockK a multiple of block x warps with whole rounds of 32 blocks a warp, no staging, dots, K "
         "split or GELU",
         s.name);
  return t.kernel(t.Wd(), t.blocks().constants() + fmt::format("  %zi = arith.constant dense<0> : {}\n", t.sumT()),
                  t.setup(), t.accT(), t.path("f", true), t.path("e", false));
}

}  // namespace strata::tile
