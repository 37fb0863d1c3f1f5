"""Lasso and L1-regularized logistic regression, as scikit-learn has them."""

import numpy as np

from ._job import Estimator, Workdir, check_X, metric, run, write_libsvm


def read_linear_model(path, n_features):
    """Read a model file of strads lasso or logreg --out: the header of
    "# key: value" lines, then index,value rows (index 0 the intercept).
    Return (header, coef, intercept)."""
    header, coef, intercept = {}, np.zeros(n_features), 0.0
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("#"):
                key, _, value = line[1:].partition(":")
                header[key.strip()] = value.strip()
            elif line and line != "index,value":
                idx, value = line.split(",")
                idx, value = int(idx), float(value)
                if idx == 0:
                    intercept = value
                elif idx <= n_features:
                    coef[idx - 1] = value
                else:
                    raise ValueError(f"{path}: coefficient {idx} of a model of {n_features} features")
    return header, coef, intercept


class _Linear(Estimator):
    app = ""

    def _fit(self, X, y, penalty_args):
        X = check_X(X)
        with Workdir() as w:
            data, model = w.path("data.svm"), w.path("model.csv")
            write_libsvm(data, X, y)
            out = run([self.app, "--data", data, *penalty_args, f"--intercept={str(self.fit_intercept).lower()}",
                       "--tol", self.tol, "--workers", self.workers, "--out", model,
                       "--progress", "2s" if self.verbose else "0"], self.verbose, self.nats)
            self.header_, coef, self.intercept_ = read_linear_model(model, X.shape[1])
        self.n_features_in_ = X.shape[1]
        self.objective_, self.gap_ = metric(out, "objective"), metric(out, "gap")
        self.n_iter_ = int(metric(out, "rounds"))
        return coef

    def _linear(self, X):
        X = check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, the model {self.n_features_in_}")
        return X @ np.ravel(self.coef_) + np.ravel(self.intercept_)[0]


class Lasso(_Linear):
    """Lasso: minimizes (1/2n)‖y − Xw − b‖² + alpha‖w‖₁ (scikit-learn's
    objective and alpha), by strads lasso.

    tol is strads's: the job stops once its certified duality gap is
    within tol of the objective (relative). workers and nats say where it
    runs: workers on the embedded server, or on the cluster at nats. After
    fit: coef_, intercept_, objective_, gap_ (certified: the objective is
    within it of the optimum), n_iter_ (rounds).
    """

    app = "lasso"

    def __init__(self, alpha=1.0, fit_intercept=True, tol=1e-6, workers=1, nats=None, verbose=False):
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.workers = workers
        self.nats = nats
        self.verbose = verbose

    def fit(self, X, y):
        if not self.alpha > 0:
            raise ValueError(f"alpha must be > 0, got {self.alpha!r}")
        self.coef_ = self._fit(X, y, ["--lambda", repr(float(self.alpha))])
        return self

    def predict(self, X):
        self._check_fitted("coef_")
        return self._linear(X)

    def score(self, X, y):
        """R² of the predictions, as scikit-learn's regressors."""
        y = np.asarray(y, dtype=np.float64)
        resid = y - self.predict(X)
        return 1 - resid @ resid / ((y - y.mean()) @ (y - y.mean()))


class LogisticRegression(_Linear):
    """L1-regularized logistic regression: minimizes ‖w‖₁ + C·Σ_i
    log(1 + exp(−y_i(x_i·w + b))) (scikit-learn's objective and C, with
    the intercept b not penalized, as its saga solver), by strads logreg.

    Two classes, any labels: classes_[1] is the positive one. After fit:
    coef_ (1 × features), intercept_ (1,), objective_ (strads's: the
    mean loss plus λ‖w‖₁, λ = 1/(C·n)), gap_, n_iter_.
    """

    app = "logreg"

    def __init__(self, C=1.0, penalty="l1", fit_intercept=True, tol=1e-6, workers=1, nats=None, verbose=False):
        self.C = C
        self.penalty = penalty
        self.fit_intercept = fit_intercept
        self.tol = tol
        self.workers = workers
        self.nats = nats
        self.verbose = verbose

    def fit(self, X, y):
        if self.penalty != "l1":
            raise ValueError(f"penalty {self.penalty!r}: strads fits penalty='l1' only")
        if not self.C > 0:
            raise ValueError(f"C must be > 0, got {self.C!r}")
        y = np.asarray(y).ravel()
        self.classes_ = np.unique(y)
        if len(self.classes_) != 2:
            raise ValueError(f"y has {len(self.classes_)} class(es): strads fits two (binary classification only)")
        signs = np.where(y == self.classes_[1], 1.0, -1.0)
        coef = self._fit(X, signs, ["--C", repr(float(self.C))])
        self.coef_, self.intercept_ = coef.reshape(1, -1), np.array([self.intercept_])
        return self

    def _more_tags(self):
        return {"binary_only": True}

    def decision_function(self, X):
        self._check_fitted("coef_")
        return self._linear(X)

    def predict_proba(self, X):
        p = 1 / (1 + np.exp(-self.decision_function(X)))
        return np.column_stack([1 - p, p])

    def predict(self, X):
        return self.classes_[(self.decision_function(X) > 0).astype(int)]

    def score(self, X, y):
        """Accuracy, as scikit-learn's classifiers."""
        return float(np.mean(self.predict(X) == np.asarray(y).ravel()))
