#!/usr/bin/env python3
"""Writes the image test data of tests/data/image/ from sources nobody here wrote.

Run once on a developer machine (not in CI), in a scratch environment outside the repository
(torch and torchvision for Molmo2's processor, which has no PIL variant):

    python3 -m venv /tmp/imgenv
    /tmp/imgenv/bin/pip install transformers pillow numpy scikit-image torch torchvision
    /tmp/imgenv/bin/python tools/image_refs/generate.py tests/data/image

Inputs: photographs that scikit-image's wheel ships (public domain or CC0, see LICENSES below),
re-encoded by PIL where a smaller file or another encoding (alpha, palette, 16-bit, progressive,
interlaced, EXIF orientation) is wanted, plus hostile files for the error tests.
References: what transformers' PIL image processors return for PIL.Image.open(input):
  <image>.decoded.npz  the processor's convert_to_rgb of the opened image, uint8 [H, W, 3]
  <image>.<config>.npz pixel_values stored exactly: `codes` (uint8, the shape of pixel_values)
                       and `table` (float32 [3, 256], the processor's own rescale + normalize of
                       every 8-bit level); pixel_values == table[channel, codes] is asserted
                       bit for bit before saving. `grid_thw` for Qwen2-VL; for Molmo2 (pixel_values
                       [crops, patches, P*P*3], channels last) `pooling` (image_token_pooling,
                       int32) and `grids` (image_grids, int64 [4]).
manifest.json lists every case with the library versions used.
"""
import io
import json
import os
import shutil
import struct
import sys
import zlib

import numpy as np
import PIL
from PIL import Image
import skimage
import transformers
from transformers.image_transforms import convert_to_rgb
from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil
from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil
from transformers.models.llava.image_processing_pil_llava import LlavaImageProcessorPil
from transformers.models.molmo2.image_processing_molmo2 import Molmo2ImageProcessor
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil
from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

DATA = os.path.join(os.path.dirname(skimage.__file__), "data")
LICENSES = {
    "astronaut": "public domain (NASA), skimage.data.astronaut",
    "chelsea": "CC0 (Stefan van der Walt), skimage.data.chelsea",
    "coffee": "CC0 (Rachel Michetti), skimage.data.coffee",
    "camera": "CC0 (Lav Varshney), skimage.data.camera",
    "rocket": "public domain (SpaceX), skimage.data.rocket",
    "retina": "CC0 (Mikael Haggstrom, Wikimedia), skimage.data.retina",
    "hubble": "public domain (NASA), skimage.data.hubble_deep_field",
}

CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
CLIP_STD = [0.26862954, 0.26130258, 0.27577711]
# The configurations of the checkpoints each family ships (llava-hf/llava-1.5-7b-hf,
# google/gemma-3-4b-it, google/siglip-so400m-patch14-384, Qwen/Qwen2-VL-2B-Instruct), with
# LLaVA's pad-to-square variant.
CONFIGS = {
    "llava15": {"image_processor_type": "CLIPImageProcessor", "processor_class": "LlavaProcessor",
                "crop_size": {"height": 336, "width": 336}, "do_center_crop": True,
                "do_convert_rgb": True, "do_normalize": True, "do_rescale": True,
                "do_resize": True, "image_mean": CLIP_MEAN, "image_std": CLIP_STD,
                "resample": 3, "rescale_factor": 0.00392156862745098,
                "size": {"shortest_edge": 336}},
    "llava15_pad": {"image_processor_type": "LlavaImageProcessor",
                    "processor_class": "LlavaProcessor", "do_pad": True,
                    "crop_size": {"height": 336, "width": 336}, "do_center_crop": True,
                    "do_convert_rgb": True, "do_normalize": True, "do_rescale": True,
                    "do_resize": True, "image_mean": CLIP_MEAN, "image_std": CLIP_STD,
                    "resample": 3, "rescale_factor": 0.00392156862745098,
                    "size": {"shortest_edge": 336}},
    "gemma3": {"image_processor_type": "Gemma3ImageProcessor", "processor_class": "Gemma3Processor",
               "do_convert_rgb": None, "do_normalize": True, "do_pan_and_scan": None,
               "do_rescale": True, "do_resize": True, "image_mean": [0.5, 0.5, 0.5],
               "image_seq_length": 256, "image_std": [0.5, 0.5, 0.5],
               "pan_and_scan_max_num_crops": None, "pan_and_scan_min_crop_size": None,
               "pan_and_scan_min_ratio_to_activate": None, "resample": 2,
               "rescale_factor": 0.00392156862745098, "size": {"height": 896, "width": 896}},
    "siglip384": {"image_processor_type": "SiglipImageProcessor",
                  "processor_class": "SiglipProcessor", "do_normalize": True,
                  "do_rescale": True, "do_resize": True, "image_mean": [0.5, 0.5, 0.5],
                  "image_std": [0.5, 0.5, 0.5], "resample": 3,
                  "rescale_factor": 0.00392156862745098, "size": {"height": 384, "width": 384}},
    "qwen2vl": {"image_processor_type": "Qwen2VLImageProcessor",
                "processor_class": "Qwen2VLProcessor", "min_pixels": 3136,
                "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2,
                "merge_size": 2, "image_mean": CLIP_MEAN, "image_std": CLIP_STD},
    # Small pixel bounds: the smart resize's max_pixels branch (downscale) on real photographs.
    "qwen2vl_small": {"image_processor_type": "Qwen2VLImageProcessor",
                      "processor_class": "Qwen2VLProcessor", "min_pixels": 3136,
                      "max_pixels": 50176, "patch_size": 14, "temporal_patch_size": 2,
                      "merge_size": 2, "image_mean": CLIP_MEAN, "image_std": CLIP_STD},
    # allenai/Molmo2-8B's processor (the class defaults, as to_dict() writes them).
    "molmo2": {"image_processor_type": "Molmo2ImageProcessor", "processor_class": "Molmo2Processor",
               "do_convert_rgb": True, "do_resize": True, "resample": 2, "do_rescale": True,
               "rescale_factor": 0.00392156862745098, "do_normalize": True, "max_crops": 8,
               "overlap_margins": [4, 4], "patch_size": 14, "pooling_size": [2, 2],
               "size": {"height": 378, "width": 378}, "image_mean": [0.5, 0.5, 0.5],
               "image_std": [0.5, 0.5, 0.5]},
    # Smaller crops, unequal margins, a 3 x 3 pooling window (pads on both sides), CLIP's mean.
    "molmo2_small": {"image_processor_type": "Molmo2ImageProcessor",
                     "processor_class": "Molmo2Processor", "max_crops": 6,
                     "overlap_margins": [3, 2], "patch_size": 14, "pooling_size": [3, 3],
                     "size": {"height": 224, "width": 224}, "image_mean": CLIP_MEAN,
                     "image_std": CLIP_STD},
}
CLASSES = {"CLIPImageProcessor": CLIPImageProcessorPil,
           "LlavaImageProcessor": LlavaImageProcessorPil,
           "SiglipImageProcessor": SiglipImageProcessorPil,
           "Gemma3ImageProcessor": Gemma3ImageProcessorPil,
           "Qwen2VLImageProcessor": Qwen2VLImageProcessorPil,
           "Molmo2ImageProcessor": Molmo2ImageProcessor}


def png_bytes(width, height, color_type, depth, rows, interlace=False):
    """A PNG written here (PIL writes neither 16-bit RGB nor Adam7): rows is an array
    [H, W*channels] of samples (uint8 or big-endian uint16)."""
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(
            ">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    rows = np.asarray(rows)
    bpp = rows.dtype.itemsize
    channels = rows.shape[1] // width

    def scanlines(img):
        return b"".join(b"\0" + img[y].astype(">u%d" % bpp).tobytes() for y in range(img.shape[0]))
    if not interlace:
        raw = scanlines(rows)
    else:
        raw = b""
        px = rows.reshape(height, width, channels)
        # Adam7 passes: (x0, y0, dx, dy).
        for x0, y0, dx, dy in [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4),
                               (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]:
            sub = px[y0::dy, x0::dx]
            if sub.size:
                raw += scanlines(sub.reshape(sub.shape[0], -1))
    ihdr = struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, 1 if interlace else 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9)) +
            chunk(b"IEND", b""))


def save(im, fmt, **kw):
    b = io.BytesIO()
    im.save(b, format=fmt, **kw)
    return b.getvalue()


def inputs():
    """name -> (file bytes, source, what it exercises)."""
    src = lambda f: Image.open(os.path.join(DATA, f))
    astro = src("astronaut.png").convert("RGB").resize((256, 256), Image.LANCZOS)
    chelsea = src("chelsea.png").convert("RGB")
    small = chelsea.resize((226, 150), Image.LANCZOS)
    coffee = src("coffee.png").convert("RGB").resize((300, 200), Image.LANCZOS)
    camera = src("camera.png").convert("L").resize((256, 256), Image.LANCZOS)
    rocket = open(os.path.join(DATA, "rocket.jpg"), "rb").read()
    retina = src("retina.jpg").resize((384, 384), Image.LANCZOS)
    hubble = src("hubble_deep_field.jpg").resize((400, 349), Image.LANCZOS)
    out = {}
    out["astronaut.png"] = (save(astro, "PNG"), "astronaut", "RGB PNG, square")
    out["chelsea.png"] = (open(os.path.join(DATA, "chelsea.png"), "rb").read(), "chelsea",
                          "RGB PNG as shipped, landscape 451 x 300")
    out["coffee.png"] = (save(coffee, "PNG"), "coffee", "RGB PNG, landscape 3:2")
    out["camera_gray.png"] = (save(camera, "PNG"), "camera", "8-bit grayscale PNG")
    out["rocket.jpg"] = (rocket, "rocket", "baseline JPEG as shipped, portrait 427 x 640")
    out["retina.jpg"] = (save(retina, "JPEG", quality=90), "retina", "JPEG 4:2:0")
    out["hubble_444.jpg"] = (save(hubble, "JPEG", quality=92, subsampling=0), "hubble",
                             "JPEG 4:4:4")
    out["coffee_progressive.jpg"] = (save(coffee, "JPEG", quality=85, progressive=True),
                                     "coffee", "progressive JPEG")
    out["camera_gray.jpg"] = (save(camera, "JPEG", quality=90), "camera", "grayscale JPEG")
    exif = Image.Exif()
    exif[0x0112] = 6  # "rotate 90 CW to display": PIL.Image.open does not apply it
    out["chelsea_exif6.jpg"] = (save(small, "JPEG", quality=90, exif=exif.tobytes()), "chelsea",
                                "JPEG with EXIF orientation 6 (not applied, as Image.open)")
    a = np.asarray(small)
    h, w = a.shape[:2]
    alpha = np.tile(np.linspace(0, 255, w).astype(np.uint8), (h, 1))
    alpha[: h // 4] = 255
    alpha[h // 4: h // 2] = 0
    rgba = np.dstack([a, alpha])
    out["chelsea_rgba.png"] = (save(Image.fromarray(rgba, "RGBA"), "PNG"), "chelsea",
                               "RGBA PNG, alpha ramp (composited onto white)")
    la = np.dstack([np.asarray(camera), np.tile(np.linspace(255, 0, 256).astype(np.uint8),
                                                (256, 1))])
    out["camera_la.png"] = (save(Image.fromarray(la, "LA"), "PNG"), "camera", "gray+alpha PNG")
    pal = small.quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    out["chelsea_palette.png"] = (save(pal, "PNG"), "chelsea", "palette PNG")
    out["chelsea_palette_trns.png"] = (save(pal, "PNG", transparency=0), "chelsea",
                                       "palette PNG with a transparent entry (tRNS)")
    c16 = np.asarray(coffee).astype(np.uint16) * 257 + np.random.RandomState(0).randint(
        0, 256, np.asarray(coffee).shape).astype(np.uint16)
    out["coffee_rgb16.png"] = (png_bytes(300, 200, 2, 16, c16.reshape(200, -1)), "coffee",
                               "16-bit RGB PNG (PIL keeps the high byte)")
    out["astronaut_adam7.png"] = (png_bytes(256, 256, 2, 8, np.asarray(astro).reshape(256, -1),
                                            interlace=True), "astronaut", "interlaced PNG (Adam7)")
    g4 = (np.asarray(camera) >> 4).astype(np.uint8)
    packed = (g4[:, 0::2] << 4) | g4[:, 1::2]
    out["camera_gray4.png"] = (png_bytes(256, 256, 0, 4, packed), "camera", "4-bit grayscale PNG")
    return out


# Which processor configurations run on which inputs.
PLAN = {
    "astronaut.png": ["llava15", "llava15_pad", "gemma3", "siglip384", "qwen2vl"],
    "chelsea.png": ["llava15", "llava15_pad", "siglip384", "qwen2vl", "qwen2vl_small", "molmo2"],
    "coffee.png": ["llava15_pad", "qwen2vl_small", "molmo2_small"],
    "camera_gray.png": ["llava15"],
    "rocket.jpg": ["llava15", "llava15_pad", "gemma3", "qwen2vl", "qwen2vl_small", "molmo2"],
    "retina.jpg": ["siglip384"],
    "hubble_444.jpg": ["qwen2vl_small", "molmo2_small"],
    "coffee_progressive.jpg": ["llava15"],
    "camera_gray.jpg": [],
    "chelsea_exif6.jpg": ["qwen2vl_small"],
    "chelsea_rgba.png": ["llava15"],
    "camera_la.png": [],
    "chelsea_palette.png": [],
    "chelsea_palette_trns.png": ["siglip384"],
    "coffee_rgb16.png": [],
    "astronaut_adam7.png": [],
    "camera_gray4.png": [],
}


def hostile(images):
    """name -> (bytes, the error the engine must give (a substring))."""
    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(
            ">I", zlib.crc32(tag + data) & 0xFFFFFFFF)
    sig = b"\x89PNG\r\n\x1a\n"
    out = {}
    png = images["chelsea.png"][0]
    out["truncated.png"] = (png[: len(png) // 2], "truncated")
    jpg = images["rocket.jpg"][0]
    out["truncated.jpg"] = (jpg[: len(jpg) * 2 // 3], "corrupt or truncated")
    # 100000 x 100000 RGB (30 GB decoded) in a few hundred bytes: refused from the header.
    ihdr = struct.pack(">IIBBBBB", 100000, 100000, 8, 2, 0, 0, 0)
    out["huge_dims.png"] = (sig + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(
        b"\0" * 300001)) + chunk(b"IEND", b""), "above the limit")
    # A decompression bomb: 20000 x 20000 gray, all zeros, deflated to ~400 KB would decode to
    # 1.2 GB of RGB; its first rows suffice to show it is refused before anything is inflated.
    ihdr = struct.pack(">IIBBBBB", 20000, 20000, 8, 0, 0, 0, 0)
    out["bomb.png"] = (sig + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(
        b"\0" * 20001 * 64, 9)) + chunk(b"IEND", b""), "above the limit")
    # A JPEG whose frame header claims 65000 x 65000.
    j = bytearray(images["camera_gray.jpg"][0])
    k = j.find(b"\xff\xc0")
    j[k + 5: k + 9] = struct.pack(">HH", 65000, 65000)
    out["huge_dims.jpg"] = (bytes(j), "above the limit")
    out["wrong_magic.gif"] = (open(os.path.join(DATA, "no_time_for_that_tiny.gif"), "rb").read(),
                              "GIF")
    out["wrong_magic.txt"] = (b"this is not an image\n", "wrong magic")
    out["empty.png"] = (b"", "no bytes")
    cmyk = Image.open(io.BytesIO(images["retina.jpg"][0])).convert("CMYK").resize((64, 64))
    out["cmyk.jpg"] = (save(cmyk, "JPEG", quality=80), "CMYK")
    g16 = (np.asarray(Image.open(os.path.join(DATA, "camera.png")).convert("L")).astype(
        np.uint16)[::8, ::8] * 257)
    out["gray16.png"] = (png_bytes(64, 64, 0, 16, g16), "16-bit grayscale")
    bad_crc = bytearray(images["camera_gray4.png"][0])
    bad_crc[29 + 20] ^= 0xFF  # inside IDAT's data: its CRC no longer matches
    out["bad_crc.png"] = (bytes(bad_crc), "PNG")
    return out


def table_of(proc):
    """The processor's own rescale + normalize of every 8-bit level, per channel."""
    ramp = np.repeat(np.arange(256, dtype=np.uint8)[None, :, None], 3, axis=2)  # [1, 256, 3]
    kw = dict(do_resize=False, do_center_crop=False, do_pad=False)
    if isinstance(proc, Molmo2ImageProcessor):
        # Molmo2 always resizes; its own rescale + normalize of a ramp of every level.
        import torch
        levels = torch.arange(256, dtype=torch.uint8).reshape(1, 1, 1, 256).expand(1, 3, 1, 256)
        out = proc.rescale_and_normalize(levels, proc.do_rescale, proc.rescale_factor,
                                         proc.do_normalize, proc.image_mean, proc.image_std)
        return out[0, :, 0, :].numpy().astype(np.float32)
    if isinstance(proc, Qwen2VLImageProcessorPil):
        # Qwen2-VL patchifies; a 28 x 28 tile of each level per channel, read back per patch.
        t = np.zeros((3, 256), np.float32)
        for v in range(256):
            im = Image.fromarray(np.full((28, 28, 3), v, np.uint8))
            pv = proc(images=im, return_tensors="np", do_resize=False)["pixel_values"]
            per_c = pv.reshape(pv.shape[0], 3, -1)
            for c in range(3):
                assert np.all(per_c[:, c] == per_c[0, c, 0])
                t[c, v] = per_c[0, c, 0]
        return t
    pv = proc(images=Image.fromarray(ramp), return_tensors="np", **kw)["pixel_values"]
    return pv[0, :, 0, :].astype(np.float32)  # [3, 256]


def encode_exact(pv, table, channel_of):
    """uint8 codes with table[channel, codes] == pv bit for bit."""
    codes = np.zeros(pv.shape, np.uint8)
    ch = channel_of(pv.shape)
    for c in range(3):
        sel = ch == c
        vals = pv[sel]
        idx = np.searchsorted(table[c], vals)
        idx = np.clip(idx, 0, 255)
        assert np.array_equal(table[c][idx], vals), "pixel value outside the processor's table"
        codes[sel] = idx
    assert np.array_equal(table[ch, codes], pv)
    return codes


def main():
    out_dir = sys.argv[1]
    for sub in ("inputs", "hostile", "configs", "ref"):
        shutil.rmtree(os.path.join(out_dir, sub), ignore_errors=True)
        os.makedirs(os.path.join(out_dir, sub))
    images = inputs()
    manifest = {"versions": {"transformers": transformers.__version__, "pillow": PIL.__version__,
                             "numpy": np.__version__, "scikit-image": skimage.__version__},
                "licenses": LICENSES, "inputs": {}, "cases": [], "hostile": {}}
    for name, cfg in CONFIGS.items():
        os.makedirs(os.path.join(out_dir, "configs", name))
        with open(os.path.join(out_dir, "configs", name, "preprocessor_config.json"), "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")
    procs = {}
    for name, cfg in CONFIGS.items():
        kw = {k: v for k, v in cfg.items() if k not in ("image_processor_type", "processor_class")
              and v is not None}
        procs[name] = CLASSES[cfg["image_processor_type"]](**kw)
    tables = {name: table_of(p) for name, p in procs.items()}
    for name, (data, source, what) in images.items():
        path = os.path.join(out_dir, "inputs", name)
        with open(path, "wb") as f:
            f.write(data)
        im = Image.open(path)
        decoded = convert_to_rgb(im, return_numpy=True)
        np.savez_compressed(os.path.join(out_dir, "ref", name + ".decoded.npz"), rgb=decoded)
        manifest["inputs"][name] = {"source": source, "what": what, "pil_mode": im.mode,
                                    "size": list(im.size)}
        for cname in PLAN[name]:
            im = Image.open(path)
            o = procs[cname](images=im, return_tensors="np")
            pv = np.asarray(o["pixel_values"])
            molmo2 = "image_token_pooling" in o
            if molmo2:
                channel_of = lambda s: np.broadcast_to(np.arange(s[2]) % 3, s)
            elif pv.ndim == 4:
                pv = pv[0]  # [3, H, W]
                channel_of = lambda s: np.broadcast_to(np.arange(3)[:, None, None], s)
            else:
                t_p_p = pv.shape[1] // 3
                channel_of = lambda s: np.broadcast_to((np.arange(s[1]) // t_p_p)[None, :], s)
            codes = encode_exact(pv.astype(np.float32), tables[cname], channel_of)
            arrays = {"codes": codes, "table": tables[cname]}
            case = {"input": name, "config": cname, "shape": list(pv.shape)}
            if molmo2:
                arrays["pooling"] = np.asarray(o["image_token_pooling"], np.int32)
                arrays["grids"] = np.asarray(o["image_grids"], np.int64)[0]
                case["channels_last"] = True
                case["image_grids"] = arrays["grids"].tolist()
            if "image_grid_thw" in o:
                arrays["grid_thw"] = np.asarray(o["image_grid_thw"], np.int64)
                case["grid_thw"] = arrays["grid_thw"][0].tolist()
            np.savez_compressed(os.path.join(out_dir, "ref", "%s.%s.npz" % (name, cname)), **arrays)
            manifest["cases"].append(case)
    for name, (data, expect) in hostile(images).items():
        with open(os.path.join(out_dir, "hostile", name), "wb") as f:
            f.write(data)
        manifest["hostile"][name] = expect
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
