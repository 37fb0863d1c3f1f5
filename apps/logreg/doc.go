// Package logreg is L1-regularized (sparse) logistic regression as a
// scheduled model-parallel program:
//
//	minimize  F(w, b) = (1/n) Σ_i log(1 + exp(−y_i·(x_i·w + b))) + λ‖w‖₁
//
// over w, with labels y_i ∈ {−1, +1} and an unpenalized intercept b that is
// fitted only with Config.Intercept (otherwise b = 0). LIBSVM labels may be
// written 0/1 or −1/+1 (one convention per file): 1 and +1 are the positive
// class, 0 and −1 the negative one. Any other label is an error naming its
// line, and so is a training file with a single class.
//
// # The penalty
//
// λ is given in one of three ways (Config):
//
//   - Lambda: λ itself;
//   - LambdaRatio: λ = r·λ_max, where λ_max is the smallest λ whose solution
//     is w = 0: with an intercept λ_max = ‖Xᵀ(y01 − ȳ)‖∞/n, where y01 are the
//     labels as 0/1 and ȳ the fraction of positives (at w = 0 the intercept
//     is logit(ȳ)); without one λ_max = ‖Xᵀ(y01 − ½)‖∞/n (b = 0);
//   - C, for users of liblinear and scikit-learn, whose objective is
//     ‖w‖₁ + C·Σ_i log(1 + exp(−y_i·x_i·w)): dividing it by C·n gives F, so
//     λ = 1/(C·n). liblinear's bias (-B) is a penalized feature; ours is not,
//     so the two match exactly without an intercept.
//
// # The algorithm
//
// Coordinate descent with a safeguarded Newton step per coordinate (as in
// glmnet and CDN), on the runtime of package schmp:
//
//   - the scheduler picks the coordinates of a round by priority
//     (|Δw_j|^γ + η), uniformly or cyclically, and drops those whose columns
//     are correlated with one already picked (|corr(x_j, x_k)| ≥ ρ): the
//     same column scheduler as the Lasso's (scheduler.ColumnScheduler, over
//     scheduler.Dynamic);
//   - each worker holds its own rows of X (column-compressed), the labels,
//     and the margins z_i = x_i·w + b of its rows, with the per-row loss,
//     its derivative r_i = −y_i·σ(−y_i·z_i) and its curvature
//     d_i = σ(z_i)·σ(−z_i); Push returns, for every coordinate j of the plan,
//     Σ_i x_ij·r_i and Σ_i x_ij²·d_i over its rows;
//   - the coordinator sums them into the gradient g_j and the curvature h_j
//     of the loss (divided by n), decides the steps (Pull), and sends the
//     changes Δw_j back; workers update their margins (Apply).
//
// The step of coordinate j minimizes the model
// g·d + ½·M·d² + λ·|w_j + d| (a soft-thresholded Newton step) with a
// curvature M that majorizes the loss along the step, so that the step alone
// never increases F: the curvature of the loss of row i changes by at most a
// factor e^{|Δz_i|} when its margin moves by Δz_i (|(log σ')'| ≤ 1), so on
// |d| ≤ Δ the curvature along coordinate j is at most h_j·e^{c_j·Δ}, with
// c_j = max_i |x_ij|, and never more than a_j = ‖x_j‖²/(4n). The step takes
// M = min(h_j·e^{c_j·Δ}, a_j) for the smallest Δ (by bisection) at which the
// resulting step is no longer than Δ. Near the optimum Δ → 0 and M → h_j:
// it is Newton's step; far from it, the bound keeps a step from running off
// where the local curvature is tiny (STRADS's fixed ¼ bound is the a_j case).
//
// # Parallel and stale steps
//
// The coordinates of a round are updated together from the same margins and,
// with rounds in flight (depth D), from margins up to D−1 rounds old. Two
// things keep that from diverging. The scheduler's dependency check keeps
// strongly correlated columns out of the same round. And the coordinator
// scales the joint step of a round by a factor θ ∈ [1/k, 1] (k the number of
// coordinates of the round) that it adapts from what the steps really did:
// every worker returns, with its next partial, the exact change of the loss
// over its rows that each update caused, so the coordinator learns the change
// ΔF_t of every round t at no extra round trip. θ halves after a round that
// raised F and grows by 10% (up to 1) after one that achieved at least 90%
// of the decrease its model predicted (the sum of the coordinates' model
// decreases, which independent coordinates always achieve). With θ = 1/k and fresh margins (D = 1) a
// round can never raise F, since F is convex and the joint step is then the
// average of k single-coordinate steps that each do not; Coordinator.Safeguard
// counts the rounds that raised F anyway.
//
// With an intercept, b is updated like a coordinate (its Newton step from
// Σr_i and Σd_i, which workers keep up to date at no cost per round), in
// rounds where the rows touched since its last update add up to at least n,
// so that its O(n) update costs at most as much as the rounds between; and
// only from partials that already saw its previous update.
//
// # Objective and duality gap
//
// Every report gives F at the workers' state (each worker keeps its own copy
// of w, so the report is consistent under pipelining) and a duality gap: the
// dual point α_i = s·y_i·q_i/n, q_i = σ(−y_i·z_i), scaled to be feasible
// (‖Xᵀα‖∞ ≤ λ, and Σα_i = 0 with an intercept, by scaling each class
// separately), has dual value (1/n)·Σ H(s·q_i) ≥ (s/n)·Σ H(q_i), where H is
// the binary entropy in nats. So gap = F − (1/n)·Σ s_c·H(q_i) ≥ F − F*
// certifies the objective, and the runtime's Tol stops on it.
package logreg
