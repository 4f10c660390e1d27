#!/usr/bin/env python3
"""Train a small VGG-style model on Fashion-MNIST: a convolutional network of
another family than the demo (residual) and MobileNet (depthwise, ReLU6)
models, held out from the choice of ptq's default calibrators and used to
check them (bench/accuracy_draws.py --only vgg). Plain 3x3 Conv + BatchNorm +
ReLU stacks, MaxPool between stages, global average pooling and a Linear
classifier; no residual Add. Trained and exported by the code of
scripts/train_mobilenet_model.py (same recipe, data and preprocessing; ONNX
opset 13, dynamic batch, BatchNorm folded). models/fmnist_vgg.onnx is the one
made on the 2-core VM with `--epochs 4 --train-images 20000` (88.55% FP32
test accuracy, about 4 minutes), by this script's first version, whose loop
had the same steps in its own copy. Run:
    python3 scripts/train_vgg_model.py [--epochs 2] [--train-images 4000] [--data DIR] --out vgg.onnx
"""
import torch.nn as nn
import torch.nn.functional as F

from train_mobilenet_model import main as train_main


def stage(c_in, c_out, n):
    layers = []
    for i in range(n):
        layers += [nn.Conv2d(c_in if i == 0 else c_out, c_out, 3, 1, 1, bias=False), nn.BatchNorm2d(c_out),
                   nn.ReLU()]
    return layers


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(*stage(1, 16, 2), nn.MaxPool2d(2), *stage(16, 32, 2), nn.MaxPool2d(2),
                                      *stage(32, 64, 2))
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc(F.adaptive_avg_pool2d(self.features(x), 1).flatten(1))


if __name__ == "__main__":
    train_main(Net, None, "ptq/scripts/train_vgg_model.py")
