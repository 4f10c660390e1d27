#!/usr/bin/env python3
"""Resize and Upsample, which torch's F.interpolate and nn.Upsample export (UNet, FPN) and ptq refused, exit 5 "op
Resize is not supported": one-node models (built here with onnx.helper: every mode, coordinate transformation,
nearest rounding and cubic option; scales or sizes, opsets 7 to 19) and a small UNet/FPN-style net torch exports
here at opsets 9 (Upsample), 11, 13 and 17 (nearest, bilinear with and without align_corners, bicubic, and sizes
taken from another tensor's shape) run by `ptq eval` against onnxruntime, `ptq info`'s shapes at a dynamic batch,
and the net through calibrate, plan, validate and a Q/DQ export that onnxruntime runs to validate's predictions
(check_ort_agrees). Skips (77) without onnx, onnxruntime or torch. Run by ctest with PTQ_BIN and PTQ_SOURCE_DIR
set."""
import json
import os
import sys
import tempfile
import warnings

from ptqtest import check, check_placements, finish, ptq

try:
    import h5py
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    from onnx import TensorProto, helper, numpy_helper
except ImportError as e:  # pragma: no cover
    print(f"ops_resize_test: skipped ({e})")
    sys.exit(77)

TMP = tempfile.mkdtemp(prefix="ptq-resize-")
ROWS = 7  # the batch of the one-node models


def J(*p):
    return os.path.join(TMP, *p)


def eval_vs_ort(label, model, x, tol=1e-5, env=None):
    """ptq eval's logits within tol (absolute plus relative) of onnxruntime's on every element; x [N, F] is fed as
    stored (not an image: the models reshape it)."""
    want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    data = J(label + ".h5")
    with h5py.File(data, "w") as f:
        f["x"] = x
        f["labels"] = want.reshape(len(want), -1).argmax(1)
    rc, _, err = ptq("eval", "--model", model, "--data", data, "--logits", J(label + ".npy"), env=env)
    got = np.load(J(label + ".npy")) if rc == 0 else None
    diff = np.abs(got.reshape(want.shape) - want) if got is not None and got.size == want.size else None
    ok = diff is not None and bool(np.all(diff <= tol * (1 + np.abs(want))))
    check(f"{label}: eval within {tol:g} of onnxruntime", ok,
          err.strip()[-300:] if rc else f"max |diff| {diff.max() if diff is not None else 'shape'}")
    return data


def one_node(name, node, xshape, opset, inits=()):
    """x [N, prod(xshape[1:])] reshaped to xshape (N dynamic), node, then Flatten to y."""
    shp = numpy_helper.from_array(np.array([-1, *xshape[1:]], np.int64), "shp")
    nodes = [helper.make_node("Reshape", ["x", "shp"], ["img"]), node, helper.make_node("Flatten", ["r"], ["y"])]
    flat = int(np.prod(xshape[1:]))
    g = helper.make_graph(nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", flat])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [shp, *inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    path = J(name + ".onnx")
    onnx.save(m, path)
    return path


def f32(name, v):
    return numpy_helper.from_array(np.array(v, np.float32), name)


def i64(name, v):
    return numpy_helper.from_array(np.array(v, np.int64), name)


def resize_cases():
    """(label, opset, attributes, x shape, scales, sizes, roi): the node's inputs as opset 11 and later name them
    (None: an empty name), or opset 10's scales."""
    up = [1, 1, 2, 3]
    # align_corners's length_resized is in * scale, unfloored, in ONNX's reference and node tests, onnxruntime's
    # the floored output length: they agree where in * scale is whole (5 * 0.6, 6 * 0.5)
    down = {"align_corners": [1, 1, 0.6, 0.5]}
    cases = [("resize10_nearest_up", 10, {"mode": "nearest"}, (3, 2, 5, 4), [1, 1, 2.5, 1.5], None, None),
             ("resize10_nearest_down", 10, {"mode": "nearest"}, (3, 2, 5, 7), [1, 1, 0.5, 0.75], None, None),
             ("resize10_linear", 10, {"mode": "linear"}, (3, 2, 5, 4), [1, 1, 1.5, 2], None, None),
             ("resize11_tf_half_pixel_for_nn", 11, {"mode": "nearest",
                                                    "coordinate_transformation_mode": "tf_half_pixel_for_nn"},
              (2, 2, 4, 6), None, [2, 2, 3, 4], None)]
    for coord in ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"):
        for mode in ("nearest", "linear", "cubic"):
            for tag, scales in (("up", up), ("down", down.get(coord, [1, 1, 0.6, 0.8]))):
                cases.append((f"resize13_{mode}_{coord}_{tag}", 13,
                              {"mode": mode, "coordinate_transformation_mode": coord}, (3, 2, 5, 6), scales, None,
                              None))
            cases.append((f"resize13_{mode}_{coord}_sizes", 13, {"mode": mode, "coordinate_transformation_mode": coord},
                          (3, 2, 5, 6), None, [3, 2, 7, 4], None))
    for rnd in ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil"):
        cases.append((f"resize13_nearest_{rnd}", 13, {"mode": "nearest", "nearest_mode": rnd}, (3, 2, 4, 6),
                      [1, 1, 2.5, 0.5], None, None))
    cases += [("resize13_cubic_a-0.5_exclude", 13, {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1},
               (3, 2, 5, 6), [1, 1, 1.7, 0.6], None, None),
              ("resize13_crop_linear", 13, {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize",
                                            "extrapolation_value": 10.0},
               (3, 2, 5, 6), None, [3, 2, 4, 5], [0, 0, 0.4, -0.3, 1, 1, 0.6, 1.2]),
              ("resize13_crop_nearest", 13, {"mode": "nearest", "coordinate_transformation_mode": "tf_crop_and_resize",
                                             "extrapolation_value": -2.0},
               (3, 2, 5, 6), None, [3, 2, 4, 5], [0, 0, 0.2, 0.1, 1, 1, 1.3, 0.7]),
              ("resize13_trilinear", 13, {"mode": "linear"}, (2, 2, 3, 4, 5), [1, 1, 2, 1.5, 0.8], None, None),
              ("resize13_nearest_5d", 13, {"mode": "nearest"}, (2, 2, 3, 4, 5), [1, 1, 2, 1.5, 0.8], None, None),
              ("resize18_axes_scales", 18, {"mode": "linear", "axes": [-2, -1]}, (3, 2, 5, 6), [2, 0.5], None, None),
              ("resize18_axes_sizes", 18, {"mode": "cubic", "axes": [3, 2]}, (3, 2, 5, 6), None, [9, 7], None),
              ("resize18_not_larger", 18, {"mode": "linear", "axes": [2, 3], "keep_aspect_ratio_policy": "not_larger"},
               (3, 2, 5, 6), None, [7, 12], None),
              ("resize18_not_smaller", 18, {"mode": "nearest", "axes": [2, 3],
                                            "keep_aspect_ratio_policy": "not_smaller"},
               (3, 2, 5, 6), None, [7, 12], None),
              # torch 2.x's exporter writes keep_aspect_ratio_policy "stretch" (the default) beside scales
              ("resize18_scales_stretch", 18, {"mode": "nearest", "keep_aspect_ratio_policy": "stretch"},
               (3, 2, 5, 6), [1, 1, 2, 2], None, None),
              ("resize19_half_pixel_symmetric", 19, {"mode": "linear",
                                                     "coordinate_transformation_mode": "half_pixel_symmetric"},
               (3, 2, 5, 6), [1, 1, 1.7, 0.6], None, None)]
    return cases


def check_resize_nodes(rng):
    for label, opset, attrs, xshape, scales, sizes, roi in resize_cases():
        inits = []
        if opset < 11:
            inputs = ["img", "scales"]
        else:
            inputs = ["img", "roi" if roi is not None else "", "scales" if scales is not None else "",
                      "sizes" if sizes is not None else ""]
            if opset == 11:  # opset 11's scales input is not optional: an empty one stands for none
                inputs[1], inputs[2] = "roi", inputs[2] or "empty"
                inits += [f32("empty", np.zeros(0))] + ([] if roi is not None else [f32("roi", np.zeros(0))])
        if roi is not None:
            inits.append(f32("roi", roi))
        if scales is not None:
            inits.append(f32("scales", scales))
        if sizes is not None:  # the batch's size kept where sizes name it
            inits.append(i64("sizes", [ROWS, *sizes[1:]] if len(sizes) == len(xshape) else sizes))
        while inputs[-1] == "":
            inputs.pop()
        node = helper.make_node("Resize", inputs, ["r"], **attrs)
        x = rng.standard_normal((ROWS, int(np.prod(xshape[1:])))).astype(np.float32)
        eval_vs_ort(label, one_node(label, node, xshape, opset, inits), x)


def check_upsample_nodes(rng):
    """Upsample 9 (scales input) and 7 (scales attribute), nearest and linear."""
    for mode in ("nearest", "linear"):
        label = f"upsample9_{mode}"
        node = helper.make_node("Upsample", ["img", "scales"], ["r"], mode=mode)
        x = rng.standard_normal((5, 2 * 5 * 4)).astype(np.float32)
        eval_vs_ort(label, one_node(label, node, (5, 2, 5, 4), 9, [f32("scales", [1, 1, 2, 3])]), x)
        label = f"upsample7_{mode}"
        node = helper.make_node("Upsample", ["img"], ["r"], mode=mode, scales=[1.0, 1.0, 3.0, 2.0])
        eval_vs_ort(label, one_node(label, node, (5, 2, 5, 4), 7), x)


def check_refusals():
    """What ptq does not do is refused naming the node (exit 5), not run wrong; what ONNX forbids, as malformed
    (exit 4)."""
    x = np.zeros((2, 2 * 5 * 6), np.float32)
    for label, opset, node, inits, want, want_rc in [
            ("antialias", 18, helper.make_node("Resize", ["img", "", "scales"], ["r"], mode="linear", antialias=1),
             [f32("scales", [1, 1, 0.5, 0.5])], "antialias", 5),
            ("upsample10", 10, helper.make_node("Upsample", ["img", "scales"], ["r"]),
             [f32("scales", [1, 1, 2, 2])], "deprecated", 5),
            # onnx's shape inference (and so onnxruntime) refuses a policy other than stretch beside scales
            ("scales_not_larger", 18, helper.make_node("Resize", ["img", "", "scales"], ["r"], mode="linear",
                                                       keep_aspect_ratio_policy="not_larger"),
             [f32("scales", [1, 1, 1.5, 0.5])], "keep_aspect_ratio_policy not_larger applies to sizes", 4)]:
        model = one_node(label, node, (2, 2, 5, 6), opset, inits)
        with h5py.File(J(label + ".h5"), "w") as f:
            f["x"] = x
            f["labels"] = np.zeros(2, np.int64)
        rc, _, err = ptq("eval", "--model", model, "--data", J(label + ".h5"))
        check(f"{label}: refused naming the node (exit {want_rc}, '{want}')",
              rc == want_rc and want in err and f"({node.op_type}, domain" in err, f"exit {rc}: {err.strip()[-300:]}")


class UNet(nn.Module):
    """A UNet/FPN-style classifier on 16x16 inputs fed flat: nearest and bilinear nn.Upsample over a skip
    connection, and (full) an FPN top-down F.interpolate to another tensor's shape, a bicubic downsampling and a
    bilinear align_corners=True upsampling to twice a shape read at run time."""

    def __init__(self, full):
        super().__init__()
        self.full = full
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.c3 = nn.Conv2d(24, 8, 3, padding=1)
        self.up2 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.c4 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = x.reshape(-1, 1, 16, 16)
        a = F.relu(self.c1(x))
        b = F.relu(self.c2(F.max_pool2d(a, 2)))
        c = F.relu(self.c3(torch.cat([self.up1(b), a], 1)))
        d = F.relu(self.c4(self.up2(F.max_pool2d(c, 2))))
        if self.full:
            d = F.interpolate(F.max_pool2d(d, 4), size=d.shape[-2:], mode="nearest") + d
            d = F.interpolate(d, scale_factor=0.5, mode="bicubic", align_corners=False)
            d = F.interpolate(d, size=(d.shape[-2] * 2, d.shape[-1] * 2), mode="bilinear", align_corners=True)
        return self.fc(d.mean((2, 3)))


def export_unet(opset):
    torch.manual_seed(0)
    path = J(f"unet{opset}.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(UNet(opset > 9).eval(), torch.randn(2, 256), path, opset_version=opset, input_names=["x"],
                          output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
    ops = {n.op_type for n in onnx.load(path).graph.node}
    check(f"unet{opset}: torch exported {'Upsample' if opset < 10 else 'Resize'}",
          ("Upsample" if opset < 10 else "Resize") in ops, str(sorted(ops)))
    return path


def check_unets(rng):
    x = rng.standard_normal((40, 256)).astype(np.float32)
    for opset in (9, 11, 13, 17):
        model = export_unet(opset)
        eval_vs_ort(f"unet{opset}", model, x, tol=1e-5)
        eval_vs_ort(f"unet{opset} (passes of 3 rows)", model, x, tol=1e-5, env={"PTQ_PASS_ROWS": "3"})
        rc, out, err = ptq("info", model)
        op = "Upsample" if opset < 10 else "Resize"
        shapes = [line.split()[-1] for line in out.splitlines() if line.split()[1:2] == [op]]
        want = ["[1x16x16x16]", "[1x8x16x16]"] + (["[1x8x16x16]", "[1x8x8x8]", "[1x8x16x16]"] if opset > 9 else [])
        check(f"unet{opset}: info gives y [?x10] at a dynamic batch and each {op}'s shape at batch 1",
              rc == 0 and "y  float32 [?x10]" in out and shapes == want, f"exit {rc}: {shapes} {err.strip()[-300:]}")
    return x


class AlignCorners(nn.Module):
    """F.interpolate(scale_factor, align_corners=True), which torch exports with scales: on 5x5 by 1.5 (7.5 pixels,
    7 made) torch and onnxruntime take (5 - 1) / (7 - 1), ONNX's reference and node tests (5 - 1) / (7.5 - 1)."""

    def __init__(self, side, scale):
        super().__init__()
        self.side, self.scale = side, scale

    def forward(self, x):
        x = x.reshape(-1, 1, self.side, self.side)
        return F.interpolate(x, scale_factor=self.scale, mode="bilinear", align_corners=True).flatten(1)


def check_align_corners_scales(rng):
    """A whole input * scale runs as torch computes it; a fractional one is refused naming the node (exit 5), not
    run to numbers torch and onnxruntime do not give."""
    for side, scale, whole in ((6, 1.5, True), (5, 1.5, False)):
        label = f"align_corners_{side}x{scale}"
        path = J(label + ".onnx")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(AlignCorners(side, scale), torch.randn(2, side * side), path, opset_version=13,
                              input_names=["x"], output_names=["y"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}})
        x = rng.standard_normal((5, side * side)).astype(np.float32)
        if whole:
            eval_vs_ort(label, path, x)
            continue
        with h5py.File(J(label + ".h5"), "w") as f:
            f["x"] = x
            f["labels"] = np.zeros(len(x), np.int64)
        rc, _, err = ptq("eval", "--model", path, "--data", J(label + ".h5"))
        check(f"{label}: refused naming the node (exit 5)", rc == 5 and "(Resize, domain" in err and
              "align_corners" in err, f"exit {rc}: {err.strip()[-300:]}")


def check_pipeline(x):
    """The opset-13 net through calibrate, and for placements trt, all (Q/DQ around every Resize input and output)
    and ort (the Resize outputs sharing their inputs' scales, as quantize_static's QDQResize makes them): plan,
    validate, export --format qdq, onnxruntime on the export making validate's predictions."""
    label, model = "pipeline_unet13", J("unet13.onnx")
    data = eval_vs_ort(label, model, x)
    def resize_rules(run, placement, plan):
        if placement != "ort":
            return
        with open(plan) as f:  # quantize_static's QDQResize: the output shares the input's scale
            tensors = {t["name"]: t for t in json.load(f)["tensors"]}
        got = [tensors.get(f"{r}_output_0", {}).get("rule") for r in ("/up1/Resize", "/up2/Resize", "/Resize")]
        check(f"{run}: the Resize outputs are ort.same-as-input", got == ["ort.same-as-input"] * 3, str(got))
    check_placements(label, model, data, {"x": x}, J, placements=("trt", "all", "ort"), after_plan=resize_rules)


def main():
    rng = np.random.default_rng(11)
    check_resize_nodes(rng)
    check_upsample_nodes(rng)
    check_refusals()
    check_align_corners_scales(rng)
    x = check_unets(rng)
    check_pipeline(x)
    return finish("ops_resize_test")


if __name__ == "__main__":
    sys.exit(main())
