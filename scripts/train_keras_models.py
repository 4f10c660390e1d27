#!/usr/bin/env python3
"""Train the Keras test models of ptq's Keras HDF5 importer (model/keras.c)
on Fashion-MNIST and save them as .h5 with Keras's own outputs on the
10,000 test images (float32 .npy [10000, 10]).

Not part of the build or CI: it needs Keras 3 with the TensorFlow backend and
tf-keras (tf.keras 2.x) from PyPI, e.g.
    python3 -m venv /work/venv-keras
    /work/venv-keras/bin/pip install tensorflow-cpu keras tf-keras h5py
    /work/venv-keras/bin/python scripts/train_keras_models.py [--epochs 3] [--out tests/data/keras]
Images come from Debian's dataset-fashion-mnist (IDX files), fed as
pixels / 255 in NHWC [N, 28, 28, 1], which is what ptq's default
preprocessing gives. It writes into --out:
  func_k3.h5   functional Keras 3 model: Normalization, Conv2D, BatchNormalization,
               DepthwiseConv2D, SeparableConv2D, a residual Add, Multiply,
               Concatenate, ZeroPadding2D, 'same' padding with odd totals,
               dilation, relu/relu6/swish/gelu/sigmoid, global pooling, softmax output
  seq_k3.h5    Sequential Keras 3 model: Rescaling, Conv2D, ReLU layers, pooling,
               SpatialDropout2D, Flatten, Reshape, Dense, Dropout; logits output
  seq_tfk2.h5  the same Sequential model and weights saved by tf.keras 2.x (tf-keras)
  <name>.expected.npy  the model's output on the 10,000 test images
"""
import argparse
import gzip
import os
import struct

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    with gzip.open(path, "rb") as f:
        magic = struct.unpack(">I", f.read(4))[0]
        ndim = magic & 0xFF
        dims = struct.unpack(">" + "I" * ndim, f.read(4 * ndim))
        return np.frombuffer(f.read(), dtype=np.uint8).reshape(dims)


def load(split):
    x = read_idx(f"{DATA}/{split}-images-idx3-ubyte.gz").astype(np.float32) / np.float32(255.0)
    y = read_idx(f"{DATA}/{split}-labels-idx1-ubyte.gz").astype(np.int64)
    return x[..., None], y


def functional(keras, x_train):
    L = keras.layers
    inp = keras.Input((28, 28, 1), name="image")
    norm = L.Normalization(axis=-1, name="norm")
    norm.adapt(x_train[:10000])
    x = norm(inp)
    x = L.Conv2D(16, 3, padding="same", use_bias=False, name="stem_conv")(x)
    x = L.BatchNormalization(name="stem_bn")(x)
    x = L.Activation("relu", name="stem_relu")(x)
    # residual block: depthwise -> BN -> swish -> pointwise -> BN, + input
    r = L.DepthwiseConv2D(3, padding="same", depth_multiplier=2, name="block_dw")(x)
    r = L.BatchNormalization(name="block_dw_bn")(r)
    r = L.Activation("swish", name="block_swish")(r)
    r = L.Conv2D(16, 1, use_bias=False, name="block_pw")(r)
    r = L.BatchNormalization(name="block_pw_bn")(r)
    x = L.Add(name="block_add")([x, r])
    x = L.ReLU(max_value=6.0, name="block_relu6")(x)
    x = L.MaxPooling2D(2, name="pool1")(x)  # 14x14
    x = L.SeparableConv2D(32, 3, padding="same", activation="relu6", name="sep")(x)
    # two branches down to 7x7: zero padding + valid stride 2, and 'same' stride 2 (odd total padding)
    a = L.ZeroPadding2D(((1, 1), (0, 1)), name="pad")(x)
    a = L.Conv2D(24, 3, strides=2, padding="valid", activation="gelu", name="branch_a")(a)
    b = L.Conv2D(24, 3, strides=2, padding="same", activation="relu", name="branch_b")(x)
    x = L.Concatenate(name="concat")([a, b])  # 7x7x48
    gate = L.Conv2D(48, 1, activation="sigmoid", name="gate")(x)
    x = L.Multiply(name="gated")([x, gate])
    x = L.Conv2D(48, 3, padding="same", dilation_rate=2, activation="relu", name="dilated")(x)
    x = L.AveragePooling2D(2, padding="same", name="avgpool")(x)  # 4x4, the last row/column pooled alone
    g1 = L.GlobalAveragePooling2D(name="gap")(x)
    g2 = L.GlobalMaxPooling2D(name="gmp")(x)
    x = L.Concatenate(name="features")([g1, g2])
    x = L.Dropout(0.2, name="drop")(x)
    x = L.Dense(10, name="logits")(x)
    out = L.Activation("softmax", name="probs")(x)
    return keras.Model(inp, out, name="fmnist_func")


def sequential(keras):
    L = keras.layers
    return keras.Sequential([
        keras.Input((28, 28, 1), name="image"),
        L.Rescaling(2.0, offset=-1.0, name="rescale"),
        L.Conv2D(16, 5, activation="relu", name="conv1"),  # 24x24
        L.MaxPooling2D(2, name="pool1"),  # 12x12
        L.Conv2D(32, 3, padding="same", name="conv2"),
        L.ReLU(negative_slope=0.1, name="leaky"),
        L.SpatialDropout2D(0.1, name="sdrop"),
        L.MaxPooling2D(3, strides=2, padding="same", name="pool2"),  # 6x6
        L.Flatten(name="flat"),
        L.Reshape((6, 6, 32), name="unflat"),
        L.Conv2D(32, 1, name="mix"),
        L.ReLU(max_value=6.0, name="relu6"),
        L.Flatten(name="flat2"),
        L.Dense(64, activation="relu", name="fc1"),
        L.Dropout(0.3, name="drop"),
        L.Dense(10, name="logits"),
    ], name="fmnist_seq")


def train(keras, model, x, y, epochs, from_logits):
    model.compile(optimizer=keras.optimizers.Adam(2e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=from_logits), metrics=["accuracy"])
    model.fit(x, y, batch_size=128, epochs=epochs, verbose=2)


def save(model, out, name, x_test, y_test):
    path = os.path.join(out, name + ".h5")
    model.save(path)
    pred = model.predict(x_test, batch_size=500, verbose=0).astype(np.float32)
    np.save(os.path.join(out, name + ".expected.npy"), pred)
    acc = float(np.mean(pred.argmax(1) == y_test))
    print(f"{path}: {os.path.getsize(path)} bytes, test top-1 {acc * 100:.2f}%")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--out", default="tests/data/keras")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    import keras
    import tensorflow as tf
    tf.random.set_seed(0)
    keras.utils.set_random_seed(0)
    x_train, y_train = load("train")
    x_test, y_test = load("t10k")

    func = functional(keras, x_train)
    train(keras, func, x_train, y_train, args.epochs, from_logits=False)
    save(func, args.out, "func_k3", x_test, y_test)

    seq = sequential(keras)
    train(keras, seq, x_train, y_train, args.epochs, from_logits=True)
    save(seq, args.out, "seq_k3", x_test, y_test)

    try:
        import tf_keras
    except ImportError:
        print("tf-keras is not installed: no tf.keras 2.x model written")
        return
    seq2 = sequential(tf_keras)
    seq2.set_weights(seq.get_weights())
    save(seq2, args.out, "seq_tfk2", x_test, y_test)


if __name__ == "__main__":
    main()
