// Package lasso is the Lasso as a scheduled model-parallel program:
//
//	minimize  (1/2n)‖y − Xβ‖² + λ‖β‖₁
//
// over β (scikit-learn's convention), optionally with an unpenalized
// intercept fitted by centering X and y. It is solved by parallel coordinate
// descent:
//
//   - the scheduler picks the coordinates of a round by priority
//     (|Δβ_j|^γ + η) and drops those whose columns are correlated with one
//     already picked (|corr(x_j, x_k)| ≥ ρ), so that the parallel updates do
//     not fight (package scheduler's dynamic engine);
//   - each worker holds its own rows of X (column-compressed), y and the
//     residual r, and pushes x_jᵀr over its rows for every picked j;
//   - the coordinator sums the partials, soft-thresholds
//     β_j ← S(x_jᵀr/n + a_jβ_j, λ)/a_j with a_j = ‖x_j‖²/n, and sends the
//     changes Δβ_j back so that workers update their residuals.
//
// With an intercept, every column x_j and y are centered implicitly (the
// data stay sparse): workers keep q = y − Xβ and the scalar s = x̄ᵀβ, so
// that r = q − ȳ + s, and the coordinator subtracts x̄_j·Σr from each
// partial sum. The intercept is then ȳ − x̄ᵀβ.
package lasso
