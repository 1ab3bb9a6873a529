// allocator.hpp — a simulation of PyTorch's CUDA caching allocator for one device
// and one stream: the rules of c10/cuda/CUDACachingAllocator.cpp with its default
// configuration (no max_split_size, no roundup_power2_divisions, no garbage-collection
// threshold), so that a sequence of tensor allocations and frees gives the pool the
// allocator would reserve (torch.cuda.max_memory_reserved) beside the live bytes
// (torch.cuda.max_memory_allocated). docs/memory-model.md § Allocator replay.
//
// The rules, each from CUDACachingAllocator.cpp:
//  - a request is rounded up to a multiple of 512 B (kMinBlockSize; round_size);
//  - requests of at most 1 MiB (kSmallSize) come from the small pool, larger ones from the large pool;
//  - a new segment (cudaMalloc) is 2 MiB (kSmallBuffer) for the small pool, 20 MiB (kLargeBuffer)
//    for requests under 10 MiB (kMinLargeAlloc), else the request rounded up to 2 MiB (kRoundLarge)
//    (get_allocation_size);
//  - a request takes the smallest cached free block of its pool that is large enough (best fit:
//    BlockComparatorSize orders by stream, size, address; get_free_block);
//  - the block is split when the rest is at least 512 B (small pool) or more than 1 MiB (large
//    pool) (should_split); otherwise the whole block is handed out;
//  - a freed block merges with free neighbours of its own segment only (try_merge_blocks):
//    never across segments, which is what leaves reserved above allocated;
//  - segments are returned to the driver only by empty_cache or when a cudaMalloc fails
//    (release_cached_blocks, then one retry), so the pool only grows while memory lasts;
//  - expandable_segments:True maps pages into one growing segment per pool instead (2 MiB pages
//    for the small pool, 20 MiB for the large one: find_expandable_block), splits any block whose
//    rest is at least 512 B, and so reuses free space at the end of the segment for any request.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <set>
#include <utility>
#include <vector>

namespace gpuplan {

namespace allocator_constants {
inline constexpr std::int64_t kMinBlockSize = 512;               // all sizes are rounded to this
inline constexpr std::int64_t kSmallSize = 1 << 20;              // largest "small" allocation
inline constexpr std::int64_t kSmallBuffer = 2 << 20;            // small-pool segment
inline constexpr std::int64_t kLargeBuffer = 20 << 20;           // large-pool segment for requests under kMinLargeAlloc
inline constexpr std::int64_t kMinLargeAlloc = 10 << 20;         // requests from here get their own segment
inline constexpr std::int64_t kRoundLarge = 2 << 20;             // large segments are multiples of this
inline constexpr std::int64_t kSmallPage = 2 << 20;              // expandable small pool: 2 MiB pages
inline constexpr std::int64_t kLargePage = 20 << 20;             // expandable large pool: kLargeBuffer pages
}  // namespace allocator_constants

struct allocator_options {
  bool expandable_segments = false;  // PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
  // Device bytes the pool may grow to (0: unlimited). On a failed cudaMalloc the free
  // segments are released and the request retried once; if that fails too, the
  // allocation is an out-of-memory error (`oom` in the statistics).
  std::int64_t capacity = 0;
};

struct allocator_stats {
  std::int64_t allocated = 0, reserved = 0;            // now
  std::int64_t peak_allocated = 0, peak_reserved = 0;  // max_memory_allocated / max_memory_reserved
  std::int64_t requested = 0, peak_requested = 0;      // before the 512 B rounding
  std::int64_t segments = 0, mallocs = 0, releases = 0;
  bool oom = false;                                    // a request failed even after releasing the cache
};

// One device, one stream. alloc() returns a handle for free(); sizes are bytes.
class caching_allocator {
 public:
  explicit caching_allocator(allocator_options o = {}) : opt_(o) {}

  static constexpr std::int64_t round_size(std::int64_t size) {
    using namespace allocator_constants;
    return size < kMinBlockSize ? kMinBlockSize : kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
  }
  static constexpr std::int64_t allocation_size(std::int64_t size) {
    using namespace allocator_constants;
    if (size <= kSmallSize) return kSmallBuffer;
    if (size < kMinLargeAlloc) return kLargeBuffer;
    return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
  }

  // A handle, or -1 when even a released cache cannot hold the request (stats().oom).
  int alloc(std::int64_t bytes) {
    const std::int64_t size = round_size(std::max<std::int64_t>(bytes, 1));
    const bool small = size <= allocator_constants::kSmallSize;
    int b = take_free(small, size);
    if (b < 0) b = new_segment(small, size);
    if (b < 0) {
      st_.oom = true;
      return -1;
    }
    b = split(b, size, small);
    blocks_[b].allocated = true;
    blocks_[b].requested = bytes;
    st_.allocated += blocks_[b].size;
    st_.requested += bytes;
    st_.peak_allocated = std::max(st_.peak_allocated, st_.allocated);
    st_.peak_requested = std::max(st_.peak_requested, st_.requested);
    return b;
  }

  void free(int handle) {
    if (handle < 0 || handle >= static_cast<int>(blocks_.size()) || !blocks_[handle].allocated) return;
    block& blk = blocks_[handle];
    blk.allocated = false;
    st_.allocated -= blk.size;
    st_.requested -= blk.requested;
    int b = handle;
    b = merge(b, blk.prev);
    b = merge(b, blocks_[b].next);
    pool(blocks_[b].small).insert({blocks_[b].size, blocks_[b].addr, b});
  }

  // torch.cuda.empty_cache(): every wholly free segment back to the driver.
  void empty_cache() { release_free_segments(); }

  [[nodiscard]] const allocator_stats& stats() const { return st_; }

 private:
  struct block {
    std::int64_t addr = 0, size = 0, requested = 0;
    int prev = -1, next = -1;  // neighbours in the same segment
    bool small = false, allocated = false, live = true;
  };
  struct key {
    std::int64_t size = 0, addr = 0;
    int id = -1;
    friend bool operator<(const key& a, const key& b) { return a.size != b.size ? a.size < b.size : a.addr < b.addr; }
  };
  using free_set = std::set<key>;

  free_set& pool(bool small) { return small ? small_ : large_; }

  int take_free(bool small, std::int64_t size) {
    free_set& p = pool(small);
    const auto it = p.lower_bound({size, 0, -1});
    if (it == p.end()) return -1;
    const int b = it->id;
    p.erase(it);
    return b;
  }

  bool can_map(std::int64_t bytes) const { return opt_.capacity <= 0 || st_.reserved + bytes <= opt_.capacity; }

  // cudaMalloc of a new segment (or, expandable, more pages at the end of the pool's one segment).
  int new_segment(bool small, std::int64_t size) {
    if (opt_.expandable_segments) return grow(small, size);
    const std::int64_t seg = allocation_size(size);
    if (!can_map(seg)) {
      release_free_segments();
      if (!can_map(seg)) return -1;
    }
    st_.reserved += seg;
    st_.peak_reserved = std::max(st_.peak_reserved, st_.reserved);
    ++st_.segments;
    ++st_.mallocs;
    return make_block(next_addr_, seg, small, -1, -1);
  }

  // Expandable segments: the pool's segment grows by whole pages; the free tail is used first.
  int grow(bool small, std::int64_t size) {
    int& tail = small ? small_tail_ : large_tail_;
    std::int64_t have = 0;
    if (tail >= 0 && !blocks_[tail].allocated) {
      have = blocks_[tail].size;
      pool(small).erase({blocks_[tail].size, blocks_[tail].addr, tail});
    }
    const std::int64_t page = small ? allocator_constants::kSmallPage : allocator_constants::kLargePage;
    const std::int64_t add = page * ((size - have + page - 1) / page);
    if (!can_map(add)) {
      if (have > 0) pool(small).insert({blocks_[tail].size, blocks_[tail].addr, tail});
      return -1;
    }
    st_.reserved += add;
    st_.peak_reserved = std::max(st_.peak_reserved, st_.reserved);
    ++st_.mallocs;
    if (have > 0) {
      blocks_[tail].size += add;
      return tail;
    }
    if (tail < 0) ++st_.segments;
    const std::int64_t addr = tail >= 0 ? blocks_[tail].addr + blocks_[tail].size : next_addr_;
    const int b = make_block(addr, add, small, tail, -1);
    if (tail >= 0) blocks_[tail].next = b;
    tail = b;
    return b;
  }

  int make_block(std::int64_t addr, std::int64_t size, bool small, int prev, int next) {
    blocks_.push_back({addr, size, 0, prev, next, small, false, true});
    next_addr_ = std::max(next_addr_, addr + size) + allocator_constants::kRoundLarge;  // segments never touch
    return static_cast<int>(blocks_.size()) - 1;
  }

  // should_split: the rest becomes a free block of its own.
  int split(int b, std::int64_t size, bool small) {
    const std::int64_t rest = blocks_[b].size - size;
    const bool do_split = small || opt_.expandable_segments ? rest >= allocator_constants::kMinBlockSize
                                                            : rest > allocator_constants::kSmallSize;
    if (!do_split) return b;
    const int r = make_block(blocks_[b].addr + size, rest, small, b, blocks_[b].next);
    if (blocks_[r].next >= 0) blocks_[blocks_[r].next].prev = r;
    blocks_[b].next = r;
    blocks_[b].size = size;
    int& tail = small ? small_tail_ : large_tail_;
    if (tail == b) tail = r;
    pool(small).insert({rest, blocks_[r].addr, r});
    return b;
  }

  // try_merge_blocks: `b` absorbs (or is absorbed by) a free neighbour of the same segment.
  int merge(int b, int other) {
    if (other < 0 || blocks_[other].allocated || !blocks_[other].live) return b;
    pool(blocks_[other].small).erase({blocks_[other].size, blocks_[other].addr, other});
    const int lo = blocks_[other].addr < blocks_[b].addr ? other : b;
    const int hi = lo == b ? other : b;
    blocks_[lo].size += blocks_[hi].size;
    blocks_[lo].next = blocks_[hi].next;
    if (blocks_[lo].next >= 0) blocks_[blocks_[lo].next].prev = lo;
    blocks_[hi].live = false;
    int& tail = blocks_[lo].small ? small_tail_ : large_tail_;
    if (tail == hi) tail = lo;
    return lo;
  }

  // release_cached_blocks: free blocks that are whole segments go back to the driver.
  void release_free_segments() {
    for (free_set* p : {&small_, &large_}) {
      for (auto it = p->begin(); it != p->end();) {
        block& blk = blocks_[it->id];
        if (blk.prev < 0 && blk.next < 0) {
          st_.reserved -= blk.size;
          --st_.segments;
          ++st_.releases;
          blk.live = false;
          int& tail = blk.small ? small_tail_ : large_tail_;
          if (tail == it->id) tail = -1;
          it = p->erase(it);
        } else {
          ++it;
        }
      }
    }
  }

  allocator_options opt_;
  allocator_stats st_;
  std::vector<block> blocks_;
  free_set small_, large_;
  int small_tail_ = -1, large_tail_ = -1;  // expandable segments: the last block of each pool's segment
  std::int64_t next_addr_ = 0;
};

}  // namespace gpuplan
