// Package mf is low-rank matrix factorization of a ratings matrix as a
// scheduled model-parallel program (DESIGN "Scheduling engines" and "Apps"). Its model predicts
//
//	r̂_ui = μ + b_u + c_i + w_u·h_i
//
// with μ the mean training rating (fixed), b_u and c_i the user and item
// biases, and w_u and h_i rows of the user factors W and the item factors
// H, of rank K. It minimizes, over W, H, b and c,
//
//	F = Σ_{(u,i)∈Ω} (r_ui − r̂_ui)² + λ(Σ_u n_u‖w_u‖² + Σ_i n_i‖h_i‖²) + λ_b(Σ_u b_u² + Σ_i c_i²)
//
// exactly as written: the squared errors are summed, not averaged, and n_u
// and n_i are the users' and items' training ratings counts. The factors'
// regularization is weighted by the counts (ALS-WR's, Zhou et al. 2008,
// and Spark's), so that a λ keeps its meaning as the data grow: every
// rating adds λ(‖w_u‖² + ‖h_i‖²). Config.Unweighted makes it λ(‖W‖²_F +
// ‖H‖²_F). The biases' λ_b is never weighted: b_u = Σ res/(n_u + λ_b)
// shrinks a user with few ratings more than one with many, as a prior
// worth λ_b ratings would. Config.NoBias drops μ, b and c (and λ_b):
// r̂_ui = w_u·h_i. Every
// evaluation reports F, the training RMSE √(Σ(r − r̂)²/|Ω|) and the test
// RMSE.
//
// Where the biases live: b_u with w_u, on the worker of user u, where it
// never leaves but in reports; c_i with h_i, travelling with the item
// blocks on the rotation, and held by the coordinator with H for the
// unscheduled SGD and CCD++.
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
// A (user, item) pair may be rated once in the training file: a second
// rating of a pair is an error, a *ParseError at its line that names the
// first one too (the workers find it as they load, CheckTrain before a job
// starts). Which of two ratings should count, or whether both, is not for
// the reader to guess; a file of re-ratings must be reduced first.
//
// Test ratings whose user or item is not in the training data cannot be
// predicted by the model: they are left out of the test RMSE, counted, and
// announced once (Config.Warn); Model.Predict predicts them by the terms it
// has (μ + c_i for an unseen user, μ + b_u for an unseen item, μ for both;
// the mean training rating without biases).
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
//	w_u ← w_u + η(e·h_i − λ·w_u),      h_i ← h_i + η(e·w_u − λ·h_i),
//	b_u ← b_u + η(e − (λ_b/n_u)·b_u),  c_i ← c_i + η(e − (λ_b/n_i)·c_i),
//
// e = r − r̂: the regularizer is split among a factor's ratings (λ/n_u and
// λ/n_i for the factors with Unweighted), so that the per-rating gradients
// add up to the gradient of F (halved). η = LearningRate/(1 + Decay·e^1.5) in iteration e. Within a
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
// round sets w_ut = Σ_i res_ui·h_it/(λn_u + Σ_i h_it²) for every user on the
// workers (res the residual without feature t, which the workers keep for
// their ratings; λ instead of λn_u with Unweighted) and pushes the per-item sums of the same for h_t, which
// the coordinator completes and broadcasts. The biases are one more such
// block, updated first in an iteration, whose other side is fixed at 1:
// b_u = Σ_i (res_ui − c_i)/(n_u + λ_b), then c_i = Σ_u (res_ui −
// b_u)/(n_i + λ_b). Each step minimizes F exactly over one block, so F
// never increases. An iteration is (K+1)·Inner rounds (K·Inner without
// biases).
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
// and after every ReportEvery-th iteration and the job's last round (which
// the runtime tells it: schmp.Iterated); a report at any other time
// is not exact and repeats the last evaluation. A stop (--tol, --time-limit)
// lands at the end of an iteration, and the runtime's check evaluates
// exactly the state written. The model's files are the runtime's outputs
// (Outputs): the users' factors W, which never leave their workers
// otherwise, come once, in the workers' final reports (FinalReport,
// Finish), of that state.
//
// # Validation
//
// With Config.Holdout F, the training ratings whose hash of (seed, user,
// item) falls below F (HeldOut) are held out: every role that reads the
// file derives the same split. The model is fitted to the rest; each
// worker reports its users' held-out squared errors, the coordinator
// their RMSE (Eval.ValRMSE, the app metric val_rmse), keeps the factors of
// the evaluation where it was lowest (Model.Best; with outputs, the
// evaluations then carry W), and asks the runtime to stop the job
// (schmp.Progress.Stop, schmp.StopApp) after
// Config.Patience evaluations without a new lowest (Model.Stopped). Tune
// fits a grid of λ so and Refit gives the refit of the best on all the
// ratings; FitBiasOnly is the bias-only baseline to compare with, and
// LoadSaved reads a model back from its files for prediction and
// recommendation.
//
// The biases start at 0 and the factors at c + U(−a, a) per entry, with a
// = √σ/(2K^¼) for the standard deviation σ of the training ratings, and c
// = 0, or without biases c = √(|μ|/K) (so that w·h starts near μ), drawn
// from a stream of the seed and the id alone: the start does not depend on
// the number of workers, and a run is deterministic given its
// configuration, at any number of workers. With biases, SGD on the
// rotation, CCD++ and ALS start warm instead (Config.ColdStart): from the
// bias-only fit, computed
// from the workers' sums when they join, with W = 0, so that iteration 0 is
// the bias-only model; with validation, the model written for iteration 0
// is the bias-only fit of all the training ratings, held-out ones included.
package mf
