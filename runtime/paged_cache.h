// The paged KV cache: fixed-size blocks of K/V per layer, a block allocator
// with reference counts, and one block table per sequence (DESIGN.md step 8).
//
// Layer l's storage is one tensor [num_blocks, 2, kv_heads, block_size,
// head_dim] (the layout region.kv_write / region.paged_attention use, see
// ops/regions.h); a sequence's token p lives in block table[p / block_size]
// at offset p % block_size. Running out of blocks is an answer (reserve()
// returns false and changes nothing), never a crash: the caller decides
// whether to wait, preempt or fail.
//
// Forked sequences share their parent's blocks (reference counts); a shared
// block is copied before the first write into it (copy-on-write, in
// reserve()), so prompts sampled several ways are stored once.
//
// Prefix caching (enablePrefixCache): a full block is keyed by a hash of its
// tokens and every token before it; a new sequence starts with the longest
// chain of cached blocks its tokens match (reusePrefix), so a shared system
// prompt is computed once. A cached block whose last sequence ends keeps its
// contents: it is evictable, and the allocator hands it out again only when
// no free block is left, least recently released first.
#pragma once
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "ops/tensor.h"
#include "runtime/device.h"

namespace strata::runtime {

class BlockAllocator {
 public:
  explicit BlockAllocator(int64_t numBlocks);
  // A free block with reference count 1, or nullopt when none is left.
  // With no free block, the least recently released evictable block is
  // taken (onEvict tells its owner first).
  std::optional<int64_t> allocate();
  // One more reference; an evictable block (no reference) is taken back.
  void retain(int64_t block);
  // Drops one reference; at zero the block is free again, or evictable
  // when it is marked cached.
  void release(int64_t block);
  // Marks a block whose contents may be reused after its last release.
  void setCached(int64_t block);
  int64_t refCount(int64_t block) const;
  // Blocks allocate() can hand out: free and evictable.
  int64_t freeBlocks() const { return (int64_t)(free_.size() + lru_.size()); }
  int64_t evictableBlocks() const { return (int64_t)lru_.size(); }
  int64_t numBlocks() const { return (int64_t)refs_.size(); }
  std::function<void(int64_t block)> onEvict;

 private:
  std::vector<int64_t> refs_;
  std::vector<int64_t> free_;  // a stack: lowest ids are handed out first
  std::vector<char> cached_;
  std::list<int64_t> lru_;     // evictable, least recently released first
  std::vector<std::list<int64_t>::iterator> lruAt_;
};

struct KvCacheShape {
  int64_t layers = 0, kvHeads = 0, headDim = 0, blockSize = 16, numBlocks = 0;
  ops::DType dtype = ops::DType::F32;
  int64_t bytes() const;
  // Bytes of one block over all layers (K and V).
  int64_t blockBytes() const;
};

// The number of blocks a memory budget holds for `shape`'s geometry
// (numBlocks ignored); throws when not even one block fits.
int64_t blocksForBudget(const KvCacheShape& shape, uint64_t budgetBytes);

// The blocks a `--cache-mb` budget of `mib` MiB holds on `device`; refused
// (naming the flag) when the budget is more than the device's memory.
int64_t blocksForCacheMiB(const KvCacheShape& shape, Device& device, double mib);

// The blocks a cache gets when the user sets no size: `wanted` (enough for
// every request at once), or fewer when they would not fit in
// `availableBytes` (the device's free memory) less a reserve for the rest
// of a step's memory (activations, logits): a tenth, at least 1 GiB. The
// scheduler then preempts when the cache fills. Throws when not one block
// fits.
int64_t defaultCacheBlocks(const KvCacheShape& shape, int64_t wanted, uint64_t availableBytes);

class PagedKvCache {
 public:
  // Storage comes from `device` (one allocation per layer, freed with the cache).
  explicit PagedKvCache(const KvCacheShape& shape, Device& device = cpuDevice());
  const KvCacheShape& shape() const { return shape_; }
  Device& device() const { return device_; }
  int64_t blockSize() const { return shape_.blockSize; }
  const ops::Tensor& layer(int64_t l) const { return layers_.at(l); }

  // Makes room for `newLength` tokens of sequence `seq` (created on first
  // use) and makes the blocks that positions [length, newLength) fall in its
  // own (copying shared ones). False, with nothing changed, when there are
  // not enough free blocks.
  bool reserve(int64_t seq, int64_t newLength);
  // `child` (new) shares all of `parent`'s blocks and its length.
  void fork(int64_t parent, int64_t child);
  // Marks `length` tokens as written (after a step).
  void setLength(int64_t seq, int64_t length);
  int64_t length(int64_t seq) const;
  const std::vector<int64_t>& blockTable(int64_t seq) const;
  // Slot of token `pos`: block * block_size + offset.
  int64_t slot(int64_t seq, int64_t pos) const;
  // Frees the sequence's blocks (shared ones lose one reference).
  void free(int64_t seq);
  bool has(int64_t seq) const { return seqs_.count(seq) != 0; }
  int64_t freeBlocks() const { return alloc_.freeBlocks(); }
  int64_t refCount(int64_t block) const { return alloc_.refCount(block); }
  // Blocks copied on write so far.
  int64_t copiedBlocks() const { return copied_; }

  // Prefix caching (off until enabled).
  void enablePrefixCache();
  bool prefixCaching() const { return prefix_; }
  // Starts `seq` (which must not exist) with the longest cached prefix of
  // `tokens` in whole blocks, leaving at least the last token to compute;
  // returns the tokens it holds (its length; 0 when nothing matched).
  int64_t reusePrefix(int64_t seq, std::span<const int64_t> tokens);
  // Registers `seq`'s full blocks (of its first length() tokens, which
  // `tokens` holds) for reuse.
  void commitPrefix(int64_t seq, std::span<const int64_t> tokens);
  // Blocks no sequence holds that keep a cached prefix (evictable).
  int64_t cachedBlocks() const { return alloc_.evictableBlocks(); }
  // Blocks sequences hold.
  int64_t usedBlocks() const { return shape_.numBlocks - alloc_.freeBlocks(); }
  // Tokens sequences started with from the prefix cache, so far.
  int64_t prefixHitTokens() const { return hitTokens_; }

 private:
  struct Seq {
    std::vector<int64_t> blocks;
    int64_t length = 0;
    std::vector<uint64_t> keys;  // prefix keys of its first keys.size() blocks
  };
  struct Cached {
    int64_t block;
    std::vector<int64_t> tokens;  // compared on a hit: a 64-bit key is not trusted alone
  };
  uint64_t blockKey(uint64_t parent, std::span<const int64_t> tokens) const;
  const Seq& get(int64_t seq) const;
  KvCacheShape shape_;
  Device& device_;
  std::vector<ops::Tensor> layers_;
  int64_t copied_ = 0;
  BlockAllocator alloc_;
  std::map<int64_t, Seq> seqs_;
  bool prefix_ = false;
  std::unordered_map<uint64_t, Cached> cached_;
  std::vector<uint64_t> keyOf_;  // block -> its key while cached
  int64_t hitTokens_ = 0;
};

}  // namespace strata::runtime
