"""Matrix factorization of a ratings matrix."""

import numpy as np

from ._job import Estimator, Workdir, run


def _read_factors(path):
    """Read "id v1 … vK" lines into {id: vector}."""
    out = {}
    with open(path) as f:
        for line in f:
            fields = line.split()
            if fields:
                out[int(fields[0])] = np.array([float(v) for v in fields[1:]])
    return out


class MatrixFactorization(Estimator):
    """Biased matrix factorization r̂(u, i) = μ + b_u + c_i + w_u·h_i, by
    strads mf (SGD on a rotation of item blocks; algo "ccd" or "als").

    fit takes ratings as rows (user, item, rating), integer ids. With
    validate > 0 that fraction of them is held out, the job stops once its
    RMSE stops falling, and the model is the evaluation where it was
    lowest. After fit: user_factors_ and item_factors_ ({id: vector}),
    user_bias_, item_bias_ ({id: bias}), mean_ (μ), train_rmse_ (the
    job's, of the model kept).
    """

    def __init__(self, rank=10, regularization=0.01, iters=20, algo="sgd", validate=0.05, seed=1,
                 workers=1, nats=None, verbose=False):
        self.rank = rank
        self.regularization = regularization
        self.iters = iters
        self.algo = algo
        self.validate = validate
        self.seed = seed
        self.workers = workers
        self.nats = nats
        self.verbose = verbose

    def fit(self, ratings, y=None):
        r = np.asarray(ratings, dtype=np.float64)
        if r.ndim != 2 or r.shape[1] != 3 or r.shape[0] == 0:
            raise ValueError(f"ratings must be rows (user, item, rating), got shape {r.shape}")
        if not np.all(np.isfinite(r)) or np.any(r[:, :2] != np.round(r[:, :2])):
            raise ValueError("ratings must have integer user and item ids and finite ratings")
        with Workdir() as w:
            train, prefix = w.path("train.txt"), w.path("model")
            with open(train, "w") as f:
                for u, i, v in r:
                    f.write(f"{int(u)} {int(i)} {v!r}\n")
            out = run(["mf", "--train", train, "--rank", self.rank, "--lambda", self.regularization,
                       "--iters", self.iters, "--algo", self.algo, "--validate", self.validate, "--seed", self.seed,
                       "--workers", self.workers, "--out", prefix, "--progress", "2s" if self.verbose else "0"],
                      self.verbose, self.nats)
            self.user_factors_ = _read_factors(prefix + ".W.txt")
            self.item_factors_ = _read_factors(prefix + ".H.txt")
            self.mean_, self.user_bias_, self.item_bias_ = 0.0, {}, {}
            with open(prefix + ".bias.txt") as f:
                for line in f:
                    kind, *rest = line.split()
                    if kind == "mean":
                        self.mean_ = float(rest[0])
                    elif kind == "user":
                        self.user_bias_[int(rest[0])] = float(rest[1])
                    elif kind == "item":
                        self.item_bias_[int(rest[0])] = float(rest[1])
        self.train_rmse_ = float("nan")
        for line in out.splitlines():
            if line.startswith("train RMSE "):
                self.train_rmse_ = float(line.split()[2])
        self._rated = {}
        for u, i, _ in r:
            self._rated.setdefault(int(u), set()).add(int(i))
        return self

    def _predict1(self, u, i):
        p = self.mean_ + self.user_bias_.get(u, 0.0) + self.item_bias_.get(i, 0.0)
        if u in self.user_factors_ and i in self.item_factors_:
            p += self.user_factors_[u] @ self.item_factors_[i]
        return p

    def predict(self, pairs):
        """Predicted ratings of rows (user, item); an id not seen in fit
        gets μ plus the bias of the one that was, as strads mf predict."""
        if not hasattr(self, "item_factors_"):
            raise AttributeError("this MatrixFactorization is not fitted yet: call fit first")
        pairs = np.asarray(pairs)
        return np.array([self._predict1(int(u), int(i)) for u, i in pairs[:, :2]])

    def recommend(self, user, n=10, exclude_rated=True):
        """The n items of highest predicted rating for user, best first
        (by default none that the user rated in fit)."""
        items = np.array(sorted(self.item_factors_))
        scores = self.predict(np.column_stack([np.full(len(items), user), items]))
        if exclude_rated:
            rated = self._rated.get(int(user), set())
            keep = np.array([i not in rated for i in items], dtype=bool)
            items, scores = items[keep], scores[keep]
        return items[np.argsort(-scores, kind="stable")[:n]]
