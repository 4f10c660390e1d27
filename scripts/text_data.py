"""The text encoder's data set, without torch: six categories of Debian's
`fortunes` package split into training and test quotes, the word-level
tokenizer, and the HDF5 sets ptq's named inputs read. scripts/train_text.py
trains on it (its docstring says how); bench/accuracy_placement.py rebuilds
the same split and encodes it with the model's vocabulary (the .vocab.json
beside the model). Needs numpy (h5py for write_h5).
"""
import collections
import os
import re

import numpy as np

FORTUNES = "/usr/share/games/fortunes"
CLASSES = ["computers", "men-women", "politics", "science", "songs-poems", "work"]
MAX_LEN = 64
PAD, UNK = 0, 1
TEST_FRACTION = 0.2


def words(text):
    return re.findall(r"[a-z]+", text.lower())


def read_fortunes(folder):
    """{category: [quote, ...]} in file order, each quote stripped."""
    out = {}
    for c in CLASSES:
        with open(os.path.join(folder, c), encoding="latin-1") as f:
            out[c] = [q.strip() for q in re.split(r"^%\n", f.read(), flags=re.M) if q.strip()]
    return out


def split(quotes, seed):
    """(train, test): lists of (text, label); quotes in two categories, repeats or wordless ones dropped."""
    seen = collections.Counter(q for c in CLASSES for q in set(quotes[c]))
    rng = np.random.default_rng(seed)
    train, test = [], []
    for label, c in enumerate(CLASSES):
        qs = list(dict.fromkeys(q for q in quotes[c] if seen[q] == 1 and words(q)))
        perm = rng.permutation(len(qs))
        n_test = int(round(len(qs) * TEST_FRACTION))
        test += [(qs[i], label) for i in perm[:n_test]]
        train += [(qs[i], label) for i in perm[n_test:]]
    return train, test


def make_vocab(train, size):
    counts = collections.Counter(w for t, _ in train for w in words(t))
    top = sorted((w for w, n in counts.items() if n >= 2), key=lambda w: (-counts[w], w))[:size - 2]
    return ["[PAD]", "[UNK]"] + top


def encode(samples, vocab):
    """input_ids, attention_mask int64 [N, MAX_LEN]; labels int64 [N]."""
    index = {w: i for i, w in enumerate(vocab)}
    ids = np.full((len(samples), MAX_LEN), PAD, dtype=np.int64)
    mask = np.zeros((len(samples), MAX_LEN), dtype=np.int64)
    for r, (t, _) in enumerate(samples):
        toks = [index.get(w, UNK) for w in words(t)][:MAX_LEN]
        ids[r, :len(toks)] = toks
        mask[r, :len(toks)] = 1
    return ids, mask, np.array([y for _, y in samples], dtype=np.int64)


def vocab_path(onnx_path):
    return onnx_path[:-len(".onnx")] + ".vocab.json" if onnx_path.endswith(".onnx") else onnx_path + ".vocab.json"


def write_h5(path, ids, mask, labels):
    import h5py
    with h5py.File(path, "w") as f:
        f.create_dataset("input_ids", data=ids)
        f.create_dataset("attention_mask", data=mask)
        f.create_dataset("labels", data=labels)
        f.attrs["class_names"] = CLASSES
