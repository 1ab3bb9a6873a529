// The caching-allocator simulation (allocator.hpp) against the rules of PyTorch's
// c10/cuda/CUDACachingAllocator.cpp, each derived by hand, and the training-step
// replay (replay.hpp) against the memory model it cuts into tensors.
#include <doctest/doctest.h>

#include "gpuplan/allocator.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/replay.hpp"

using namespace gpuplan;
namespace {
constexpr std::int64_t MiB = 1 << 20;
}

TEST_CASE("allocator: sizes round to 512 B; segments are 2 MiB, 20 MiB or the request rounded to 2 MiB") {
  CHECK(caching_allocator::round_size(1) == 512);
  CHECK(caching_allocator::round_size(512) == 512);
  CHECK(caching_allocator::round_size(513) == 1024);
  CHECK(caching_allocator::allocation_size(1 * MiB) == 2 * MiB);         // small pool
  CHECK(caching_allocator::allocation_size(1 * MiB + 512) == 20 * MiB);  // large, under 10 MiB
  CHECK(caching_allocator::allocation_size(10 * MiB) == 10 * MiB);       // its own segment
  CHECK(caching_allocator::allocation_size(11 * MiB + 1) == 12 * MiB);   // rounded up to 2 MiB
}

TEST_CASE("allocator: small requests share one 2 MiB segment until it is full") {
  caching_allocator a;
  for (int i = 0; i < 4; ++i) a.alloc(512 * 1024);  // 4 x 0.5 MiB = one 2 MiB segment, split each time
  CHECK(a.stats().reserved == 2 * MiB);
  CHECK(a.stats().segments == 1);
  a.alloc(1);  // no room left: a second small segment
  CHECK(a.stats().reserved == 4 * MiB);
  CHECK(a.stats().allocated == 2 * MiB + 512);
}

TEST_CASE("allocator: a large block is split only when more than 1 MiB would remain") {
  caching_allocator a;
  const int x = a.alloc(19 * MiB);  // a 20 MiB segment; the 1 MiB rest is not > 1 MiB: no split
  CHECK(a.stats().allocated == 20 * MiB);
  a.free(x);
  const int y = a.alloc(2 * MiB);  // the cached 20 MiB block, split: 18 MiB stays free
  CHECK(a.stats().allocated == 2 * MiB);
  CHECK(a.stats().reserved == 20 * MiB);
  const int z = a.alloc(18 * MiB);  // best fit: the 18 MiB rest, no new segment
  CHECK(a.stats().reserved == 20 * MiB);
  a.free(y);
  a.free(z);  // merges back into one free 20 MiB block
  a.alloc(20 * MiB);
  CHECK(a.stats().reserved == 20 * MiB);
}

TEST_CASE("allocator: free blocks never merge across segments, so reserved exceeds what is live") {
  // Two 12 MiB tensors get two 12 MiB segments; freed, their 24 MiB cannot hold one 16 MiB
  // tensor: a third segment (16 MiB) is reserved while 16 MiB are live — 40 MiB reserved.
  caching_allocator a;
  const int p = a.alloc(12 * MiB), q = a.alloc(12 * MiB);
  a.free(p);
  a.free(q);
  a.alloc(16 * MiB);
  CHECK(a.stats().allocated == 16 * MiB);
  CHECK(a.stats().reserved == 40 * MiB);
  CHECK(a.stats().peak_reserved == 40 * MiB);
}

TEST_CASE("allocator: expandable segments reuse the free end of one growing segment") {
  // Two 20 MiB tensors, freed, then 30 MiB: segmented, two 20 MiB segments that never merge
  // and a third of 30 MiB (70 MiB); expandable, one segment of two 20 MiB pages whose free
  // 40 MiB holds the 30 MiB tensor (40 MiB).
  for (const bool expandable : {false, true}) {
    caching_allocator a({.expandable_segments = expandable});
    const int p = a.alloc(20 * MiB), q = a.alloc(20 * MiB);
    a.free(p);
    a.free(q);
    a.alloc(30 * MiB);
    CHECK(a.stats().reserved == (expandable ? 40 : 70) * MiB);
  }
  // Growing past the end maps whole 20 MiB pages for the large pool: 30 MiB live, a 10 MiB free
  // tail; 25 MiB more takes the tail and one page (60 MiB).
  caching_allocator a({.expandable_segments = true});
  a.alloc(30 * MiB);
  CHECK(a.stats().reserved == 40 * MiB);
  a.alloc(25 * MiB);
  CHECK(a.stats().reserved == 60 * MiB);
  // The small pool grows by 2 MiB pages.
  a.alloc(512 * 1024);
  CHECK(a.stats().reserved == 62 * MiB);
}

TEST_CASE("allocator: at capacity, cached segments are released and the request retried; beyond it, OOM") {
  caching_allocator a({.capacity = 40 * MiB});
  const int p = a.alloc(12 * MiB), q = a.alloc(12 * MiB);
  a.free(p);
  a.free(q);
  CHECK(a.alloc(30 * MiB) >= 0);  // 24 + 30 > 40: both cached segments go back, then 30 MiB fit
  CHECK(a.stats().releases == 2);
  CHECK(a.stats().reserved == 30 * MiB);
  CHECK_FALSE(a.stats().oom);
  CHECK(a.alloc(12 * MiB) < 0);  // 30 + 12 > 40 and nothing cached to release
  CHECK(a.stats().oom);
}

TEST_CASE("replay: a training run's pool is at least its live tensors and its peak comes from two steps") {
  const architecture& m = io::find_model("llama-2-7b");
  scenario s;
  s.meth = method::lora;
  s.seq_len = 2048;
  s.micro_batch = 4;
  s.ckpt = checkpointing::full;
  s.gpu = io::find_gpu("a100-80gb");
  const run r(m, s);
  const allocator_replay rp = replay_allocator(r);
  REQUIRE(rp.replayed);
  CHECK(rp.ratio >= 1.0);
  CHECK(rp.ratio < 1.5);
  CHECK(rp.peak_reserved >= rp.peak_allocated);
  CHECK(rp.tensors > 2 * 32 * 7);  // at least the 7 linears of 32 blocks, twice
  // The replay cuts the model's own terms: its live peak is within a quarter of the fast path's.
  const double fast = in_bytes(estimate_memory(r).peak_allocated);
  CHECK(rp.peak_allocated == doctest::Approx(fast).epsilon(0.25));
  // Expandable segments never reserve more than the segmented pool here.
  const allocator_replay ex = replay_allocator(r, {.expandable_segments = true});
  CHECK(ex.peak_reserved <= rp.peak_reserved);
}

TEST_CASE("replay: serving runs are not replayed (engines preallocate their pool)") {
  scenario s;
  s.work = workload::infer;
  s.gpu = io::find_gpu("a100-80gb");
  const run r(io::find_model("llama-2-7b"), s);
  CHECK_FALSE(replay_allocator(r).replayed);
}
