"""Issue 34's remaining retrieval candidates, measured on dev only, cross-validated.

Input: the dump of dev made by the Rust evaluation (the same model, texts and BM25F):

    cargo run --release -p search-index --example eval -- dev dump /tmp/dev.json
    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install numpy
    /tmp/venv/bin/python crates/tool-search/eval/candidates.py /tmp/dev.json

The dump holds dev's 516 tools with the vectors of their parts (the embedded text the
shipped ranking uses, the name's words, the description, the parameters, the server), and
each dev query's vector, its BM25F matches and the shipped ranking's first 50 hits. Test
and fresh are never read.

Every learned or chosen candidate is scored by 5-fold cross-validation over servers: the
queries about a fifth of the servers (by the hash of the server of their first right tool)
are ranked by what was fitted or chosen on the other four fifths, so no query is scored by
weights fitted on it. The shipped blend is rebuilt here from its parts (same candidates,
same normalisation, same name tiers) and printed beside the Rust figure, so a difference
of the rebuild from the Rust ranking shows.
"""

import hashlib
import json
import sys

import numpy as np

FOLDS = 5
DENSE = 0.7  # the shipped blend: (1 - DENSE) * bm25 / most + DENSE * cosine
DENSE_CANDIDATES = 20


def load(path):
    d = json.load(open(path))
    return d["tools"], d["queries"]


class Dev:
    def __init__(self, tools, queries):
        self.tools, self.queries = tools, queries
        n, m = len(tools), len(queries)

        def rows(key):
            return np.array([t[key] for t in tools], dtype=np.float32)

        full, name, desc, params, server = (
            rows(k) for k in ("full", "name_v", "desc_v", "params_v", "server_v")
        )
        has_params = np.array([t["params"] > 0 for t in tools])
        has_desc = np.array([bool(t["description"].strip()) for t in tools])
        q = np.array([x["vec"] for x in queries], dtype=np.float32)
        names = sorted({t["server"] for t in tools})
        server_of = np.array([names.index(t["server"]) for t in tools])
        centroids = np.zeros((len(names), full.shape[1]), dtype=np.float32)
        np.add.at(centroids, server_of, full)
        centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)

        self.full, self.desc_rows = full, desc
        self.q = q
        self.cos = q @ full.T
        self.cos_name = q @ name.T
        self.cos_desc = np.where(has_desc, q @ desc.T, self.cos_name)
        self.cos_params = np.where(has_params, q @ params.T, 0.0)
        self.cos_server = q @ server.T
        self.cos_centroid = (q @ centroids.T)[:, server_of]
        self.has_desc = has_desc

        self.lex = np.zeros((m, n), dtype=np.float32)
        self.tier = np.zeros((m, n), dtype=np.float32)
        self.lex_rr = np.zeros((m, n), dtype=np.float32)
        for i, x in enumerate(queries):
            for rank, (doc, score, tier) in enumerate(x["lex"]):
                self.lex[i, doc], self.tier[i, doc] = score, tier
                self.lex_rr[i, doc] = 1.0 / (rank + 1)
        # The blend divides BM25F by the best score a tool could reach for the query (`most`);
        # it is read back from the shipped hits, where score = (1-d)·bm25/most + d·cosine.
        most = np.ones(m, dtype=np.float32)
        self.shipped = np.full((m, n), -1e9, dtype=np.float32)
        for i, x in enumerate(queries):
            for rank, (doc, score, tier, lexical, dense) in enumerate(x["shipped"]):
                self.shipped[i, doc] = -rank
                rest = score - DENSE * (dense or 0.0)
                if tier == 0 and lexical > 0 and dense is not None and rest > 1e-6:
                    most[i] = (1 - DENSE) * lexical / rest
        self.bm25 = self.lex / most[:, None]
        self.candidates = self.lex > 0
        for i, top in enumerate(np.argsort(-self.cos, axis=1)[:, :DENSE_CANDIDATES]):
            self.candidates[i, top] = True
        self.relevant = [set(x["relevant"]) for x in queries]
        self.kinds = [x["kind"] for x in queries]
        self.fold = np.array([fold_of(tools[min(x["relevant"])]["server"]) for x in queries])
        self.tool_fold = np.array([fold_of(t["server"]) for t in tools])

    def ranked(self, scores):
        """Scores over the shipped candidates, exact and near-exact names first."""
        return np.where(self.candidates, scores + 10.0 * self.tier, -1e9)

    def blend(self, cosine, dense=DENSE):
        return self.ranked((1 - dense) * self.bm25 + dense * cosine)

    def metrics(self, scores, only=None):
        only = range(len(self.queries)) if only is None else only
        s1 = s5 = rr = p5 = pn = k = 0
        for i in only:
            top = np.argsort(-scores[i], kind="stable")[:10]
            first = next((r + 1 for r, doc in enumerate(top) if doc in self.relevant[i]), None)
            k += 1
            s1 += first == 1
            s5 += first is not None and first <= 5
            rr += 1.0 / first if first else 0.0
            if self.kinds[i] == "Paraphrase":
                pn += 1
                p5 += first is not None and first <= 5
        return {
            "success@1": s1 / k,
            "success@5": s5 / k,
            "MRR@10": rr / k,
            "paraphrase success@5": p5 / max(pn, 1),
        }

    def train(self, fold):
        return [i for i in range(len(self.queries)) if self.fold[i] != fold]

    def held(self, fold):
        return [i for i in range(len(self.queries)) if self.fold[i] == fold]

    def cross_validated(self, fit):
        """`fit(train_queries, fold)` returns scores for every query; keep each fold's own."""
        out = np.full_like(self.cos, -1e9)
        for fold in range(FOLDS):
            scores = fit(self.train(fold), fold)
            held = self.held(fold)
            out[held] = scores[held]
        return out


def fold_of(server):
    return int(hashlib.sha256(server.encode()).hexdigest(), 16) % FOLDS


def objective(m):
    return m["MRR@10"] + m["success@5"]


def parts(dev):
    """Weighted embeddings of a tool's parts (ScaleMCP's TDWA): the cosine with the shipped
    text plus weighted cosines with the name, description, parameters and server."""
    grid = [
        (a, b, c, e)
        for a in (0, 0.1, 0.2, 0.3)
        for b in (0, 0.1, 0.2, 0.3, 0.5)
        for c in (0, 0.05, 0.1, 0.2)
        for e in (0, 0.05, 0.1, 0.2)
    ]

    def cosine(w):
        a, b, c, e = w
        mixed = dev.cos + a * dev.cos_name + b * dev.cos_desc + c * dev.cos_params + e * dev.cos_server
        return mixed / (1 + a + b + c + e)

    def fit(train, _fold):
        best = max(grid, key=lambda w: objective(dev.metrics(dev.blend(cosine(w)), train)))
        return dev.blend(cosine(best))

    return dev.cross_validated(fit)


def features(dev):
    """Per (query, tool): the five cosines, the server centroid's cosine, BM25F over its
    best possible, and the reciprocal lexical rank."""
    return np.stack(
        [
            dev.cos,
            dev.cos_name,
            dev.cos_desc,
            dev.cos_params,
            dev.cos_server,
            dev.cos_centroid,
            dev.bm25,
            dev.lex_rr,
        ],
        axis=2,
    )


def fusion(dev, listwise):
    """A linear fusion of `features`, fitted by gradient descent: pointwise (logistic loss on
    the right tools against the 50 hardest others) or listwise (softmax over the candidates)."""
    x_all = features(dev)

    def fit(train, _fold):
        w = np.zeros(x_all.shape[2])
        w[0], w[6] = DENSE * 20, (1 - DENSE) * 20  # start at the shipped blend
        bias = -10.0  # pointwise only: ranks do not depend on it
        for _ in range(400):
            grad = np.zeros_like(w)
            grad_bias = 0.0
            for i in train:
                if listwise:
                    docs = np.nonzero(dev.candidates[i])[0]
                else:
                    hard = np.argsort(-(dev.bm25[i] + dev.cos[i]))[:50]
                    docs = np.array(sorted(set(hard) | dev.relevant[i]))
                x = x_all[i, docs]
                right = np.array([d in dev.relevant[i] for d in docs], dtype=np.float64)
                if not right.any():
                    continue  # no right tool among the candidates: nothing to learn from
                s = x @ w
                if listwise:
                    p = np.exp(s - s.max())
                    p /= p.sum()
                    grad += x.T @ (p - right / right.sum())
                else:
                    p = 1 / (1 + np.exp(-(s + bias)))
                    grad += x.T @ (p - right) / len(docs)
                    grad_bias += (p - right).mean()
            # the pointwise loss's gradient is averaged over each query's tools: a larger step
            step = 0.05 if listwise else 5.0
            w -= step * grad / len(train) + 1e-3 * w
            bias -= step * grad_bias / len(train)
        return dev.ranked(x_all @ w)

    return dev.cross_validated(fit)


def adapter(dev, synthetic, step=0.02, iters=100, reg=0.1, temperature=20.0):
    """Fine-tuning, linear: a 384×384 map of the query vector (from the identity), fitted
    with a softmax loss over every tool on the training folds' queries and, with
    `synthetic`, each training-fold tool's description as a query for that tool."""

    def fit(train, fold):
        xs = [dev.q[i] for i in train]
        ys = [sorted(dev.relevant[i]) for i in train]
        if synthetic:
            for j in range(len(dev.tools)):
                if dev.tool_fold[j] != fold and dev.has_desc[j]:
                    xs.append(dev.desc_rows[j])
                    ys.append([j])
        x = np.array(xs)
        eye = np.eye(x.shape[1], dtype=np.float32)
        w = eye.copy()
        for _ in range(iters):
            logits = temperature * ((x @ w) @ dev.full.T)
            p = np.exp(logits - logits.max(axis=1, keepdims=True))
            p /= p.sum(axis=1, keepdims=True)
            for r, right in enumerate(ys):
                p[r, right] -= 1.0 / len(right)
            grad = x.T @ (temperature * (p @ dev.full) / len(ys)) + reg * (w - eye)
            w -= step * grad
        mapped = dev.q @ w
        mapped /= np.linalg.norm(mapped, axis=1, keepdims=True)
        return mapped @ dev.full.T

    dense = dev.cross_validated(fit)
    return dense, dev.blend(dense)


def main():
    dev = Dev(*load(sys.argv[1]))
    print(f"dev: {len(dev.queries)} queries over {len(dev.tools)} tools; {FOLDS}-fold CV over servers\n")
    rows = [
        ("shipped, the Rust ranking", dev.shipped),
        ("shipped blend, rebuilt here", dev.blend(dev.cos)),
        ("dense only", dev.cos),
        ("parts weighted (TDWA), weights chosen by CV", parts(dev)),
        ("learned fusion, pointwise, CV", fusion(dev, listwise=False)),
        ("learned fusion, listwise, CV", fusion(dev, listwise=True)),
    ]
    for synthetic in (False, True):
        dense, blended = adapter(dev, synthetic)
        label = "linear query adapter" + (" + synthetic queries" if synthetic else "")
        rows.append((label + ", dense, CV", dense))
        rows.append((label + ", in the blend, CV", blended))
    keys = ["success@1", "success@5", "MRR@10", "paraphrase success@5"]
    print("| candidate | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for label, scores in rows:
        m = dev.metrics(scores)
        print(f"| {label} | " + " | ".join(f"{m[k]:.3f}" for k in keys) + " |")


if __name__ == "__main__":
    main()
