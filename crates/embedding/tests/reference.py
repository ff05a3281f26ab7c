"""Reference token ids and vectors for the embedding crate's tests.

Token ids come from Hugging Face's own `tokenizers` (PyPI), vectors from a
plain numpy BERT forward pass over the same safetensors weights, mean pooled
and normalised as sentence-transformers does: two implementations that share
no code with the crate (candle's BERT and our WordPiece).

    python3 -m venv /tmp/ref && /tmp/ref/bin/pip install tokenizers numpy safetensors
    /tmp/ref/bin/python crates/embedding/tests/reference.py "$BOTCRAFT_EMBEDDING_MODEL" \
        > crates/embedding/tests/fixtures/reference.json
"""
import json
import math
import sys

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

TEXTS = [
    "",
    "read_text_file: Read the complete contents of a file as text.",
    "Take a screenshot of the current page. You can't perform actions based on the screenshot, use browser_snapshot for actions.",
    "Crème brûlée, naïve café — São Paulo! 東京タワー; ÅNGSTRÖM. \u00a0tabs\tand\nnewlines",
    "git_diff_unstaged: Shows changes in the working directory that are not yet staged",
    "Weird   spacing,,, punctuation!!! (parentheses) [brackets] {braces} <angles> @#$%^&*",
    "supercalifragilisticexpialidocious antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    " ".join(["a long text that must be cut at the model's maximum sequence length"] * 40),
]

def gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))

def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b

def main():
    folder = sys.argv[1]
    config = json.load(open(f"{folder}/config.json"))
    max_len = min(json.load(open(f"{folder}/sentence_bert_config.json"))["max_seq_length"],
                  config["max_position_embeddings"])
    tok = Tokenizer.from_file(f"{folder}/tokenizer.json")
    tok.no_padding()
    tok.enable_truncation(max_len)
    w = load_file(f"{folder}/model.safetensors")
    w = {k.removeprefix("bert."): v.astype(np.float64) for k, v in w.items()}
    heads, eps = config["num_attention_heads"], config["layer_norm_eps"]
    out = []
    for text in TEXTS:
        ids = tok.encode(text).ids
        n = len(ids)
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][[0] * n])
        x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        for i in range(config["num_hidden_layers"]):
            p = f"encoder.layer.{i}."
            lin = lambda h, name: h @ w[p + name + ".weight"].T + w[p + name + ".bias"]
            q, k, v = (lin(x, f"attention.self.{m}") for m in ("query", "key", "value"))
            d = q.shape[-1] // heads
            split = lambda t: t.reshape(n, heads, d).transpose(1, 0, 2)
            q, k, v = split(q), split(k), split(v)
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            ctx = (scores @ v).transpose(1, 0, 2).reshape(n, heads * d)
            x = layer_norm(lin(ctx, "attention.output.dense") + x,
                           w[p + "attention.output.LayerNorm.weight"],
                           w[p + "attention.output.LayerNorm.bias"], eps)
            h = gelu(lin(x, "intermediate.dense"))
            x = layer_norm(lin(h, "output.dense") + x, w[p + "output.LayerNorm.weight"],
                           w[p + "output.LayerNorm.bias"], eps)
        vec = x.mean(0)
        vec /= np.linalg.norm(vec)
        out.append({"text": text, "ids": ids, "vector": [round(float(f), 6) for f in vec]})
    json.dump(out, sys.stdout, indent=0)
    print()

main()
