"""The estimators against scikit-learn's own results on the same data.

Run with the strads command on PATH or in STRADS_BIN:
    PYTHONPATH=python python3 -m unittest discover -s python/tests
"""

import unittest
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn import linear_model
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.utils.estimator_checks import check_estimator

import strads


def regression(seed=0, n=200, p=50):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X[rng.random(size=X.shape) < 0.5] = 0  # sparse, as strads's data usually are
    w = np.zeros(p)
    w[:5] = [3, -2, 1, 0.5, 4]
    return X, X @ w + 5 + 0.1 * rng.normal(size=n), rng


def lasso_objective(X, y, w, b, alpha):
    r = y - X @ w - b
    return r @ r / (2 * len(y)) + alpha * np.abs(w).sum()


class TestLasso(unittest.TestCase):
    def test_matches_sklearn(self):
        X, y, _ = regression()
        for intercept in (True, False):
            for data in (X, sp.csr_matrix(X)):
                m = strads.Lasso(alpha=0.05, fit_intercept=intercept, tol=1e-9).fit(data, y)
                s = linear_model.Lasso(alpha=0.05, fit_intercept=intercept, tol=1e-12, max_iter=100000).fit(X, y)
                np.testing.assert_allclose(m.coef_, s.coef_, atol=1e-6)
                self.assertAlmostEqual(m.intercept_, s.intercept_, places=6)
                # The objective strads reports is that of the coefficients
                # it wrote, and no worse than scikit-learn's optimum.
                mine = lasso_objective(X, y, m.coef_, m.intercept_, 0.05)
                self.assertAlmostEqual(m.objective_, mine, delta=1e-9 * mine)
                self.assertLessEqual(mine, lasso_objective(X, y, s.coef_, s.intercept_, 0.05) * (1 + 1e-9))
                np.testing.assert_allclose(m.predict(X), s.predict(X), atol=1e-5)

    def test_sklearn_tools(self):
        X, y, _ = regression(1)
        m = strads.Lasso(alpha=0.1, workers=2)
        c = clone(m)
        self.assertEqual(c.get_params(), m.get_params())
        self.assertEqual(c.set_params(alpha=0.2).alpha, 0.2)
        scores = cross_val_score(m, X, y, cv=3)
        self.assertTrue(np.all(scores > 0.9), scores)
        g = GridSearchCV(strads.Lasso(), {"alpha": [0.01, 1.0]}, cv=3).fit(X, y)
        self.assertEqual(g.best_params_["alpha"], 0.01)

    def test_bad_input(self):
        X, y, _ = regression()
        with self.assertRaises(ValueError):
            strads.Lasso(alpha=0).fit(X, y)
        Xn = X.copy()
        Xn[0, 0] = np.nan
        with self.assertRaises(ValueError):
            strads.Lasso(alpha=0.1).fit(Xn, y)
        with self.assertRaises(AttributeError):
            strads.Lasso().predict(X)
        with self.assertRaises(strads.StradsError) as e:
            strads.Lasso(alpha=0.1, nats="nats://127.0.0.1:1").fit(X, y)
        self.assertNotEqual(e.exception.status, 0)


class TestLogisticRegression(unittest.TestCase):
    def test_matches_sklearn(self):
        X, _, rng = regression(2)
        w = np.zeros(X.shape[1])
        w[:5] = [3, -2, 1, 0.5, 4]
        y = np.where(X @ w + rng.logistic(size=len(X)) > 0, "spam", "ham")
        m = strads.LogisticRegression(C=0.5, tol=1e-9).fit(X, y)
        # saga leaves the intercept unpenalized, as strads does.
        s = linear_model.LogisticRegression(penalty="l1", C=0.5, solver="saga", tol=1e-10, max_iter=100000).fit(X, y)
        self.assertEqual(list(m.classes_), list(s.classes_))
        np.testing.assert_allclose(m.coef_, s.coef_, atol=1e-5)
        np.testing.assert_allclose(m.intercept_, s.intercept_, atol=1e-5)
        np.testing.assert_allclose(m.predict_proba(X), s.predict_proba(X), atol=1e-5)
        self.assertEqual(list(m.predict(X)), list(s.predict(X)))
        self.assertEqual(m.score(X, y), s.score(X, y))

    def test_one_class(self):
        X, _, _ = regression()
        with self.assertRaises(ValueError):
            strads.LogisticRegression().fit(X, np.ones(len(X)))


class TestEstimatorChecks(unittest.TestCase):
    """scikit-learn's own checks of an estimator (fit, predict, clone,
    input validation, sample order, sparse input …), all of them; a
    failure raises. MF and LDA take other inputs than (X, y) and are not
    run through them."""

    def test_check_estimator(self):
        for est in (strads.Lasso(alpha=0.1), strads.LogisticRegression()):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                check_estimator(est)


class TestMatrixFactorization(unittest.TestCase):
    def test_model_is_the_reported_one(self):
        rng = np.random.default_rng(3)
        W, H = rng.normal(size=(300, 3)), rng.normal(size=(100, 3))
        pairs = np.array([(u, i) for u in range(300) for i in range(100) if rng.random() < 0.3])
        r = np.column_stack([pairs, (W[pairs[:, 0]] * H[pairs[:, 1]]).sum(1) + 3 + 0.1 * rng.normal(size=len(pairs))])
        m = strads.MatrixFactorization(rank=3, validate=0, iters=30, workers=2).fit(r)
        rmse = np.sqrt(np.mean((m.predict(r[:, :2]) - r[:, 2]) ** 2))
        self.assertAlmostEqual(rmse, m.train_rmse_, delta=1e-6)
        self.assertLess(rmse, 0.2)
        top = m.recommend(5, n=10)
        self.assertEqual(len(top), 10)
        self.assertFalse(set(top) & {int(i) for u, i in pairs if u == 5})
        # An unseen user gets μ plus the item's bias.
        self.assertAlmostEqual(m.predict([[10**6, 7]])[0], m.mean_ + m.item_bias_[7])


class TestLDA(unittest.TestCase):
    def test_recovers_topics(self):
        rng = np.random.default_rng(4)
        phi = np.zeros((3, 60))
        for t in range(3):
            phi[t, 20 * t:20 * (t + 1)] = 1 / 20
        z = rng.integers(0, 3, size=150)
        X = sp.csr_matrix(np.array([rng.multinomial(80, phi[t]) for t in z]))
        m = strads.LDA(n_components=3, iters=200, workers=2).fit(X)
        # Each found topic puts nearly all its mass on one true topic's words.
        mass = m.topic_word_.reshape(3, 3, 20).sum(axis=2)
        self.assertTrue(np.all(mass.max(axis=1) > 0.95), mass)
        theta = m.transform(X)
        np.testing.assert_allclose(theta.sum(axis=1), 1, atol=1e-6)
        # And every document's main topic is its own true one.
        found = mass.argmax(axis=1)  # found topic → true topic
        self.assertTrue(np.all(found[theta.argmax(axis=1)] == z))


if __name__ == "__main__":
    unittest.main()
