// Package mf is low-rank matrix factorization of a ratings matrix as a
// scheduled model-parallel program (DESIGN §4, §5). It minimizes, over the
// user factors W (a row w_u per user) and the item factors H (a row h_i
// per item), both of rank K,
//
//	F(W, H) = Σ_{(u,i)∈Ω} (r_ui − w_u·h_i)² + λ(‖W‖²_F + ‖H‖²_F)
//
// exactly as written: the squared errors are summed, not averaged, and λ
// is not weighted by the users' or items' ratings counts. Every
// evaluation reports F, the training RMSE √(Σ(r − w·h)²/|Ω|) and the test
// RMSE.
//
// # Data, ids and shards
//
// Ratings files hold lines "user item rating" (white space, comma or "::"
// separated; an optional fourth integer field, MovieLens' timestamp, is
// ignored) with arbitrary 64-bit integer ids; see ReadRatings. Every role
// that reads the training file computes the same Index from a counting
// pass: users go to workers, and items to blocks, balanced by ratings count
// (greedy largest-first), and both get internal indices; the workers send
// its fingerprint when they join, so that the coordinator notices workers
// that read different files. A worker then keeps only its own users'
// ratings (a second pass) and its own users' factors W, which never leave
// it but in reports. Outputs use the original ids again.
//
// Test ratings whose user or item is not in the training data cannot be
// predicted by the model: they are left out of the test RMSE, counted, and
// announced once (Config.Warn); Model.Predict predicts them by the mean
// training rating.
//
// # Algorithms
//
// SGD on the rotation (Config.Algo = SGD, Schedule = Rotation) is DSGD
// (Gemulla et al. 2011) on the static rotation engine: items are cut into P
// blocks, one per worker, and in sub-round t (a runtime round) worker p runs
// SGD over its ratings of the items of block (p+t) mod P, so that no two
// workers ever update the same factor; the coordinator sends every block to
// its next owner (RotationUpdate implements schmp.Splitter). An iteration
// is P rounds, in which every rating is visited once. The step on rating
// (u, i), with e = r − w_u·h_i, is
//
//	w_u ← w_u + η(e·h_i − (λ/n_u)·w_u),  h_i ← h_i + η(e·w_u − (λ/n_i)·h_i),
//
// n_u and n_i the ratings counts: the regularizer is split among a factor's
// ratings, so that the per-rating gradients add up to the gradient of F
// (halved). η = LearningRate/(1 + Decay·e^1.5) in iteration e. Within a
// block a worker's ratings are grouped by user (W is then read in order),
// each user's in a random order drawn once from the seed.
//
// The unscheduled baseline (Schedule = Unscheduled) is Hogwild-style: in
// each round (an iteration) every worker runs SGD over all its ratings on
// its own copy of all of H, at the same time as the others, and the
// coordinator merges the copies: each h_i moves by the average of the
// workers' changes to it, weighted by their ratings of i.
//
// CCD++ (Algo = CCD; Yu et al. 2012) updates one feature t at a time: a
// round sets w_ut = Σ_i res_ui·h_it/(λ + Σ_i h_it²) for every user on the
// workers (res the residual without feature t, which the workers keep for
// their ratings) and pushes the per-item sums of the same for h_t, which
// the coordinator completes and broadcasts. Each step minimizes F exactly
// over one column, so F never increases. An iteration is K·Inner rounds.
//
// All three need strict rounds (--depth 1): every round depends on the
// previous one's update.
//
// # Evaluations
//
// A report in round t shows the state after round t−1 (depth 1), and each
// worker evaluates its own ratings: Σ(r − w·h)² over its training and test
// ratings, ‖W‖² over its users, and ‖H‖² over the items it answers for.
// On the rotation a worker holds a single block of H between evaluation
// points, so the coordinator sends all of H to every worker at the start
// and after every ReportEvery-th iteration and the last; a report at any
// other time is not exact and repeats the last evaluation (as the final
// report does after a stop by --time-limit, or by --tol one round after the
// iteration that converged). The factors kept for the outputs are those of
// the last evaluation.
//
// The initial factors are c + U(−a, a) per entry, with c = √(|μ|/K) and a =
// √σ/(2K^¼) for the mean μ and standard deviation σ of the training
// ratings, drawn from a stream of the seed and the id alone: the start does
// not depend on the number of workers, and a run is deterministic given its
// configuration, at any number of workers.
package mf
