#!/usr/bin/env python3
"""Train a small BERT-style text classifier for ptq's transformer path: a
topic classifier over six categories of Debian's `fortunes` package
(fortune-mod data, 1:1.99.1-7.3 on Debian 12: /usr/share/games/fortunes/
<category>, quotes separated by '%' lines): computers, men-women, politics,
science, songs-poems, work. Quotes found in more than one of them, or with
no word, are dropped; 20% of each category (a seeded permutation) is the test
split, the rest trains and calibrates (the split and the tokenizer are in
scripts/text_data.py, which needs no torch).
Tokenizer (here, word level): lowercase, words are runs of a-z, the vocabulary
is [PAD]=0, [UNK]=1 and then the training split's most frequent words (seen
at least twice); sequences are cut or right-padded to MAX_LEN tokens.
Model: token embedding (Gather) + learned position embedding, post-LayerNorm
encoder layers (explicit attention: MatMul, Softmax, MatMul; the padding
mask added to the scores as (mask - 1) * 10000; GELU MLP), mean pooling over
the unmasked tokens (as ReduceMean(h * m) / ReduceMean(m)), a Linear.
Inputs `input_ids` and `attention_mask`, int64 [N, L] with L at most MAX_LEN
(the position table's rows; the data is cut or padded to MAX_LEN); output
`logits` [N, classes]. Exports models/text_encoder.onnx (opset 17, dynamic
batch and length: the length reaches the reshapes and the position table's
Slice through Shape/Gather/Concat, as PyTorch exports such models) and models/text_encoder.vocab.json (tokenizer, vocabulary, classes),
writes the test and calibration (training) splits as HDF5 for ptq
(--out-data: test.h5 and calib.h5 with input_ids, attention_mask, labels and
a root attribute class_names) and checks that onnxruntime, when importable,
gives the torch model's test accuracy and predictions. models/ holds the
one the defaults make (58.49% FP32 test top-1, majority class 24.4%; about 5 CPU minutes).
Interpreter: Debian's /usr/bin/python3 (python3-torch 1.13, python3-onnx,
python3-h5py) trains and exports; run it from a venv made with
--system-site-packages that adds onnxruntime (scripts/setup.sh makes .venv
so) to get the ORT check too. Needs `apt-get install fortunes`. Run:
    .venv/bin/python3 scripts/train_text.py [--epochs 30] [--threads 1]
        [--out models/text_encoder.onnx] [--out-data out/text]
"""
import argparse
import json
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from text_data import (CLASSES, FORTUNES, MAX_LEN, PAD, UNK, encode, make_vocab, read_fortunes, split, vocab_path,
                       write_h5)

MASK_NEG = 10000.0


class Attention(nn.Module):
    """BERT's self-attention: separate query, key and value projections."""

    def __init__(self, dim, heads):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)

    def split_heads(self, x):  # [N, L, D] -> [N, H, L, d]
        return x.reshape(-1, x.shape[1], self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x, bias):  # x: [N, L, D]; bias: [N, 1, 1, L], 0 or -MASK_NEG
        q, k, v = self.split_heads(self.q(x)), self.split_heads(self.k(x)), self.split_heads(self.v(x))
        att = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * (1.0 / self.head_dim ** 0.5) + bias, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(-1, x.shape[1], self.heads * self.head_dim)  # [N, L, D]
        return self.proj(y)


class EncoderLayer(nn.Module):
    """BERT's post-LayerNorm layer."""

    def __init__(self, dim, heads, mlp, drop):
        super().__init__()
        self.att = Attention(dim, heads)
        self.ln1 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Linear(mlp, dim))
        self.ln2 = nn.LayerNorm(dim)
        self.drop = nn.Dropout(drop)

    def forward(self, x, bias):
        x = self.ln1(x + self.drop(self.att(x, bias)))
        return self.ln2(x + self.drop(self.mlp(x)))


class TextEncoder(nn.Module):
    def __init__(self, vocab, classes, dim=64, depth=2, heads=4, mlp=128, drop=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim, padding_idx=PAD)
        self.pos = nn.Parameter(torch.randn(1, MAX_LEN, dim) * 0.02)
        self.ln = nn.LayerNorm(dim)
        self.drop = nn.Dropout(drop)
        self.layers = nn.ModuleList([EncoderLayer(dim, heads, mlp, drop) for _ in range(depth)])
        self.fc = nn.Linear(dim, classes)

    def forward(self, input_ids, attention_mask):  # int64 [N, L] each, L <= MAX_LEN -> logits [N, classes]
        length = input_ids.shape[1]
        m = attention_mask.to(torch.float32)
        bias = ((m - 1.0) * MASK_NEG).reshape(-1, 1, 1, length)
        x = self.drop(self.ln(self.tok(input_ids) + self.pos[:, :length]))
        for layer in self.layers:
            x = layer(x, bias)
        m = m.reshape(-1, length, 1)
        pooled = (x * m).mean(1) / m.mean(1).clamp(min=1.0 / MAX_LEN)  # mean over the unmasked tokens
        return self.fc(pooled)


def predict(net, ids, mask):
    net.eval()
    with torch.no_grad():
        return np.concatenate([net(torch.from_numpy(ids[i:i + 512]), torch.from_numpy(mask[i:i + 512])).argmax(1).numpy()
                               for i in range(0, len(ids), 512)])


def export(net, out, vocab, n_train, n_test):
    net.eval()
    tmp = out + ".tmp"
    x1 = (torch.ones(1, MAX_LEN, dtype=torch.int64), torch.ones(1, MAX_LEN, dtype=torch.int64))
    kw = {"dynamo": False} if "dynamo" in torch.onnx.export.__code__.co_varnames else {}
    torch.onnx.export(net, x1, tmp, opset_version=17, input_names=["input_ids", "attention_mask"],
                      output_names=["logits"],
                      dynamic_axes={"input_ids": {0: "N", 1: "L"}, "attention_mask": {0: "N", 1: "L"},
                                    "logits": {0: "N"}},
                      do_constant_folding=True, **kw)
    import onnx
    m = onnx.load(tmp)
    for k, v in (("ptq.class_names", ",".join(CLASSES)),
                 ("ptq.tokenizer", f"words=[a-z]+ lowercase max_len={MAX_LEN} pad={PAD} unk={UNK} "
                                   f"vocab={os.path.basename(vocab_path(out))}")):
        e = m.metadata_props.add()
        e.key, e.value = k, v
    m.producer_name = "ptq/scripts/train_text.py"
    onnx.checker.check_model(m)
    onnx.save(m, out)
    os.remove(tmp)
    with open(vocab_path(out), "w") as f:
        json.dump({"source": "Debian package fortunes (fortune-mod data), /usr/share/games/fortunes",
                   "classes": CLASSES, "train_samples": n_train, "test_samples": n_test,
                   "tokenizer": "lowercase; words are runs of a-z; unknown words -> [UNK]; "
                                "cut or right-padded with [PAD] to max_len",
                   "max_len": MAX_LEN, "pad": PAD, "unk": UNK, "vocab": vocab}, f, indent=0)
        f.write("\n")


def ort_predict(path, ids, mask):
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return np.concatenate([s.run(None, {"input_ids": ids[i:i + 512], "attention_mask": mask[i:i + 512]})[0].argmax(1)
                           for i in range(0, len(ids), 512)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=30)
    ap.add_argument("--vocab", type=int, default=4000, help="vocabulary size, [PAD] and [UNK] included")
    ap.add_argument("--out", default="models/text_encoder.onnx")
    ap.add_argument("--out-data", default="out/text", help="folder for test.h5 and calib.h5")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data", default=FORTUNES, help="folder of the fortune files")
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    train, test = split(read_fortunes(a.data), a.seed)
    vocab = make_vocab(train, a.vocab)
    xtr, mtr, ytr = encode(train, vocab)
    xte, mte, yte = encode(test, vocab)
    print(f"{len(train)} training and {len(test)} test quotes, {len(CLASSES)} classes, vocabulary {len(vocab)}; "
          f"test tokens unknown {(xte[mte == 1] == UNK).mean() * 100:.1f}%, cut {(mte[:, -1] == 1).mean() * 100:.1f}%")
    os.makedirs(a.out_data, exist_ok=True)
    write_h5(os.path.join(a.out_data, "test.h5"), xte, mte, yte)
    write_h5(os.path.join(a.out_data, "calib.h5"), xtr, mtr, ytr)
    net = TextEncoder(len(vocab), len(CLASSES))
    bs = 64
    steps = a.epochs * ((len(train) + bs - 1) // bs)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3, weight_decay=0.05)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-3, total_steps=steps, pct_start=0.1)
    xtr_t, mtr_t, ytr_t = torch.from_numpy(xtr), torch.from_numpy(mtr), torch.from_numpy(ytr)
    t_start = time.time()
    for ep in range(a.epochs):
        net.train()
        perm = torch.randperm(len(train))
        for i in range(0, len(train), bs):
            idx = perm[i:i + bs]
            loss = F.cross_entropy(net(xtr_t[idx], mtr_t[idx]), ytr_t[idx], label_smoothing=0.1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        if (ep + 1) % 5 == 0 or ep + 1 == a.epochs:
            print(f"epoch {ep + 1}/{a.epochs} loss {loss.item():.3f} "
                  f"test {(predict(net, xte, mte) == yte).mean() * 100:.2f}% ({time.time() - t_start:.0f} s)", flush=True)
    print(f"training took {time.time() - t_start:.0f} s")
    export(net, a.out, vocab, len(train), len(test))
    torch_pred = predict(net, xte, mte)
    print(f"wrote {a.out} ({os.path.getsize(a.out)} bytes), {vocab_path(a.out)}, "
          f"{a.out_data}/test.h5 ({len(test)}), {a.out_data}/calib.h5 ({len(train)}); "
          f"FP32 test accuracy {(torch_pred == yte).mean() * 100:.2f}%")
    ort_pred = ort_predict(a.out, xte, mte)
    if ort_pred is None:
        print("onnxruntime not importable: ONNX check skipped")
    else:
        print(f"test top-1: torch {(torch_pred == yte).mean() * 100:.2f}%, onnxruntime {(ort_pred == yte).mean() * 100:.2f}%, "
              f"prediction agreement {(ort_pred == torch_pred).mean() * 100:.2f}%")
    import onnx
    print("ops:", " ".join(sorted(set(n.op_type for n in onnx.load(a.out).graph.node))))


if __name__ == "__main__":
    main()
