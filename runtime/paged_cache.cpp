#include "runtime/paged_cache.h"

#include "ops/error.h"

namespace strata::runtime {

BlockAllocator::BlockAllocator(int64_t numBlocks) {
  if (numBlocks <= 0) fail("the KV cache needs at least one block, got {}", numBlocks);
  refs_.assign(numBlocks, 0);
  for (int64_t b = numBlocks - 1; b >= 0; --b) free_.push_back(b);
}

std::optional<int64_t> BlockAllocator::allocate() {
  if (free_.empty()) return std::nullopt;
  int64_t b = free_.back();
  free_.pop_back();
  refs_[b] = 1;
  return b;
}

void BlockAllocator::retain(int64_t block) {
  if (block < 0 || block >= numBlocks() || refs_[block] == 0) fail("retain of block {} that is not allocated", block);
  ++refs_[block];
}

void BlockAllocator::release(int64_t block) {
  if (block < 0 || block >= numBlocks() || refs_[block] == 0) fail("release of block {} that is not allocated", block);
  if (--refs_[block] == 0) free_.push_back(block);
}

int64_t BlockAllocator::refCount(int64_t block) const { return refs_.at(block); }

int64_t KvCacheShape::bytes() const {
  return layers * numBlocks * 2 * kvHeads * blockSize * headDim * (int64_t)ops::dtypeSize(dtype);
}

PagedKvCache::PagedKvCache(const KvCacheShape& shape) : shape_(shape), alloc_(shape.numBlocks) {
  if (shape.layers <= 0 || shape.kvHeads <= 0 || shape.headDim <= 0 || shape.blockSize <= 0)
    fail("KV cache shape invalid: {} layers, {} kv heads, head dim {}, block size {}", shape.layers, shape.kvHeads,
         shape.headDim, shape.blockSize);
  for (int64_t l = 0; l < shape.layers; ++l)
    layers_.emplace_back(shape.dtype, ops::Shape{shape.numBlocks, 2, shape.kvHeads, shape.blockSize, shape.headDim});
}

const PagedKvCache::Seq& PagedKvCache::get(int64_t seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) fail("KV cache: unknown sequence {}", seq);
  return it->second;
}

bool PagedKvCache::reserve(int64_t seq, int64_t newLength) {
  Seq& s = seqs_[seq];
  int64_t need = (newLength + shape_.blockSize - 1) / shape_.blockSize - (int64_t)s.blocks.size();
  if (need > alloc_.freeBlocks()) {
    if (s.blocks.empty() && s.length == 0) seqs_.erase(seq);
    return false;
  }
  for (int64_t i = 0; i < need; ++i) s.blocks.push_back(*alloc_.allocate());
  return true;
}

void PagedKvCache::setLength(int64_t seq, int64_t length) {
  Seq& s = const_cast<Seq&>(get(seq));
  if (length > (int64_t)s.blocks.size() * shape_.blockSize) fail("KV cache: sequence {} length {} exceeds its blocks", seq, length);
  s.length = length;
}

int64_t PagedKvCache::length(int64_t seq) const { return has(seq) ? get(seq).length : 0; }

const std::vector<int64_t>& PagedKvCache::blockTable(int64_t seq) const { return get(seq).blocks; }

int64_t PagedKvCache::slot(int64_t seq, int64_t pos) const {
  const Seq& s = get(seq);
  if (pos < 0 || pos >= (int64_t)s.blocks.size() * shape_.blockSize) fail("KV cache: position {} of sequence {} has no block", pos, seq);
  return s.blocks[pos / shape_.blockSize] * shape_.blockSize + pos % shape_.blockSize;
}

void PagedKvCache::free(int64_t seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  for (int64_t b : it->second.blocks) alloc_.release(b);
  seqs_.erase(it);
}

}  // namespace strata::runtime
