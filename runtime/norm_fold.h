// An RMSNorm's weight moved into the GEMMs it feeds: rmsnorm(x) * gamma
// times W^T equals rmsnorm(x) times (W diag(gamma))^T, so with gamma folded
// into [N, K] weights the GEMM can normalize its rows of x itself (the GPU's
// GEMV form sums each row's squares as it streams it: a one-row decode step
// launches no RMSNorm kernel). Graph surgery only: the GPU executor makes
// the folded weights and decides per step whether a GEMM normalizes its
// input or an RMSNorm of unit weight runs first.
#pragma once
#include <map>
#include <string>

#include "ops/graph_def.h"

namespace strata::runtime {

struct NormFold {
  // Output value of each folded region.rmsnorm -> its epsilon. The value
  // now holds the norm's input: every consumer (a region.gemm taking it as
  // x) normalizes it.
  std::map<std::string, float> normalizedBy;
  // Each folded weight (a new name in g.weights, shape and file of its
  // source) -> its source weight (as it was in g.weights) and the norm
  // weight whose values scale its columns.
  struct Weight {
    ops::WeightRef source;
    std::string gamma;
  };
  std::map<std::string, Weight> weights;
};

// Folds every region.rmsnorm of `g` whose weight is a graph weight, whose
// output is no graph output and is read only as x (input 0) by region.gemm
// nodes with [N, K] weights of K = the norm's width: their weights become
// "<W>*<gamma>" (one per weight and norm weight pair, so a weight read
// elsewhere, like an embedding tied to lm_head, stays as it was), and
// weights no node reads any more leave g.weights. Norms that do not fit
// are left alone.
NormFold foldNormWeights(ops::GraphDef& g);

}  // namespace strata::runtime
