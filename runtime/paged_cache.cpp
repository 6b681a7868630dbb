#include "runtime/paged_cache.h"

#include <algorithm>

#include "ops/error.h"

namespace strata::runtime {

BlockAllocator::BlockAllocator(int64_t numBlocks) {
  if (numBlocks <= 0) fail("the KV cache needs at least one block, got {}", numBlocks);
  refs_.assign(numBlocks, 0);
  cached_.assign(numBlocks, 0);
  lruAt_.assign(numBlocks, lru_.end());
  for (int64_t b = numBlocks - 1; b >= 0; --b) free_.push_back(b);
}

std::optional<int64_t> BlockAllocator::allocate() {
  int64_t b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else if (!lru_.empty()) {
    b = lru_.front();
    lru_.pop_front();
    lruAt_[b] = lru_.end();
    cached_[b] = 0;
    if (onEvict) onEvict(b);
  } else {
    return std::nullopt;
  }
  refs_[b] = 1;
  return b;
}

void BlockAllocator::retain(int64_t block) {
  if (block < 0 || block >= numBlocks()) fail("retain of block {} outside the cache", block);
  if (refs_[block] == 0) {
    if (lruAt_[block] == lru_.end()) fail("retain of block {} that is not allocated", block);
    lru_.erase(lruAt_[block]);  // a cached prefix taken back before it was evicted
    lruAt_[block] = lru_.end();
  }
  ++refs_[block];
}

void BlockAllocator::release(int64_t block) {
  if (block < 0 || block >= numBlocks() || refs_[block] == 0) fail("release of block {} that is not allocated", block);
  if (--refs_[block] > 0) return;
  if (cached_[block]) lruAt_[block] = lru_.insert(lru_.end(), block);
  else free_.push_back(block);
}

void BlockAllocator::setCached(int64_t block) {
  if (block < 0 || block >= numBlocks() || refs_[block] == 0) fail("caching block {} that is not allocated", block);
  cached_[block] = 1;
}

int64_t BlockAllocator::refCount(int64_t block) const { return refs_.at(block); }

int64_t KvCacheShape::bytes() const { return blockBytes() * numBlocks; }

int64_t KvCacheShape::blockBytes() const {
  return layers * 2 * kvHeads * blockSize * headDim * (int64_t)ops::dtypeSize(dtype);
}

namespace {
void checkGeometry(const KvCacheShape& s) {
  if (s.layers <= 0 || s.kvHeads <= 0 || s.headDim <= 0 || s.blockSize <= 0)
    fail("KV cache shape invalid: {} layers, {} kv heads, head dim {}, block size {}", s.layers, s.kvHeads, s.headDim,
         s.blockSize);
}
}  // namespace

int64_t blocksForBudget(const KvCacheShape& shape, uint64_t budgetBytes) {
  checkGeometry(shape);
  int64_t blocks = (int64_t)(budgetBytes / (uint64_t)shape.blockBytes());
  if (blocks < 1)
    fail("a KV cache budget of {} bytes holds no block ({} bytes each: {} layers x K,V x {} kv heads x {} tokens x {} "
         "dims)",
         budgetBytes, shape.blockBytes(), shape.layers, shape.kvHeads, shape.blockSize, shape.headDim);
  return blocks;
}

int64_t blocksForCacheMiB(const KvCacheShape& shape, Device& device, double mib) {
  uint64_t budget = (uint64_t)(mib * 1048576.0);
  if (budget > device.capacity())
    fail("--cache-mb {}: more than the {} device's {:.0f} MiB of memory", mib, device.name(), device.capacity() / 1048576.0);
  return blocksForBudget(shape, budget);
}

int64_t defaultCacheBlocks(const KvCacheShape& shape, int64_t wanted, uint64_t availableBytes) {
  const uint64_t reserve = std::max<uint64_t>(availableBytes / 10, uint64_t(1) << 30);
  if (availableBytes <= reserve)
    fail("no memory left for a KV cache: {:.0f} MiB free, {:.0f} MiB kept for the steps' activations",
         availableBytes / 1048576.0, reserve / 1048576.0);
  return std::min(wanted, blocksForBudget(shape, availableBytes - reserve));
}

PagedKvCache::PagedKvCache(const KvCacheShape& shape, Device& device)
    : shape_(shape), device_(device), alloc_(shape.numBlocks) {
  checkGeometry(shape);
  size_t bytes = (size_t)(shape.bytes() / shape.layers);
  for (int64_t l = 0; l < shape.layers; ++l) {
    void* p = device.allocate(bytes);
    std::shared_ptr<const void> owner(p, [&device, bytes](const void* q) { device.release(const_cast<void*>(q), bytes); });
    layers_.emplace_back(shape.dtype, ops::Shape{shape.numBlocks, 2, shape.kvHeads, shape.blockSize, shape.headDim},
                         owner, p);
  }
}

const PagedKvCache::Seq& PagedKvCache::get(int64_t seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) fail("KV cache: unknown sequence {}", seq);
  return it->second;
}

bool PagedKvCache::reserve(int64_t seq, int64_t newLength) {
  Seq& s = seqs_[seq];
  const int64_t bs = shape_.blockSize;
  int64_t need = std::max<int64_t>(0, (newLength + bs - 1) / bs - (int64_t)s.blocks.size());
  // Shared blocks that the new positions will be written into.
  std::vector<size_t> shared;
  for (int64_t b = s.length / bs; b < (int64_t)s.blocks.size() && b * bs < newLength; ++b)
    if (alloc_.refCount(s.blocks[b]) > 1) shared.push_back((size_t)b);
  if (need + (int64_t)shared.size() > alloc_.freeBlocks()) {
    if (s.blocks.empty() && s.length == 0) seqs_.erase(seq);
    return false;
  }
  const size_t blockBytes = (size_t)(shape_.blockBytes() / shape_.layers);
  for (size_t b : shared) {
    int64_t fresh = *alloc_.allocate();
    for (const ops::Tensor& layer : layers_) {
      auto* base = static_cast<char*>(const_cast<void*>(layer.raw()));
      device_.copy(base + fresh * blockBytes, base + s.blocks[b] * blockBytes, blockBytes);
    }
    alloc_.release(s.blocks[b]);
    s.blocks[b] = fresh;
    ++copied_;
  }
  for (int64_t i = 0; i < need; ++i) s.blocks.push_back(*alloc_.allocate());
  return true;
}

void PagedKvCache::fork(int64_t parent, int64_t child) {
  if (has(child)) fail("KV cache: fork into sequence {}, which exists", child);
  Seq copy = get(parent);
  for (int64_t b : copy.blocks) alloc_.retain(b);
  seqs_[child] = std::move(copy);
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

void PagedKvCache::enablePrefixCache() {
  if (prefix_) return;
  prefix_ = true;
  keyOf_.assign(shape_.numBlocks, 0);
  alloc_.onEvict = [this](int64_t block) { cached_.erase(keyOf_[block]); };
}

uint64_t PagedKvCache::blockKey(uint64_t parent, std::span<const int64_t> tokens) const {
  // splitmix64 over the parent's key and the block's tokens: the key of a
  // block names every token up to its end.
  auto mix = [](uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
  };
  uint64_t h = mix(parent ^ 0x5EED);
  for (int64_t t : tokens) h = mix(h ^ (uint64_t)t);
  return h;
}

int64_t PagedKvCache::reusePrefix(int64_t seq, std::span<const int64_t> tokens) {
  if (!prefix_) return 0;
  if (has(seq)) fail("KV cache: prefix reuse for sequence {}, which exists", seq);
  const int64_t bs = shape_.blockSize;
  const int64_t most = tokens.empty() ? 0 : ((int64_t)tokens.size() - 1) / bs;
  Seq s;
  uint64_t key = 0;
  for (int64_t b = 0; b < most; ++b) {
    std::span<const int64_t> part = tokens.subspan(b * bs, bs);
    key = blockKey(key, part);
    auto it = cached_.find(key);
    if (it == cached_.end() || !std::equal(part.begin(), part.end(), it->second.tokens.begin(), it->second.tokens.end()))
      break;
    alloc_.retain(it->second.block);
    s.blocks.push_back(it->second.block);
    s.keys.push_back(key);
  }
  const int64_t length = (int64_t)s.blocks.size() * bs;
  s.length = length;
  hitTokens_ += length;
  if (length > 0) seqs_[seq] = std::move(s);
  return length;
}

void PagedKvCache::commitPrefix(int64_t seq, std::span<const int64_t> tokens) {
  if (!prefix_ || !has(seq)) return;
  Seq& s = seqs_.at(seq);
  const int64_t bs = shape_.blockSize;
  const int64_t full = std::min<int64_t>(s.length, (int64_t)tokens.size()) / bs;
  for (int64_t b = (int64_t)s.keys.size(); b < full; ++b) {
    std::span<const int64_t> part = tokens.subspan(b * bs, bs);
    uint64_t key = blockKey(b ? s.keys.back() : 0, part);
    s.keys.push_back(key);
    if (cached_.count(key)) continue;  // another block holds these tokens: this one stays private
    cached_[key] = Cached{s.blocks[b], std::vector<int64_t>(part.begin(), part.end())};
    keyOf_[s.blocks[b]] = key;
    alloc_.setCached(s.blocks[b]);
  }
}

void PagedKvCache::free(int64_t seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  for (int64_t b : it->second.blocks) alloc_.release(b);
  seqs_.erase(it);
}

}  // namespace strata::runtime
