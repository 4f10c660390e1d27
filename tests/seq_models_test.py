#!/usr/bin/env python3
"""Sequence classifiers beyond the BERT-style encoder, built here in torch with random weights (each < 100 KB) and
exported with the legacy exporter at opsets 13 (14 where torch needs it) and 17 (batch and length dynamic), against
onnxruntime: a LLaMA-style rotary attention (sin/cos tables sliced by the length, rotate_half's halves, Neg and
Concat; RMSNorm as Pow/ReduceMean/Sqrt) and GPT-2-style decoders (pre-LayerNorm, learned positions, the last kept
token picked by the mask's ReduceSum, or as Hugging Face's GPT2ForSequenceClassification finds it, (eq(ids,
pad).int().argmax(-1) - 1) % L: Equal, Cast, ArgMax, Sub, Mod) whose causal mask is a registered buffer sliced by
the length, torch.tril of ones (Trilu, -inf fill) or torch.triu(diagonal=1) of bools (Trilu with k, -1e9 fill); a
1-D CNN text classifier (Embedding, Conv1d, ReLU, max over time as ReduceMax, Linear; input_ids only); a T5-style
encoder whose attention bias comes from relative position buckets (Greater, Abs, Less, Log, Min, Where on int64
positions). For each: `ptq eval` logits within 1e-5 of onnxruntime's at lengths 12 and 1, batches of 7, and the
same bytes in passes of 3 rows (PTQ_PASS_ROWS=3); then calibrate, plan, validate and export --format qdq under each
--placement, onnxruntime on the Q/DQ model making `ptq validate`'s prediction on every row (check_ort_agrees). The
rotary model was refused before Neg (exit 5, 'op Neg is not supported'), the tril and triu decoders before Trilu,
the CNN before ReduceMax, the Hugging Face pooling before ArgMax, the T5 before Log, Abs, Greater and Less. Skips
(77) without torch, onnx or onnxruntime. Run by ctest with PTQ_BIN and PTQ_SOURCE_DIR set."""
import math
import os
import sys
import tempfile
import warnings

from ptqtest import check, check_ort_agrees, finish, ptq

try:
    import h5py
    import numpy as np
    import onnx
    import onnxruntime as ort
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # pragma: no cover
    print(f"seq_models_test: skipped ({e})")
    sys.exit(77)

V, D, C, LMAX = 50, 16, 4, 16


class RMSNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(1 + 0.1 * torch.randn(D))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


def rotate_half(x):
    return torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)


class Rope(nn.Module):
    """One LLaMA-style attention block (2 heads) with rotary positions, mean pooled."""

    def __init__(self):
        super().__init__()
        self.emb, self.norm = nn.Embedding(V, D), RMSNorm()
        self.q, self.k, self.v, self.o = (nn.Linear(D, D, bias=False) for _ in range(4))
        inv = 1.0 / (10000 ** (torch.arange(0, D // 2, 2).float() / (D // 2)))
        f = torch.outer(torch.arange(LMAX).float(), inv)
        self.register_buffer("cos", torch.cat((f, f), -1).cos())
        self.register_buffer("sin", torch.cat((f, f), -1).sin())
        self.head = nn.Linear(D, C, bias=False)

    def forward(self, input_ids, attention_mask):
        n, L = input_ids.shape
        x = self.emb(input_ids)
        y = self.norm(x)
        heads = lambda t: t.view(n, L, 2, D // 2).transpose(1, 2)  # noqa: E731
        q, k, v = heads(self.q(y)), heads(self.k(y)), heads(self.v(y))
        cos, sin = self.cos[:L][None, None], self.sin[:L][None, None]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        s = q @ k.transpose(2, 3) / math.sqrt(D // 2) + (1.0 - attention_mask[:, None, None, :].float()) * -1e4
        y = (F.softmax(s, dim=-1) @ v).transpose(1, 2).reshape(n, L, D)
        return self.head((x + self.o(y)).mean(1))


class GPTBlock(nn.Module):
    def __init__(self, causal):
        super().__init__()
        self.causal = causal
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.fc2 = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.register_buffer("bias", torch.tril(torch.ones(LMAX, LMAX)).view(1, 1, LMAX, LMAX))

    def forward(self, x):
        n, L, _ = x.shape
        heads = lambda t: t.view(n, L, 2, D // 2).transpose(1, 2)  # noqa: E731
        q, k, v = (heads(t) for t in self.qkv(self.ln1(x)).split(D, dim=2))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D // 2)
        if self.causal == "tril":
            att = att.masked_fill(torch.tril(torch.ones(L, L)) == 0, float("-inf"))
        elif self.causal == "triu":
            att = att.masked_fill(torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1), -1e9)
        else:
            att = att.masked_fill(self.bias[:, :, :L, :L] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(n, L, D))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    """Two GPT-2 blocks, the last kept token's features (index mask.sum(1) - 1) into the classifier."""

    def __init__(self, causal, pool="sum"):
        super().__init__()
        self.pool = pool
        self.wte, self.wpe = nn.Embedding(V, D), nn.Embedding(LMAX, D)
        self.blocks = nn.ModuleList([GPTBlock(causal), GPTBlock(causal)])
        self.lnf, self.head = nn.LayerNorm(D), nn.Linear(D, C)

    def forward(self, input_ids, attention_mask):
        n, L = input_ids.shape
        x = self.wte(input_ids) + self.wpe(torch.arange(L, dtype=torch.long))
        for b in self.blocks:
            x = b(x)
        if self.pool == "hf":  # pad id 0; a row without pads has its last token at (0 - 1) % L
            last = (torch.eq(input_ids, 0).int().argmax(-1) - 1) % L
        else:
            last = attention_mask.sum(1) - 1
        return self.head(self.lnf(x)[torch.arange(n), last])


class CNN1D(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.conv, self.head = nn.Embedding(V, D), nn.Conv1d(D, 24, 3, padding=1), nn.Linear(24, C)

    def forward(self, input_ids):
        return self.head(F.relu(self.conv(self.emb(input_ids).transpose(1, 2))).max(dim=2).values)


def rel_bucket(rel, n_buckets=8, max_distance=16):
    """T5's bidirectional relative position bucket of rel = j - i (int64): Greater, Abs, Less, Cast, Div, Log, Min,
    Where on the positions."""
    half = n_buckets // 2
    exact = half // 2
    n = torch.abs(rel)
    large = exact + (torch.log(n.float() / exact) / math.log(max_distance / exact) * (half - exact)).to(torch.long)
    large = torch.min(large, torch.full_like(large, half - 1))
    return (rel > 0).to(torch.long) * half + torch.where(n < exact, n, large)


class T5Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = RMSNorm(), RMSNorm()
        self.q, self.k, self.v, self.o = (nn.Linear(D, D, bias=False) for _ in range(4))
        self.wi, self.wo = nn.Linear(D, 2 * D, bias=False), nn.Linear(2 * D, D, bias=False)

    def forward(self, x, bias, mask_add):
        n, L, _ = x.shape
        y = self.n1(x)
        heads = lambda t: t.view(n, L, 2, D // 2).transpose(1, 2)  # noqa: E731
        q, k, v = heads(self.q(y)), heads(self.k(y)), heads(self.v(y))
        a = F.softmax((q @ k.transpose(-1, -2) + bias + mask_add).float(), dim=-1)
        x = x + self.o((a @ v).transpose(1, 2).reshape(n, L, D))
        return x + self.wo(F.relu(self.wi(self.n2(x))))


class T5(nn.Module):
    """A T5-style encoder (2 layers, RMSNorm, no position embeddings): an attention bias per head from an embedding
    of the relative position buckets, the mask added as -1e9, masked mean pooled."""

    def __init__(self):
        super().__init__()
        self.emb, self.rel = nn.Embedding(V, D), nn.Embedding(8, 2)
        self.layers = nn.ModuleList([T5Layer(), T5Layer()])
        self.norm, self.head = RMSNorm(), nn.Linear(D, C, bias=False)

    def forward(self, input_ids, attention_mask):
        L = input_ids.shape[1]
        pos = torch.arange(L, dtype=torch.long)
        bias = self.rel(rel_bucket(pos[None, :] - pos[:, None])).permute(2, 0, 1).unsqueeze(0)
        mask_add = (1.0 - attention_mask[:, None, None, :].float()) * -1e9
        x = self.emb(input_ids)
        for layer in self.layers:
            x = layer(x, bias, mask_add)
        m = attention_mask.unsqueeze(-1).float()
        return self.head((self.norm(x) * m).sum(1) / m.sum(1))


# name: (model, opsets); torch exports tril and triu from opset 14
MODELS = {"rope": (Rope, (13, 17)), "gpt": (lambda: GPT("buffer"), (13, 17)),
          "gpt-tril": (lambda: GPT("tril"), (14, 17)), "gpt-triu": (lambda: GPT("triu"), (14,)),
          "gpt-hf": (lambda: GPT("buffer", "hf"), (13, 17)), "cnn1d": (CNN1D, (13, 17)), "t5": (T5, (13, 17))}
TOKENS_ONLY = {"cnn1d"}


def export(name, path, opset):
    torch.manual_seed(0)
    m = MODELS[name][0]().eval()
    ids, mask = torch.randint(0, V, (3, 12)), torch.ones(3, 12, dtype=torch.long)
    names = ["input_ids"] if name in TOKENS_ONLY else ["input_ids", "attention_mask"]
    dyn = {k: {0: "N", 1: "L"} for k in names}
    dyn["logits"] = {0: "N"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(m, (ids,) if name in TOKENS_ONLY else (ids, mask), path, input_names=names,
                          output_names=["logits"], dynamic_axes=dyn, opset_version=opset, do_constant_folding=True)


def token_rows(rng, n, length):
    """input_ids, attention_mask int64 [n, length]: each row 1..length kept tokens, 0 after."""
    lens = rng.integers(1, length + 1, size=n)
    lens[0] = length
    mask = (np.arange(length)[None, :] < lens[:, None]).astype(np.int64)
    return rng.integers(1, V, size=(n, length)).astype(np.int64) * mask, mask


def main():
    tmp = tempfile.mkdtemp(prefix="ptq-seq-")
    J = lambda *p: os.path.join(tmp, *p)  # noqa: E731
    rng = np.random.default_rng(3)
    for name, (_, opsets) in MODELS.items():
        for opset in opsets:
            tag = f"{name} opset {opset}"
            model = J(f"{name}{opset}.onnx")
            export(name, model, opset)
            onnx.checker.check_model(model)
            sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
            inputs = {i.name for i in sess.get_inputs()}  # the Hugging Face pooling reads no mask: torch drops it
            for length in (12, 1):
                ids, mask = token_rows(rng, 40, length)
                feeds = {k: v for k, v in (("input_ids", ids), ("attention_mask", mask)) if k in inputs}
                want = sess.run(None, feeds)[0]
                data = J(f"{name}{opset}-L{length}.h5")
                with h5py.File(data, "w") as f:
                    for k, v in feeds.items():
                        f[k] = v
                    f["labels"] = want.argmax(1)
                out = J(f"{name}{opset}-L{length}.npy")
                rc, _, err = ptq("eval", "--model", model, "--data", data, "--batch", "7", "--logits", out)
                got = np.load(out) if rc == 0 else None
                check(f"{tag}, L={length}: eval within 1e-5 of onnxruntime, same predictions",
                      got is not None and got.shape == want.shape and np.abs(got - want).max() <= 1e-5
                      and (got.argmax(1) == want.argmax(1)).all(),
                      f"rc {rc}: {err.strip()[-300:]}" if got is None else f"max |diff| {np.abs(got - want).max()}")
                if got is not None:  # passes of 3 rows (runtime/batch_rows.c) give the whole batch's logits
                    rc, _, err = ptq("eval", "--model", model, "--data", data, "--batch", "7", "--logits", out,
                                     env={"PTQ_PASS_ROWS": "3"})
                    check(f"{tag}, L={length}: eval in passes of 3 rows as whole", rc == 0 and
                          np.array_equal(np.load(out), got), f"rc {rc}: {err.strip()[-300:]}")
            if rc != 0:
                continue
            calib = J(f"{name}{opset}-c.h5")
            rc, _, err = ptq("calibrate", "--model", model, "--data", J(f"{name}{opset}-L12.h5"), "--out", calib)
            check(f"{tag}: calibrate", rc == 0, err.strip()[-300:])
            with h5py.File(J(f"{name}{opset}-L12.h5")) as f:
                feeds = {k: f[k][:] for k in f if k != "labels"}
            for placement in ("trt", "ort", "all"):
                p = J(f"{name}{opset}-{placement}")
                rc, _, err = ptq("plan", calib, "--model", model, "--placement", placement, "--out", p + ".json")
                if rc == 0:
                    rc, _, err = ptq("validate", "--model", model, "--plan", p + ".json", "--data",
                                     J(f"{name}{opset}-L12.h5"), "--logits", p + ".npy", "--report", p + "-rep")
                if rc == 0:
                    rc, _, err = ptq("export", "--plan", p + ".json", "--model", model, "--format", "qdq",
                                     "--out", p + ".onnx")
                check(f"{tag}, placement {placement}: plan, validate, export", rc == 0, err.strip()[-300:])
                if rc == 0:
                    check_ort_agrees(f"{tag}, placement {placement}", p + ".onnx", feeds, p + ".npy")
    return finish("seq_models_test")


if __name__ == "__main__":
    sys.exit(main())
