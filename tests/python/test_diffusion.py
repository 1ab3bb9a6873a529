"""gp.diffusion: Stable Diffusion pipelines as layer graphs on one GPU (docs/diffusion.md)."""

from pathlib import Path

import pytest

import gpuplan as gp

DATA = Path(__file__).resolve().parent.parent / "data" / "diffusers"


def test_sd15_figures():
    r = gp.diffusion("sd-1.5", gpu="t4")
    comps = {c["name"]: c for c in r.components}
    # diffusers: SD 1.5 UNet 859,520,964; AutoencoderKL 83,653,863; CLIP ViT-L/14 text 123,060,480
    assert comps["unet"]["params"] == 859_520_964
    assert comps["vae"]["params"] == 83_653_863
    assert comps["text_encoder"]["params"] == 123_060_480
    assert r.params == sum(c["params"] for c in r.components)
    # fp16: 2 bytes per parameter of every component
    assert r.to_dict()["memory"]["weights"] == 2 * r.params
    assert r.fits and float(r.device) > float(r.peak_allocated)
    d = r.to_dict()["time"]
    assert d["pipeline_seconds"] == pytest.approx(d["text_encode_seconds"] + 50 * d["step_seconds"]
                                                  + d["vae_decode_seconds"] + d["safety_check_seconds"], rel=1e-9)
    assert float(r.seconds_per_image) == pytest.approx(d["pipeline_seconds"], rel=1e-9)
    assert r.images_per_second == pytest.approx(1 / d["pipeline_seconds"], rel=1e-9)
    assert "859,520,964" in str(r) and "denoising step" in str(r)
    assert "| Component |" in r._repr_markdown_()
    assert "sd-1.5" in repr(r)


def test_guidance_batch_and_steps():
    g = gp.diffusion("sd-1.5", gpu="a100-80gb", batch=4)
    n = gp.diffusion("sd-1.5", gpu="a100-80gb", batch=4, guidance=False)
    unet = {c["name"]: c for c in g.components}["unet"]
    assert unet["batch"] == 8 and {c["name"]: c for c in n.components}["unet"]["batch"] == 4
    assert float(n.step) < float(g.step)
    s25 = gp.diffusion("sd-1.5", gpu="a100-80gb", batch=4, steps=25)
    total = g.to_dict()["time"]["pipeline_seconds"] - s25.to_dict()["time"]["pipeline_seconds"]
    assert total == pytest.approx(25 * float(g.step), rel=1e-9)


def test_sdxl_and_config_folder():
    x = gp.diffusion("sdxl-base", gpu="a100-80gb")
    assert {c["name"]: c for c in x.components}["unet"]["params"] == 2_567_463_684
    assert x.to_dict()["resolution"] == 1024
    f = gp.diffusion(config=DATA / "sdxl-base", gpu="a100-80gb")
    assert f.params == x.params
    assert f.to_dict()["time"]["step_seconds"] == pytest.approx(float(x.step), rel=1e-12)


def test_finetune():
    full = gp.diffusion("sd-1.5", gpu="a100-80gb", batch=4, train="full").to_dict()
    lora = gp.diffusion("sd-1.5", gpu="a100-80gb", batch=4, train="lora", lora_rank=8).to_dict()
    ck = gp.diffusion("sd-1.5", gpu="a100-80gb", batch=4, train="lora", lora_rank=8, checkpointing=True).to_dict()
    assert full["trainable_params"] == 859_520_964
    # rank 8: twice rank 4's 797,184 adapter parameters
    assert lora["trainable_params"] == 2 * 797_184
    assert lora["memory"]["peak_allocated"] < full["memory"]["peak_allocated"]
    assert ck["memory"]["activations"] < lora["memory"]["activations"]
    assert ck["time"]["step_seconds"] > lora["time"]["step_seconds"]
    with pytest.raises(gp.UnknownNameError, match="diffusion.train"):
        gp.diffusion("sd-1.5", train="dreambooth")


def test_dreambooth():
    # examples/dreambooth/README.md "Training on a 16GB GPU": prior preservation, checkpointing,
    # 8-bit Adam, batch 1, gradients kept between steps (train_dreambooth.py's default): fits a T4.
    kw = dict(gpu="t4", batch=1, train="full", prior_preservation=True, checkpointing=True,
              optimizer="adamw-8bit", keep_grads=True)
    r = gp.diffusion("sd-1.5", **kw).to_dict()
    assert r["prior_preservation"] and r["keep_grads"] and r["optimizer"] == "adamw-8bit"
    assert r["memory"]["fits"]
    # 8-bit Adam: 2 B of state per parameter (bitsandbytes), fp32 gradients 4 B
    assert r["memory"]["optimizer"] == pytest.approx(2 * 859_520_964, rel=0.02)
    assert r["memory"]["gradients"] == pytest.approx(4 * 859_520_964, rel=1e-9)
    # two images per step (the instance and its class image)
    assert r["time"]["seconds_per_image"] == pytest.approx(r["time"]["step_seconds"] / 2, rel=1e-9)
    te = gp.diffusion("sd-1.5", train_text_encoder=True, **kw).to_dict()
    assert te["trainable_params"] == 859_520_964 + 123_060_480
    assert te["memory"]["device"] > r["memory"]["device"]
    freed = gp.diffusion("sd-1.5", **{**kw, "keep_grads": False}).to_dict()
    assert freed["memory"]["peak_allocated"] < r["memory"]["peak_allocated"]
    with pytest.raises(gp.InvalidInputError, match="diffusion.prior_preservation: applies to fine-tuning only"):
        gp.diffusion("sd-1.5", prior_preservation=True)
    with pytest.raises(gp.InvalidInputError, match="diffusion.keep_grads: must be True or False"):
        gp.diffusion("sd-1.5", train="full", keep_grads="yes")
    with pytest.raises(gp.UnknownNameError, match="diffusion.optimizer: must be one of"):
        gp.diffusion("sd-1.5", train="full", optimizer="adam9")


def test_errors_name_the_field():
    with pytest.raises(gp.UnknownNameError, match="model: unknown diffusion pipeline 'sd-9'"):
        gp.diffusion("sd-9")
    with pytest.raises(gp.InvalidInputError, match="diffusion.batch"):
        gp.diffusion("sd-1.5", batch=0)
    with pytest.raises(gp.InvalidInputError, match="diffusion.steps"):
        gp.diffusion("sd-1.5", steps=1.5)
    with pytest.raises(gp.InvalidInputError, match="diffusion.resolution: must be a multiple of 64"):
        gp.diffusion("sd-1.5", resolution=500)
    with pytest.raises(gp.UnknownNameError, match="diffusion.precision"):
        gp.diffusion("sd-1.5", precision="fp12")
    with pytest.raises(gp.InvalidInputError, match="diffusion.model"):
        gp.diffusion()
    with pytest.raises(gp.InvalidInputError, match="diffusion.config"):
        gp.diffusion("sd-1.5", config=DATA / "sd-1.5")
    with pytest.raises(gp.FileError, match="config: no such directory"):
        gp.diffusion(config="/nonexistent-folder")
