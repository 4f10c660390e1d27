#!/usr/bin/env python3
"""Make the small Keras models of tests/keras_test.py's layer cases: each a
few layers with random weights (BatchNormalization statistics too), saved
by Keras 3 as tests/data/keras/case_<name>.h5, with case_<name>.npz holding
the input x (float32 [8, ...], Keras's layout) and Keras's own output y.
Each covers a configuration ptq once translated wrongly; keras_test.py runs
`ptq eval` on x and compares the logits with y, so CI needs no Keras.

Not part of the build or CI: it needs Keras 3 (any backend), e.g.
    python3 -m venv /work/venv-keras && /work/venv-keras/bin/pip install keras jax h5py
    KERAS_BACKEND=jax /work/venv-keras/bin/python scripts/make_keras_cases.py [--out tests/data/keras]
Cases:
  dense4d  Dense on an image (NHWC [N, H, W, C] -> [N, H, W, units]) read by
           Conv2D, BatchNormalization, MaxPooling2D and GlobalAveragePooling2D
  lora     Conv2D and Dense with LoRA enabled (lora_rank, lora_alpha; the
           kernels lora_kernel_a and lora_kernel_b nonzero)
  fixed_batch  keras.Input(batch_size=8): batch_shape [8, ...], a fixed batch
"""
import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import numpy as np  # noqa: E402


def randomize(model, rs):
    for layer in model.layers:
        new = []
        for w in layer.weights:
            v = rs.uniform(-1, 1, w.shape).astype(np.float32)
            if "variance" in w.path:
                v = rs.uniform(0.3, 2.0, w.shape).astype(np.float32)
            new.append(v)
        if new:
            layer.set_weights(new)


def dense4d(keras):
    L = keras.layers
    i = keras.Input((6, 6, 3), name="image")
    x = L.Dense(5, name="fc_pixels")(i)
    x = L.BatchNormalization(name="bn")(x)
    x = L.Conv2D(4, 3, padding="same", name="conv")(x)
    x = L.MaxPooling2D(2, name="pool")(x)
    x = L.Dense(4, activation="relu", name="fc_pixels2")(x)
    x = L.GlobalAveragePooling2D(name="gap")(x)
    return keras.Model(i, L.Dense(3, name="logits")(x)), (6, 6, 3)


def lora(keras):
    L = keras.layers
    i = keras.Input((6, 6, 3), name="image")
    x = L.Conv2D(4, 3, name="conv")(i)
    x = L.Flatten(name="flat")(x)
    return keras.Model(i, L.Dense(3, name="logits")(x)), (6, 6, 3)


def lora_enable(model, rs):
    """LoRA on conv (rank 2, alpha 3) and logits (rank 3, alpha 3), A and B from rs (Keras starts B at 0)."""
    for name, rank in (("conv", 2), ("logits", 3)):
        layer = model.get_layer(name)
        layer.enable_lora(rank, lora_alpha=3)
        for w in (layer.lora_kernel_a, layer.lora_kernel_b):
            w.assign(rs.uniform(-1, 1, w.shape).astype(np.float32))


def fixed_batch(keras):
    L = keras.layers
    i = keras.Input((6, 6, 3), batch_size=8, name="image")
    x = L.Conv2D(4, 3, name="conv")(i)
    x = L.Reshape((4, 16), name="rows")(x)
    x = L.Flatten(name="flat")(L.Dense(2, name="fc_rows")(x))
    return keras.Model(i, L.Dense(3, name="logits")(x)), (6, 6, 3)


CASES = {"dense4d": (dense4d, None), "lora": (lora, lora_enable), "fixed_batch": (fixed_batch, None)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data", "keras"))
    args = ap.parse_args()
    import keras
    for name, (build, after) in CASES.items():
        rs = np.random.RandomState(sum(map(ord, name)))
        model, shape = build(keras)
        randomize(model, rs)
        if after:
            after(model, rs)
        x = rs.randn(8, *shape).astype(np.float32)
        y = np.asarray(model.predict(x, verbose=0), dtype=np.float32)
        model.save(os.path.join(args.out, f"case_{name}.h5"))
        np.savez(os.path.join(args.out, f"case_{name}.npz"), x=x, y=y)
        print(f"case_{name}: output {y.shape}")


if __name__ == "__main__":
    main()
