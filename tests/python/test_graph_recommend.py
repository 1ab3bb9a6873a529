"""gp.recommend for image and diffusion models: GPU types × counts under PyTorch DDP from the
published recipes (plan/graph_recommend.hpp, io/graph_plan.hpp, docs/planner.md)."""

import pytest

import gpuplan as gp


def test_resnet50_rows_are_gp_vision_figures():
    r = gp.recommend("resnet-50", gpus=["a100-80gb"], max_gpus=2)
    assert isinstance(r, gp.GraphRecommendations) and len(r) == 2
    # He et al. 2016: global batch 256, SGD momentum, 90 epochs of ImageNet-1k (1,281,167 images).
    assert "1,281,167 images (ImageNet-1k) × 90 epochs, global batch 256" in r.summary
    one = next(x for x in r if x.count == 1)
    two = next(x for x in r if x.count == 2)
    # One A100 holds the whole batch of 256: the row is gp.vision's step at batch 256.
    v = gp.vision("resnet-50", gpu="a100-80gb", batch=256)
    assert (one.micro_batch, one.grad_accum) == (256, 1)
    assert one.samples_per_second == pytest.approx(v.images_per_second, rel=1e-9)
    assert one.wall_seconds == pytest.approx(1281167 * 90 / v.images_per_second, rel=1e-9)
    assert one.device == pytest.approx(float(v.device), rel=1e-12)
    # Two GPUs: 128 each, and gp.vision on 2 GPUs at batch 128 is the same step.
    v2 = gp.vision("resnet-50", gpu="a100-80gb", batch=128, num_gpus=2)
    assert two.samples_per_second == pytest.approx(v2.images_per_second, rel=1e-9)
    assert two.scaling == pytest.approx(two.samples_per_second / 2 / one.samples_per_second, rel=1e-12)
    assert two.link == "nvlink3"
    assert r.to_dict()["rows"][0]["rank"] == 1 and "Images/s" in str(r)


def test_pcie_without_p2p_scales_worse_than_nvlink():
    # The same model and batch per GPU: consumer cards all-reduce through host memory.
    r = gp.recommend("vit-b-16", gpus=["rtx-4090", "h100-sxm"], max_gpus=8, global_batch=256)
    eff = {(x.gpu, x.count): x.scaling for x in r}
    assert next(x for x in r if x.gpu == "rtx-4090" and x.count == 8).link == "PCIe, no P2P"
    assert eff[("rtx-4090", 8)] < eff[("h100-sxm", 8)] <= 1.0


def test_diffusion_recipe_and_overrides():
    r = gp.recommend("sd-2.1", gpus=["a100-80gb"], max_gpus=1)
    d = r.to_dict()
    # diffusers' README recipe: 15,000 steps × 4 images, checkpointing and EMA, SD 2.1 at 768.
    assert d["samples"] == 60000 and d["global_batch"] == 4
    assert d["ema"] is True and d["gradient_checkpointing"] is True and d["resolution"] == 768
    lora = gp.recommend("sd-1.5", method="lora", gpus=["t4"], max_gpus=1, images=1000, epochs=3)
    assert lora.to_dict()["samples"] == 3000 and lora.to_dict()["lora_rank"] == 4
    assert float(lora[0].device) < 16e9


def test_aliases_batch_limits_and_effective_global_batch():
    # diffusers' other names for the pipelines route to the diffusion planner.
    assert gp.recommend("sdxl", gpus=["a100-80gb"], max_gpus=1).to_dict()["model"] == "sdxl-base"
    # A global batch beyond one micro-batch of the estimator (4,096 images) is split, not dropped.
    big = gp.recommend("sd-1.5", method="lora", global_batch=5000, gpus=["a100-80gb"], max_gpus=1)
    assert len(big) == 1 and big[0].micro_batch <= 4096 and big[0].global_batch >= 5000
    # The global batch each row runs: whole micro-batches on every GPU (100 on 8 GPUs: 8 x 13 = 104).
    r = gp.recommend("resnet-18", global_batch=100, gpus=["a100-80gb"], max_gpus=8)
    eight = next(x for x in r if x.count == 8)
    assert eight.global_batch == eight.micro_batch * eight.grad_accum * 8 == 104
    assert eight.samples_per_second == pytest.approx(104 / eight.optimizer_step_seconds, rel=1e-12)
    # checkpointing as the CLI spells it, or a bool.
    assert gp.recommend("vit-l-16", checkpointing="full", gpus=["t4"], max_gpus=1).to_dict()["checkpointing"] is True
    with pytest.raises(gp.InvalidInputError, match=r"recommend\.checkpointing: must be True, False, 'none' or 'full'"):
        gp.recommend("vit-l-16", checkpointing="selective")
    with pytest.raises(gp.InvalidInputError, match=r"recommend\.checkpointing: the graph has no residual blocks"):
        gp.recommend("vgg-16", checkpointing=True)
    # ZeRO-3 shards ViT-H's AdamW states over the GPUs: less memory per GPU than DDP.
    z3 = gp.recommend("vit-h-14", zero=3, gpus=["rtx-4090"], max_gpus=8)
    ddp = gp.recommend("vit-h-14", gpus=["rtx-4090"], max_gpus=8)
    assert z3.to_dict()["zero"] == 3
    eight = lambda r: next(x for x in r if x.count == 8)
    assert eight(z3).micro_batch >= eight(ddp).micro_batch
    with pytest.raises(gp.InvalidInputError, match=r"recommend\.zero: must be between 0 and 3"):
        gp.recommend("vit-h-14", zero=5)
    with pytest.raises(gp.ConfigError, match=r"recommend\.zero: does not apply to diffusion models"):
        gp.recommend("sd-1.5", zero=2)


def test_graph_input_and_catalog_recipe():
    g = gp.Graph.from_catalog("resnet-18")
    r = gp.recommend(g, gpus=["t4"], max_gpus=1, images="50k", epochs=10)
    # A graph named like a catalog model trains with its recipe (global batch 256).
    assert "resnet-18: 50,000 images × 10 epochs, global batch 256" in r.summary
    assert r[0].micro_batch * r[0].grad_accum == 256


def test_errors_name_the_field():
    with pytest.raises(gp.InvalidInputError, match=r"recommend\.seq_len: does not apply to image and diffusion models"):
        gp.recommend("resnet-50", seq_len=512)
    with pytest.raises(gp.InvalidInputError, match=r"recommend\.method: image models are planned with full training only"):
        gp.recommend("resnet-50", method="lora")
    with pytest.raises(gp.InvalidInputError, match=r"recommend\.dataset_tokens"):
        gp.recommend("resnet-50", dataset_tokens="1B")
    with pytest.raises(gp.InvalidInputError, match=r"recommend\.images"):
        gp.recommend("resnet-50", images="lots")
    with pytest.raises(gp.InvalidInputError, match=r"recommend\.global_batch: must be between 1"):
        gp.recommend("resnet-50", global_batch=0)
    with pytest.raises(gp.InvalidInputError, match=r"recommend\.max_gpus"):
        gp.recommend("sd-1.5", max_gpus=0)
