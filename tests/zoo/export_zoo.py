#!/usr/bin/python3
"""Export the zoo: stock torchvision models as torch.onnx.export writes them (tests/zoo/README.md).

Random weights (weights=None and, for the models built on a backbone, weights_backbone=None),
torch.manual_seed per model, eval mode, batch 1 and every input shape static, the legacy
TorchScript exporter's defaults (do_constant_folding=True). Nothing is downloaded: the
download functions of torch.hub and torchvision raise while this script runs.

Each (model, opset) in ZOO is exported to OUT_DIR/<model>.op<opset>.onnx with a sidecar
OUT_DIR/<model>.op<opset>.json: {"key", "status": "exported"|"failed", "reason", "seconds",
"inputs", "torch", "torchvision", "bytes"}. A failed export is recorded with the exporter's own
message, never replaced by something else. The key hashes this script's bytes, the torch and
torchvision versions and the entry's name: an entry whose sidecar has the current key (and,
when exported, whose .onnx exists) is not exported again.

Usage: /usr/bin/python3 tests/zoo/export_zoo.py OUT_DIR [NAME ...]   (NAME: resnet18.op17, or
a model name for all its opsets; default: all). Writes the entries it covered to
OUT_DIR/entries.txt and prints one line per entry; exit 0 (a failed export is a result), 2 on
bad usage.
"""
import hashlib
import json
import os
import sys
import time
import traceback

import torch
import torchvision
from torch import nn

# (model, opset): the opset 13 entries are the models whose opset-13 form differs the most
# (LayerNorm decomposed, Hardswish/Hardsigmoid, Split/Squeeze with attribute axes); raft_small
# is tried at 13 as well so that the reason it cannot export there stays on record. Opsets 18-20
# (Reduce* axes and Split's num_outputs as inputs at 18, Gelu at 20) for three models: a residual
# CNN, one with squeeze-excitation ReduceMeans and Hardswish, and a transformer with LayerNorm
# and GELU. An entry above what this torch's TorchScript exporter writes (torch 1.13: 17) is not
# in this torch's zoo at all (`exportable`). resnet18 at opset 11 as well: the opset X5's and X3's
# hb_mapper takes (BPU9102, BPU9103).
OPSETS = {
    "resnet18": (17, 11, 13, 18, 19, 20),
    "mobilenet_v3_small": (17, 13, 18, 19, 20),
    "efficientnet_b0": (17,),
    "convnext_tiny": (17,),
    "swin_t": (17, 13, 18, 19, 20),
    "regnet_y_400mf": (17,),
    "ssdlite320_mobilenet_v3_large": (17,),
    "fcos_resnet50_fpn": (17,),
    "lraspp_mobilenet_v3_large": (17,),
    "r3d_18": (17,),
    "s3d": (17,),
    "raft_small": (17, 13),
}
ALL = [f"{model}.op{opset}" for model, opsets in OPSETS.items() for opset in opsets]


def max_exporter_opset():
    """The highest opset torch.onnx.export's TorchScript exporter writes (torch 2.6: 20)."""
    from torch.onnx import _constants as c
    return getattr(c, "ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET", c.ONNX_MAX_OPSET)


ZOO = [e for e in ALL if int(e.rsplit(".op", 1)[1]) <= max_exporter_opset()]

SEED = 20261201


def no_download(*args, **kwargs):
    raise RuntimeError("export_zoo.py must not download anything (weights are random): "
                       f"a download was asked for with {args!r}")


def forbid_downloads():
    import torch.hub
    import torchvision.models._api as api
    torch.hub.load_state_dict_from_url = no_download
    torch.hub.download_url_to_file = no_download
    api.load_state_dict_from_url = no_download
    api.WeightsEnum.get_state_dict = no_download


class Detector(nn.Module):
    """A torchvision detector on one image tensor, returning (boxes, scores, labels)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, images):
        out = self.model([images[0]])[0]
        return out["boxes"], out["scores"], out["labels"]


class Segmenter(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, images):
        return self.model(images)["out"]


class FinalFlow(nn.Module):
    """RAFT's last flow prediction (eval forward returns all of them, 12 updates by default)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, image1, image2):
        return self.model(image1, image2)[-1]


def frozen_batchnorm(module):
    """FCOS with COCO weights builds its ResNet with FrozenBatchNorm2d; weights=None gives
    BatchNorm2d. Put back the pretrained structure (its export is Mul/Add, not folded into Conv)."""
    from torchvision.ops.misc import FrozenBatchNorm2d
    for name, child in module.named_children():
        if isinstance(child, nn.BatchNorm2d):
            frozen = FrozenBatchNorm2d(child.num_features, eps=child.eps)
            for buf in ("weight", "bias", "running_mean", "running_var"):
                getattr(frozen, buf).copy_(getattr(child, buf).detach())
            setattr(module, name, frozen)
        else:
            frozen_batchnorm(child)


def build(model):
    """(module, {input name: shape})."""
    m = torchvision.models
    image = {"images": (1, 3, 224, 224)}
    if model in ("resnet18", "mobilenet_v3_small", "efficientnet_b0", "convnext_tiny", "swin_t",
                 "regnet_y_400mf"):
        return getattr(m, model)(weights=None), image
    if model == "ssdlite320_mobilenet_v3_large":
        net = m.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)
        return Detector(net), {"images": (1, 3, 320, 320)}
    if model == "fcos_resnet50_fpn":
        # min_size/max_size 320: the transform keeps a 320x320 image as it is (default: to 800).
        net = m.detection.fcos_resnet50_fpn(weights=None, weights_backbone=None, min_size=320, max_size=320)
        frozen_batchnorm(net.backbone.body)
        return Detector(net), {"images": (1, 3, 320, 320)}
    if model == "lraspp_mobilenet_v3_large":
        return Segmenter(m.segmentation.lraspp_mobilenet_v3_large(weights=None, weights_backbone=None)), image
    if model == "r3d_18":
        return m.video.r3d_18(weights=None), {"clips": (1, 3, 16, 112, 112)}
    if model == "s3d":
        # S3D ends in AvgPool3d(kernel (2, 7, 7)): 224x224 frames, 16 of them.
        return m.video.s3d(weights=None), {"clips": (1, 3, 16, 224, 224)}
    if model == "raft_small":
        return FinalFlow(m.optical_flow.raft_small(weights=None)), {"image1": (1, 3, 224, 224),
                                                                     "image2": (1, 3, 224, 224)}
    raise KeyError(model)


def script_key(entry):
    with open(__file__, "rb") as f:
        h = hashlib.sha256(f.read())
    h.update(f"\0{torch.__version__}\0{torchvision.__version__}\0{entry}".encode())
    return h.hexdigest()


def write_json(path, value):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(value, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def export(entry, out_dir):
    model, opset = entry.rsplit(".op", 1)
    opset = int(opset)
    onnx_path = os.path.join(out_dir, entry + ".onnx")
    meta_path = os.path.join(out_dir, entry + ".json")
    key = script_key(entry)
    try:
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("key") == key and (meta["status"] == "failed" or os.path.exists(onnx_path)):
            return meta, True
    except (OSError, ValueError, KeyError):
        pass

    torch.manual_seed(SEED)
    start = time.monotonic()
    net, inputs = build(model)
    net.eval()
    args = tuple(torch.rand(shape) for shape in inputs.values())
    meta = {"key": key, "torch": torch.__version__, "torchvision": torchvision.__version__,
            "inputs": {name: list(shape) for name, shape in inputs.items()}}
    tmp = onnx_path + ".tmp"
    try:
        with torch.no_grad():
            torch.onnx.export(net, args, tmp, opset_version=opset, input_names=list(inputs),
                              do_constant_folding=True)
        os.replace(tmp, onnx_path)
        meta.update(status="exported", reason="", bytes=os.path.getsize(onnx_path))
    except Exception as e:  # the exporter's own reason is the record
        lines = [line for line in str(e).splitlines() if line.strip()]
        meta.update(status="failed", reason=f"{type(e).__name__}: {lines[0] if lines else ''}", bytes=0)
        traceback.print_exc(limit=2, file=sys.stderr)
        for path in (tmp, onnx_path):
            if os.path.exists(path):
                os.remove(path)
    meta["seconds"] = round(time.monotonic() - start, 2)
    write_json(meta_path, meta)
    return meta, False


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = argv[1]
    wanted = argv[2:]
    entries = [e for e in ZOO if not wanted or e in wanted or e.rsplit(".op", 1)[0] in wanted]
    unknown = [w for w in wanted if w not in ALL and w not in OPSETS]
    if unknown:
        print(f"export_zoo.py: unknown entries {unknown}; the zoo is {ALL}", file=sys.stderr)
        return 2
    newer = [w for w in wanted if w in ALL and w not in ZOO]
    if newer:
        print(f"export_zoo.py: {newer}: torch {torch.__version__} exports opsets up to "
              f"{max_exporter_opset()}", file=sys.stderr)
        return 2
    os.makedirs(out_dir, exist_ok=True)
    forbid_downloads()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    # What this run covers, for run_zoo.py (a sidecar of an entry no longer in ZOO is not one).
    with open(os.path.join(out_dir, "entries.txt"), "w") as f:
        f.write("".join(e + "\n" for e in entries))
    for entry in entries:
        meta, cached = export(entry, out_dir)
        how = "cached" if cached else f"{meta['seconds']:.1f} s"
        what = f"{meta['bytes'] / 2**20:.1f} MiB" if meta["status"] == "exported" else meta["reason"]
        print(f"export {entry}: {meta['status']} ({how}): {what}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
