// Package logreg is L1-regularized (sparse) logistic regression as a
// scheduled model-parallel program (and by data-parallel SGD on the
// parameter server: see the end):
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
//     same column scheduler as the Lasso's (columnar.Scheduler, over
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
// # The column layout
//
// Config.Layout picks how the data are split among the workers (as for the
// Lasso: lasso.ParseLayout). What is described above is the row layout
// (Program). In the column layout (ColumnProgram), worker k of P owns the
// columns columnar.OwnedRange(p, k, P) with all their rows, the labels, and
// a replica of the margins z = Xw + b over all rows, and every worker
// works, as the Lasso's do (DESIGN "The column layout"). Each round every worker updates its
// working set of its own columns (columnar.Screen: the violators of the
// optimality conditions, w_j = 0 and |Σ_i x_ij·r_i| > nλ, join it worst
// first, as Config.Schedule's policy grows it, and coordinates settled at
// zero leave; a column's correlation is computed again only when the
// margins have moved enough for it to violate, since r is ¼-Lipschitz in
// them) and takes proximal Newton steps over it on a scratch copy of the
// margins, as liblinear's newGLMNET does (see ColWorker.Push): each step
// minimizes the quadratic model of the loss at the current margins plus
// λ‖w‖₁ by coordinate descent — one sweep of the whole set, then sweeps of
// its non-zero coordinates until they settle — and moves along the model's
// minimizer by an Armijo line search on the exact objective, so that no
// step raises F and with one worker the round's change is taken whole.
// Steps follow each other until the first sweep of one moves the model by
// less than an inner tolerance (relative to F, tightened once rounds
// settle) or a work budget is spent. The intercept is one more coordinate
// of worker shard 0's model, unpenalized. The scheduler's plans are empty.
//
// A worker returns the change of z over all rows, computed afresh from its
// changes of w and b (X·Δw + Δb, not the difference of the scratch margins,
// whose rounding would swamp the small changes near the optimum), and the
// new values of the coordinates it changed. The coordinator keeps its own
// margins and merges the changes of several workers so that a round never
// raises F. It takes every change whole if that lowers F by at least 90% of
// what the best of these does, and otherwise the best of them: the merged
// change D along a line search — from the step that minimizes the parabola
// through F(0), F(1) and Δ, the longer one up to 4 where it lowers F more
// than step 1 and step 1 satisfies d-GLMNET's Armijo rule, and otherwise
// backtracking by halving until
//
//	F(α) − F(0) ≤ 0.01·α·Δ,  Δ = ∇L·D + λ·(‖w + Δw‖₁ − ‖w‖₁) < 0
//
// — and each worker's change alone at α = 1; or nothing if none lowers F.
// F(α) − F(0) is computed exactly over the rows D moves, each row's change
// as log1p(q·expm1(−y·α·D_i)) to its own relative precision, so that
// changes near the optimum are told from rounding.
//
// Workers share each of their columns that comes out of a round non-zero a
// second time, with its data. When no working set grew in a round, or the
// round did not take every change whole, the next one is joint: every
// worker's Newton steps take the others' active columns that it holds, and
// the intercept, too (in column order, so that the workers solve the same
// problem alike), and it reports its own coordinates; a round that took
// nothing is never followed by a joint one. With rounds in flight (which
// the command refuses for this layout), a worker's change computed before
// one of its earlier changes was taken is dropped, and one computed from
// older margins is weighed like several workers' changes.
//
// Reports are the row layout's, from the workers' state: every worker sums
// the loss, the entropies and the accuracy over all rows alike (the
// coordinator checks that they agree bit for bit: workers that read
// different data fail the job), and reports for its own columns ‖w‖₁, the
// non-zeros and the largest |Σ_i x_ij·s_i·y_i·q_i| that the duality gap
// needs (without an intercept, where the dual point is −r, from the
// screen, exact above nλ). At the start the coordinator checks that every
// worker read the same file (libsvm.Fingerprint) and holds the columns it
// should.
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
//
// # Data-parallel SGD
//
// RunSGD solves the same problem (or, with Penalty L2, (λ/2)‖w‖² in place
// of λ‖w‖₁) by SGD on the stale-synchronous parameter server (package
// ps/node), whose weights table has the consistency model SGDConfig.Model:
// the rows are split over the workers, each reads only its range; the
// weights are a table of rows of width 1 (the intercept its own row,
// unpenalized, starting at logit ȳ). A clock is a mini-batch of
// 1/ClocksPerPass of each worker's rows, one SGD step per row at the
// worker's view (its own steps seen at once), with step η₀/√(1+pass); then
// the penalty's proximal step for the whole mini-batch of all workers
// (soft-thresholding by η·λ·n/k for L1, the truncated gradient; division by
// 1 + η·λ·n/k for L2, weight decay), on the weights the worker owns (j mod
// workers): the prox is not additive, so one worker applies it. Clock 0
// fills a BSP setup table (λ_max's column sums, Σ‖x_i‖² for η₀); every
// evaluation adds each worker's loss, counts and staleness to a BSP
// metrics table, which the workers read one evaluation later, so that all
// decide alike when to stop (Tol, Target, TimeLimit, the passes) without
// a barrier at every evaluation. The model is read from the servers at the
// final clock and its objective recomputed from it over the whole file.
package logreg
