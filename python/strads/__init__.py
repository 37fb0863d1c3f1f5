"""scikit-learn-compatible estimators that train with strads.

Each fit runs one strads job (the command: $STRADS_BIN, or strads on
PATH) on its embedded NATS server, or on a cluster with nats="nats://…",
and reads the model the job wrote back into arrays.
"""

from ._job import StradsError
from .lda import LDA
from .linear import Lasso, LogisticRegression
from .mf import MatrixFactorization

__all__ = ["LDA", "Lasso", "LogisticRegression", "MatrixFactorization", "StradsError"]
