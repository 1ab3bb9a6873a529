// recommend_graph over image and diffusion workloads (plan/graph_recommend.hpp), the
// workloads a query builds from the published recipes (io/graph_plan.hpp), and the
// allocator's pool for graph estimates (vision.hpp, diffusion.hpp). Figures are derived
// in the comments.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "gpuplan/diffusion.hpp"
#include "gpuplan/io/catalog.hpp"
#include "gpuplan/io/graph_plan.hpp"
#include "gpuplan/io/graph_query.hpp"
#include "gpuplan/plan/graph_recommend.hpp"
#include "gpuplan/vision.hpp"

// Each test file in its own namespace: the suite is compiled in batches (unity build).
namespace unit_graph_recommend {

using namespace gpuplan;
namespace df = gpuplan::diffusion;

namespace {

// A workload whose step is known in closed form: device = 1 GB + 1 GB per sample of the
// micro-batch; a micro-step takes 10 ms + 1 ms per sample; the optimizer 20 ms; the exposed
// all-reduce 5 ms per GPU beyond the first.
graph_workload synthetic(std::int64_t global_batch, double samples) {
  graph_workload w;
  w.name = "synthetic";
  w.global_batch = global_batch;
  w.samples = samples;
  w.step = [](const gpu_spec&, std::int64_t m, int n) {
    graph_step s;
    s.device = bytes(1e9 * (1.0 + static_cast<double>(m)));
    s.micro = seconds(0.010 + 0.001 * static_cast<double>(m));
    s.optimizer = seconds(0.020);
    s.exposed_all_reduce = seconds(0.005 * (n - 1));
    return s;
  };
  return w;
}

gpu_spec with_memory(const char* id, double usable) {
  gpu_spec g = io::find_gpu(id);
  g.usable_memory = bytes(usable);
  return g;
}

}  // namespace

TEST_CASE("recommend_graph: micro-batch, accumulation, scaling and cost, derived") {
  recommend_options o;
  // 21 GB usable: the headroom is max(5% = 1.05 GB, 1 GiB = 1.074 GB) = 1.074 GB, so a
  // device figure of at most 19.926 GB plans: micro-batch 18 (19 GB) at most.
  o.gpus = {with_memory("a100-80gb", 21e9)};
  o.price_per_gpu_hour = {{"a100-80gb", 2.0}};
  o.max_gpus = 8;
  const auto rows = recommend_graph(synthetic(64, 64000), o);
  REQUIRE(rows.size() == 4);  // counts 1, 2, 4, 8
  auto row = [&](int n) {
    for (const auto& r : rows)
      if (r.count == n) return r;
    FAIL("no row for " << n);
    return rows.front();
  };
  // 1 GPU: 64 samples per step; 64 (65 GB) and 32 (33 GB) do not plan, 16 (17 GB) does: 16 x 4.
  const auto r1 = row(1);
  CHECK(r1.micro_batch == 16);
  CHECK(r1.grad_accum == 4);
  // optimizer step = 4 x (10 + 16) ms + 0 + 20 ms = 124 ms; 64 samples / 0.124 s = 516.13/s.
  CHECK(in_seconds(r1.optimizer_step) == doctest::Approx(0.124).epsilon(1e-12));
  CHECK(r1.samples_per_s == doctest::Approx(64 / 0.124).epsilon(1e-12));
  CHECK(*r1.scaling == doctest::Approx(1.0));
  // 64,000 samples / 516.13/s = 124 s; $2/h x 124 s = $0.0689.
  CHECK(in_seconds(r1.wall) == doctest::Approx(124.0).epsilon(1e-12));
  CHECK(*r1.cost == doctest::Approx(2.0 * 124.0 / 3600).epsilon(1e-12));
  // 2 GPUs: 32 each: 16 x 2; step = 2 x 26 + 5 + 20 = 77 ms; 64 / 0.077 = 831.2/s, per GPU
  // 415.6 against 516.1: scaling 0.805.
  const auto r2 = row(2);
  CHECK(r2.micro_batch == 16);
  CHECK(r2.grad_accum == 2);
  CHECK(in_seconds(r2.optimizer_step) == doctest::Approx(0.077).epsilon(1e-12));
  CHECK(*r2.scaling == doctest::Approx((64 / 0.077) / 2 / (64 / 0.124)).epsilon(1e-12));
  // 8 GPUs: 8 each, no accumulation: 18 + 35 + 20 = 73 ms.
  const auto r8 = row(8);
  CHECK(r8.micro_batch == 8);
  CHECK(r8.grad_accum == 1);
  CHECK(in_seconds(r8.optimizer_step) == doctest::Approx(0.073).epsilon(1e-12));
  CHECK(r8.gpu_hours == doctest::Approx(8 * (64000 / (64 / 0.073)) / 3600).epsilon(1e-12));
  // Ranked by cost: 1 GPU is the cheapest run (every row meets the 24 h deadline).
  CHECK(rows.front().count == 1);
  // A fixed micro-batch is used as given; 33 GB does not plan on 21 GB: no row at 1 GPU.
  auto fixed = synthetic(64, 64000);
  fixed.micro_batch = 32;
  const auto f = recommend_graph(fixed, o);
  for (const auto& r : f) CHECK(r.count >= 2);
  // A global batch of 2 leaves no sample for a third GPU: counts 1 and 2 only.
  CHECK(recommend_graph(synthetic(2, 100), o).size() == 2);
  // Nothing fits below 2 GB per sample on a 2.5 GB card (1 sample = 2 GB + 1.07 GB headroom).
  o.gpus = {with_memory("a100-80gb", 2.5e9)};
  CHECK(recommend_graph(synthetic(64, 100), o).empty());
}

TEST_CASE("recommend_graph: bad workloads are errors naming the field") {
  recommend_options o;
  o.gpus = {io::find_gpu("a100-80gb")};
  auto w = synthetic(0, 100);
  CHECK_THROWS_WITH_AS(recommend_graph(w, o), doctest::Contains("global_batch: must be between 1"), config_error);
  w = synthetic(64, std::nan(""));
  CHECK_THROWS_WITH_AS(recommend_graph(w, o), doctest::Contains("images: samples to train must be in [1, 1e15] (got nan)"), config_error);
  w = synthetic(64, 100);
  w.micro_batch = -3;
  CHECK_THROWS_WITH_AS(recommend_graph(w, o), doctest::Contains("batch: must be between 1"), config_error);
  w.micro_batch.reset();
  w.step = nullptr;
  CHECK_THROWS_WITH_AS(recommend_graph(w, o), doctest::Contains("workload.step"), config_error);
  o.max_gpus = 0;
  CHECK_THROWS_WITH_AS(recommend_graph(synthetic(64, 100), o), doctest::Contains("recommend.max_gpus"), config_error);
}

TEST_CASE("image_training: the 1-GPU row is estimate_graph's step; more GPUs add the exposed all-reduce") {
  const auto a100 = io::find_gpu("a100-80gb");
  const auto g = vision::vision_model("resnet-50");
  recommend_options o;
  o.gpus = {a100};
  o.max_gpus = 2;
  auto w = image_training(g, precision::fp16_mixed, optimizer::sgd_momentum);
  w.global_batch = 256;
  w.samples = vision::kImageNetTrainImages;
  const auto rows = recommend_graph(w, o);
  REQUIRE(rows.size() == 2);
  const auto& one = rows[0].count == 1 ? rows[0] : rows[1];
  const auto& two = rows[0].count == 2 ? rows[0] : rows[1];
  // Batch 256 fits an 80 GB A100 (about 15 GB): no accumulation, the estimate's own step.
  const auto e1 = vision::estimate_graph(g, 256, precision::fp16_mixed, optimizer::sgd_momentum, a100);
  CHECK(one.micro_batch == 256);
  CHECK(one.grad_accum == 1);
  CHECK(in_seconds(one.optimizer_step) == doctest::Approx(in_seconds(e1.step)).epsilon(1e-12));
  CHECK(one.samples_per_s == doctest::Approx(e1.samples_per_s).epsilon(1e-12));
  // 2 GPUs, 128 each: estimate_graph on 2 GPUs is the same step (all-reduce once per step).
  const auto e2 = vision::estimate_graph(g, 128, precision::fp16_mixed, optimizer::sgd_momentum, a100, true, {}, 2);
  CHECK(in_seconds(two.optimizer_step) == doctest::Approx(in_seconds(e2.step)).epsilon(1e-12));
  // The exposed part: DDP's fp32 gradients (4 B x 25,557,032) over NVLink less 80% of backward.
  const double backward = 2.0 / 3.0 * in_seconds(e2.compute + e2.memory_bound);
  const auto ar = vision::detail::ddp_all_reduce(25557032.0, precision::fp16_mixed, a100, 2, backward, {});
  CHECK(in_seconds(two.step.exposed_all_reduce) == doctest::Approx(ar.exposed).epsilon(1e-9));
  CHECK(ar.exposed > 0);
  // DDP's NCCL buffers (512 MiB) are on the device only with more than one GPU.
  CHECK(in_bytes(e2.device) == doctest::Approx(in_bytes(e2.reserved) + 1343.0 * kMiB + 512.0 * kMiB).epsilon(1e-12));
  CHECK(in_bytes(e1.device) == doctest::Approx(in_bytes(e1.reserved) + 1343.0 * kMiB).epsilon(1e-12));
  // reserved = allocated x 1.10 + the cuBLAS workspace (detail/memory_allocator.hpp).
  CHECK(in_bytes(e1.reserved) == doctest::Approx(in_bytes(e1.peak_allocated) * 1.10 + 32.0 * kMiB).epsilon(1e-12));
}

TEST_CASE("estimate_graph: a GPU without an fp32 rate runs 16-bit graphs; fp32 names the missing rate") {
  gpu_spec g = io::find_gpu("a100-80gb");
  g.fp32 = flop_per_s(0);  // a GPU file giving its tensor rates alone
  const auto resnet = vision::vision_model("resnet-50");
  const auto e = vision::estimate_graph(resnet, 32, precision::bf16_mixed, optimizer::sgd_momentum, g);
  CHECK(in_seconds(e.step) ==
        in_seconds(vision::estimate_graph(resnet, 32, precision::bf16_mixed, optimizer::sgd_momentum, io::find_gpu("a100-80gb")).step));
  CHECK_THROWS_WITH_AS((void)vision::estimate_graph(resnet, 32, precision::fp32, optimizer::sgd_momentum, g),
                       "gpu.fp32_tflops: precision fp32 needs the GPU's fp32 rate (got none)", config_error);
}

TEST_CASE("image_training under ZeRO-3: the gathers repeat every micro-batch, so they are in the micro-step") {
  const auto a100 = io::find_gpu("a100-80gb");
  const auto g = vision::vision_model("vit-b-16");
  const auto w = image_training(g, precision::fp16_mixed, optimizer::adamw, {}, false, 3);
  const graph_step s = w.step(a100, 64, 8);
  const auto e = vision::estimate_graph(g, 64, precision::fp16_mixed, optimizer::adamw, a100, true, {}, 8, false, 3);
  CHECK(in_seconds(s.exposed_all_reduce) == 0);
  CHECK(in_seconds(s.micro + s.optimizer) == doctest::Approx(in_seconds(e.step)).epsilon(1e-12));
  CHECK(s.micro > std::max(e.compute + e.memory_bound, e.launch));  // the first unit's gather is never hidden
  CHECK(s.device == e.device);
  // DDP on the same GPUs: the exposed all-reduce stays once per optimizer step.
  const graph_step d = image_training(g, precision::fp16_mixed, optimizer::adamw).step(a100, 64, 8);
  CHECK(in_seconds(d.exposed_all_reduce) > 0);
  CHECK(d.device > s.device);
}

TEST_CASE("diffusion fine-tuning: the EMA copy, the recipe and the DDP step") {
  const auto a100 = io::find_gpu("a100-80gb");
  const auto p = df::sd15();
  df::finetune_options o;
  o.gradient_checkpointing = true;
  const auto plain = df::estimate_finetune(p, a100, o);
  o.ema = true;
  const auto ema = df::estimate_finetune(p, a100, o);
  // EMAModel keeps an fp32 copy of the UNet: 4 B x 859,520,964 = 3.44 GB more allocated.
  CHECK(in_bytes(ema.ema) == doctest::Approx(4.0 * 859520964).epsilon(1e-12));
  CHECK(in_bytes(ema.peak_allocated - plain.peak_allocated) == doctest::Approx(4.0 * 859520964).epsilon(1e-9));
  // Its update reads the copy and the weights and writes the copy: 12 B per parameter.
  CHECK(in_seconds(ema.optimizer - plain.optimizer) > 0);
  CHECK(in_seconds(ema.step) == doctest::Approx(in_seconds(ema.encode + ema.unet + ema.optimizer)).epsilon(1e-12));
  o.method = df::finetune_method::lora;
  CHECK_THROWS_WITH_AS(df::estimate_finetune(p, a100, o), doctest::Contains("ema: applies to full fine-tuning only"), config_error);
  // The README's full recipe: 4 images per optimizer step (1 x 4), 15,000 steps, checkpointing and EMA.
  const auto r = df::finetune_recipe_of(df::finetune_method::full);
  CHECK(r.global_batch == 4);
  CHECK(r.steps == 15000);
  CHECK((r.gradient_checkpointing && r.ema));
  // One GPU: the workload's micro-step is the estimate's encode + UNet, its device the estimate's.
  df::finetune_options full;
  full.gradient_checkpointing = true;
  full.ema = true;
  const auto w = diffusion_finetuning(p, full);
  const graph_step s = w.step(a100, 1, 1);
  full.batch = 1;
  const auto e = df::estimate_finetune(p, a100, full);
  CHECK(in_seconds(s.micro) == doctest::Approx(in_seconds(e.encode + e.unet)).epsilon(1e-12));
  CHECK(in_bytes(s.device) == doctest::Approx(in_bytes(e.device)).epsilon(1e-12));
  CHECK(in_seconds(s.exposed_all_reduce) == 0);
  // Two GPUs: + NCCL's buffers, and the fp32 gradients of the 859.5 M trainable parameters all-reduced.
  const graph_step s2 = w.step(a100, 1, 2);
  CHECK(in_bytes(s2.device - s.device) == doctest::Approx(512.0 * kMiB).epsilon(1e-12));
  CHECK(in_seconds(s2.exposed_all_reduce) > 0);
}

TEST_CASE("graph_plan_of: the published recipes, the user's overrides and the errors") {
  io::graph_recommend_query q;
  q.model = "resnet-50";
  auto p = io::graph_plan_of(q);
  // He et al. 2016: batch 256, SGD momentum; 90 epochs of ImageNet-1k's 1,281,167 images.
  CHECK(p.workload.global_batch == 256);
  CHECK(p.workload.samples == doctest::Approx(1281167.0 * 90).epsilon(1e-12));
  CHECK(p.settings["optimizer"] == "sgd-momentum");
  CHECK(p.summary.find("ImageNet-1k") != std::string::npos);
  q.model = "vit-b-16";
  p = io::graph_plan_of(q);
  CHECK(p.workload.global_batch == 1024);
  CHECK(p.settings["optimizer"] == "adamw");
  q.images = "50k";
  q.epochs = 10;
  q.global_batch = 128;
  p = io::graph_plan_of(q);
  CHECK(p.workload.samples == doctest::Approx(500000).epsilon(1e-12));
  CHECK(p.workload.global_batch == 128);
  io::graph_recommend_query d;
  d.model = "sd-2.1";
  p = io::graph_plan_of(d);
  CHECK(p.workload.samples == doctest::Approx(60000).epsilon(1e-12));  // 15,000 steps x 4
  CHECK(p.settings["resolution"] == 768);
  CHECK(p.settings["ema"] == true);
  d.method = "lora";
  p = io::graph_plan_of(d);
  CHECK(p.settings["ema"] == false);
  CHECK(p.settings["lora_rank"] == 4);
  d.flag_prefix = "--";
  d.ema = true;
  CHECK_THROWS_WITH_AS(io::graph_plan_of(d), doctest::Contains("--ema: applies to full fine-tuning only"), config_error);
  d.ema.reset();
  d.image = 512;
  CHECK_THROWS_WITH_AS(io::graph_plan_of(d), doctest::Contains("--image: does not apply to diffusion models"), config_error);
  d.image.reset();
  d.resolution = 700;
  CHECK_THROWS_WITH_AS(io::graph_plan_of(d), doctest::Contains("resolution: must be a multiple of 64 (got 700)"), config_error);
  io::graph_recommend_query v;
  v.flag_prefix = "--";
  v.model = "resnet-50";
  v.method = "lora";
  CHECK_THROWS_WITH_AS(io::graph_plan_of(v), doctest::Contains("--method: image models are planned with full training only (got lora)"), config_error);
  v.method.reset();
  v.checkpointing = true;  // every residual block checkpointed
  CHECK(io::graph_plan_of(v).settings["checkpointing"] == true);
  v.checkpointing.reset();
  v.zero = 3;  // sharded over the GPUs; diffusion fine-tunes stay under DDP
  CHECK(io::graph_plan_of(v).settings["zero"] == 3);
  v.zero = 4;
  CHECK_THROWS_WITH_AS(io::graph_plan_of(v), doctest::Contains("--zero: must be 0, 1, 2 or 3 (got 4)"), config_error);
  v.zero.reset();
  d.resolution.reset();
  d.zero = 1;
  CHECK_THROWS_WITH_AS(io::graph_plan_of(d), doctest::Contains("--zero: does not apply to diffusion models"), config_error);
  v.images = "-1";
  CHECK_THROWS_AS(io::graph_plan_of(v), config_error);
  v.images = "1e13";
  CHECK_THROWS_WITH_AS(io::graph_plan_of(v), doctest::Contains("--images: must be in [1, 1e12]"), config_error);
  v.images.reset();
  v.optimizer = "adagrad";
  CHECK_THROWS_WITH_AS(io::graph_plan_of(v), doctest::Contains("--optimizer: must be one of"), config_error);
  CHECK(io::is_graph_model("ResNet_50"));
  CHECK(io::is_graph_model("sdxl-base"));
  CHECK_FALSE(io::is_graph_model("llama-2-7b"));
}

TEST_CASE("graph_query: names parsed once at the edge, validated typed, the same run as the text") {
  // The text the CLI and Python hand over parses into the typed query: the task from the name,
  // the amount, the method, precision and optimizer.
  io::graph_recommend_query t;
  t.model = "sd-2.1";
  t.method = "lora";
  t.precision = "fp16";
  t.optimizer = "adamw-8bit";
  t.images = "10k";
  graph_query q = io::parse_graph_query(t);
  CHECK(q.task == graph_task::diffusion_finetune);
  CHECK(q.meth == method::lora);
  CHECK(q.prec == precision::fp16_mixed);
  CHECK(q.opt == optimizer::adamw_8bit);
  CHECK(*q.images == doctest::Approx(10000).epsilon(1e-12));
  CHECK(io::graph_plan_of(q).settings == io::graph_plan_of(t).settings);
  CHECK(io::graph_plan_of(q).summary == io::graph_plan_of(t).summary);
  t.model = "resnet-50";
  t.method.reset();
  t.precision = "bf16-mixed";
  CHECK(io::parse_graph_query(t).task == graph_task::image_training);
  CHECK(io::graph_plan_of(io::parse_graph_query(t)).settings["precision"] == "bf16-mixed");
  // Text a task does not know: the field and the value, as graph_plan_of said before.
  t.flag_prefix = "--";
  t.precision = "fp9";
  CHECK_THROWS_WITH_AS(io::parse_graph_query(t), doctest::Contains("--precision: must be one of"), config_error);
  t.precision.reset();
  t.images = "lots";
  CHECK_THROWS_WITH_AS(io::parse_graph_query(t), doctest::Contains("--images"), config_error);
  t.images.reset();
  t.model = "sd-1.5";
  t.precision = "bf16-mixed";
  CHECK_THROWS_WITH_AS(io::parse_graph_query(t),
                       doctest::Contains("--precision: diffusion fine-tuning is modelled with fp16 mixed precision only (got bf16-mixed)"),
                       config_error);
  t.precision.reset();
  t.method = "qlora";
  CHECK_THROWS_WITH_AS(io::parse_graph_query(t), doctest::Contains("--method: must be full or lora for a diffusion pipeline (got qlora)"),
                       config_error);
  // Typed values the task does not model: the same one-line errors from validate.
  graph_query d;
  d.task = graph_task::diffusion_finetune;
  d.model = "sd-1.5";
  d.flag_prefix = "--";
  d.meth = method::qlora;
  CHECK_THROWS_WITH_AS(validate(d), doctest::Contains("--method: must be full or lora for a diffusion pipeline (got qlora)"),
                       config_error);
  d.meth.reset();
  d.prec = precision::bf16_mixed;
  CHECK_THROWS_WITH_AS(validate(d), doctest::Contains("--precision: diffusion fine-tuning is modelled with fp16 mixed precision only"),
                       config_error);
  d.prec.reset();
  d.lora_rank = 8;  // full fine-tuning by default
  CHECK_THROWS_WITH_AS(validate(d), doctest::Contains("--lora-rank: does not apply to full fine-tuning"), config_error);
  d.meth = method::lora;
  CHECK_NOTHROW(validate(d));
  CHECK(io::graph_plan_of(d).settings["lora_rank"] == 8);
  graph_query v;
  v.model = "resnet-50";
  v.flag_prefix = "recommend.";
  v.meth = method::lora;
  CHECK_THROWS_WITH_AS(validate(v), doctest::Contains("recommend.method: image models are planned with full training only (got lora)"),
                       config_error);
  v.meth.reset();
  v.global_batch = 0;
  CHECK_THROWS_WITH_AS(validate(v), doctest::Contains("recommend.global_batch: must be between 1 and"), config_error);
  v.global_batch.reset();
  v.epochs = 0;
  CHECK_THROWS_WITH_AS(validate(v), doctest::Contains("recommend.epochs: must be in (0, 1e6] (got 0)"), config_error);
  v.epochs.reset();
  v.resolution = 512;
  CHECK_THROWS_WITH_AS(io::graph_plan_of(v), doctest::Contains("recommend.resolution: does not apply to image models (use recommend.image)"),
                       config_error);
}

TEST_CASE("vision names: torchvision's builders and timm's names of the same architectures") {
  // torchvision.models.<name>() and timm.create_model(<name>) parameter counts (torchvision's
  // model table; timm's vit_base/large_patch16_224 are the same ViT-B/16 and ViT-L/16).
  const std::vector<std::pair<const char*, std::int64_t>> names{
      {"resnet50", 25557032},       {"vgg16", 138357544},           {"vit_b_16", 86567656},
      {"vit_base_patch16_224", 86567656}, {"vit_large_patch16_224", 304326632}, {"convnext_tiny", 28589128},
      {"efficientnet_b3", 12233232}};
  for (const auto& n : names) {
    const std::string name = n.first;  // clang 14: no CAPTURE of a structured binding
    CAPTURE(name);
    CHECK(layers::analyze(vision::vision_model(name)).params == n.second);
    CHECK(io::is_graph_model(name));
  }
  CHECK(*vision::canonical_vision_name("Vit_Large_Patch16_224") == "vit-l-16");
  CHECK(vision::default_image("efficientnet_b3") == 300);
  CHECK(vision::training_recipe_of("vit_base_patch16_224").global_batch == 1024);
  CHECK_FALSE(vision::canonical_vision_name("vit_base_patch16_384"));
  // Hub ids and qualified names: timm's pretrained tag names weights of the same architecture.
  CHECK(*vision::canonical_vision_name("timm/resnet50.a1_in1k") == "resnet-50");
  CHECK(*vision::canonical_vision_name("vit_base_patch16_224.augreg2_in21k_ft_in1k") == "vit-b-16");
  CHECK(*vision::canonical_vision_name("torchvision.models.convnext_tiny") == "convnext-tiny");
  CHECK_FALSE(vision::canonical_vision_name("timm/resnet51.a1_in1k"));
  CHECK_THROWS_WITH_AS(vision::vision_model("resnet51"), doctest::Contains("unknown vision model 'resnet51'"), config_error);
}

TEST_CASE("checkpointing image graphs: every residual branch is a segment, saved bytes and time derived") {
  // Two blocks x -> linear(8) -> GELU -> linear(8) -> + x on an 8-wide input.
  layers::graph g;
  g.name = "two-blocks";
  g.input = {8, 1, 1, 1};
  for (int b = 0; b < 2; ++b) {
    const int x = b == 0 ? -2 : g.last();
    g.push(layers::make::linear(8));
    g.push(layers::make::gelu());
    g.push(layers::make::linear(8));
    g.push(layers::make::add(x));
  }
  const auto segs = vision::residual_segments(g);
  REQUIRE(segs.size() == 2);
  CHECK(segs[0] == std::array<int, 2>{0, 3});
  CHECK(segs[1] == std::array<int, 2>{4, 7});
  // Without checkpointing each block saves its first linear's input, the GELU input and the
  // second linear's input: 3 x 8 elements, 48 in all. Checkpointed: the two segment inputs
  // (8 + 8) and one segment's own saves rebuilt during its backward, its input apart (already
  // kept): the GELU input and the second linear's input (16). 32 elements.
  const auto gc = layers::analyze(g);
  CHECK(gc.saved_bytes(2.0) == doctest::Approx(2.0 * 48).epsilon(1e-12));
  CHECK(vision::saved_bytes_of(g, gc, 2.0, false) == doctest::Approx(2.0 * 48).epsilon(1e-12));
  layers::graph seg = g;
  seg.segments = segs;
  CHECK(vision::saved_bytes_of(seg, gc, 2.0, true) == doctest::Approx(2.0 * 32).epsilon(1e-12));
  // A ViT-B/16 block is two residual branches (attention, MLP): 24 segments; a ResNet-50 has
  // 16 bottleneck blocks, the stem and head stay outside; VGG-16 has none.
  CHECK(vision::residual_segments(vision::vision_model("vit-b-16")).size() == 24);
  CHECK(vision::residual_segments(vision::vision_model("resnet-50")).size() == 16);
  CHECK(vision::residual_segments(vision::vision_model("vgg-16")).empty());
  // estimate_graph: activations are the checkpointed saves x batch; compute and memory-bound
  // time run the forward once more (4 passes instead of 3).
  const auto a100 = io::find_gpu("a100-80gb");
  const auto vit = vision::vision_model("vit-l-16");
  const auto plain = vision::estimate_graph(vit, 64, precision::fp16_mixed, optimizer::adamw, a100);
  const auto ckpt = vision::estimate_graph(vit, 64, precision::fp16_mixed, optimizer::adamw, a100, true, {}, 1, true);
  layers::graph vs = vit;
  vs.segments = vision::residual_segments(vit);
  CHECK(in_bytes(ckpt.activations) == doctest::Approx(64 * vision::saved_bytes_of(vs, layers::analyze(vit), 2.0, true)).epsilon(1e-12));
  CHECK(in_bytes(ckpt.activations) < 0.2 * in_bytes(plain.activations));
  CHECK(in_seconds(ckpt.compute) == doctest::Approx(in_seconds(plain.compute) * 4 / 3).epsilon(1e-12));
  CHECK(in_seconds(ckpt.memory_bound) == doctest::Approx(in_seconds(plain.memory_bound) * 4 / 3).epsilon(1e-12));
  CHECK(in_flops(ckpt.flops_per_sample) == doctest::Approx(in_flops(plain.flops_per_sample)).epsilon(1e-12));  // model FLOPs
  CHECK_THROWS_WITH_AS(vision::estimate_graph(vision::vision_model("vgg-16"), 8, precision::fp16_mixed, optimizer::sgd, a100,
                                              true, {}, 1, true),
                       doctest::Contains("checkpointing: the graph has no residual blocks to checkpoint (got 'vgg-16')"), config_error);
  CHECK_THROWS_WITH_AS(vision::estimate_graph(vit, 8, precision::fp16_mixed, optimizer::sgd, a100, false, {}, 1, true),
                       doctest::Contains("checkpointing: applies to training only"), config_error);
}

}  // namespace unit_graph_recommend
