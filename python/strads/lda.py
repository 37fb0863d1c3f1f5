"""Latent Dirichlet allocation of a document-word count matrix."""

import json

import numpy as np
import scipy.sparse as sp

from ._job import Estimator, Workdir, run


def _write_docword(path, X):
    """Write a documents × words count matrix as a UCI docword file."""
    X = sp.csr_matrix(X)
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise ValueError(f"X must be a non-empty documents × words matrix, got shape {X.shape}")
    if np.any(X.data < 0) or np.any(X.data != np.round(X.data)):
        raise ValueError("X must hold counts: non-negative integers")
    X.eliminate_zeros()
    X.sort_indices()
    with open(path, "w") as f:
        f.write(f"{X.shape[0]}\n{X.shape[1]}\n{X.nnz}\n")
        for d in range(X.shape[0]):
            lo, hi = X.indptr[d], X.indptr[d + 1]
            for w, c in zip(X.indices[lo:hi], X.data[lo:hi]):
                f.write(f"{d + 1} {w + 1} {int(c)}\n")


class LDA(Estimator):
    """Latent Dirichlet allocation by collapsed Gibbs sampling, strads lda
    (model-parallel: the word blocks rotate among the workers; α and β
    learned by default).

    fit takes a documents × words count matrix. After fit: components_
    (topics × words: the word-topic counts plus β, as scikit-learn's
    LatentDirichletAllocation.components_ holds pseudo-counts),
    topic_word_ (its rows normalized: p(word | topic)), alpha_, beta_.
    transform gives each document's topic proportions (strads lda infer:
    Gibbs sweeps with the topics fixed).
    """

    def __init__(self, n_components=10, iters=100, seed=1, workers=1, nats=None, verbose=False):
        self.n_components = n_components
        self.iters = iters
        self.seed = seed
        self.workers = workers
        self.nats = nats
        self.verbose = verbose

    def fit(self, X, y=None):
        with Workdir() as w:
            docword, model = w.path("docword.txt"), w.path("model.json")
            _write_docword(docword, X)
            run(["lda", "--docword", docword, "--topics", self.n_components, "--iters", self.iters, "--seed", self.seed,
                 "--workers", self.workers, "--out", w.path("topics.txt"), "--model", model,
                 "--progress", "2s" if self.verbose else "0"], self.verbose, self.nats)
            with open(model) as f:
                self._model = f.read()
        m = json.loads(self._model)
        wt = m["word_topic"]
        counts = np.zeros((m["topics"], m["words"]))
        np.add.at(counts, (np.asarray(wt["topic"]), np.asarray(wt["word"])), np.asarray(wt["count"], dtype=float))
        self.alpha_, self.beta_ = np.asarray(m["alpha"]), m["beta"]
        self.components_ = counts + self.beta_
        self.topic_word_ = self.components_ / self.components_.sum(axis=1, keepdims=True)
        self.n_features_in_ = m["words"]
        return self

    def transform(self, X, sweeps=40):
        """Topic proportions of each document (rows add up to 1)."""
        if not hasattr(self, "_model"):
            raise AttributeError("this LDA is not fitted yet: call fit first")
        X = sp.csr_matrix(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} words, the model {self.n_features_in_}")
        theta = np.full((X.shape[0], self.n_components), 1.0 / self.n_components)
        with Workdir() as w:
            model, docword, out = w.path("model.json"), w.path("docword.txt"), w.path("theta.csv")
            with open(model, "w") as f:
                f.write(self._model)
            _write_docword(docword, X)
            run(["lda", "infer", "--model", model, "--docword", docword, "--sweeps", sweeps, "--seed", self.seed,
                 "--out", out])
            rows = np.loadtxt(out, delimiter=",", skiprows=1, ndmin=2)
        for row in rows:
            theta[int(row[0]) - 1] = row[1:]
        return theta

    def fit_transform(self, X, y=None):
        return self.fit(X).transform(X)
