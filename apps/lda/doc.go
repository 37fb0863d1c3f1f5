// Package lda is latent Dirichlet allocation fitted by collapsed Gibbs
// sampling, model-parallel on the static rotation engine (DESIGN "Scheduling engines" and "Apps"),
// as in STRADS:
//
//   - Documents are sharded across the workers by document id (worker k of
//     P reads documents [k·D/P, (k+1)·D/P) only); a worker keeps its
//     tokens, their topics z and so its document-topic counts n_dk.
//   - The vocabulary is cut into P word blocks balanced by token count
//     (the words, most frequent first, each to the block with fewest tokens
//     so far). The word-topic counts n_wk of a block travel with it.
//   - Round t of the runtime (from 1) is sub-round t−1 of the rotation
//     (scheduler.Rotation, its plan a scheduler.Turn): worker p holds block
//     (p+t−1) mod P and samples all its tokens whose words are in it. No
//     two workers ever hold the same block, so the word-topic counts are
//     never stale and never in conflict. P rounds are an iteration, in
//     which every token is sampled once.
//   - After a sub-round, Push returns the block (its updated counts) and
//     the worker's change to the topic totals n_k; Pull sends every block to
//     its next owner (Rotation.Owner(b, t+1), through an Update that
//     implements schmp.Splitter, so that a worker receives its own block
//     only) with the new totals, the sum of every worker's changes.
//
// # Staleness of the topic totals
//
// Within a sub-round a worker samples with its own copy of n_k, which it
// updates with its own moves only: the other workers' moves of the same
// sub-round reach it at the next one. So n_k is at most one sub-round
// stale, by at most the number of tokens the other P−1 workers moved in
// that sub-round (each moved token changes two totals by one). The word
// and document counts are exact. Every worker's copy of n_k stays ≥ its
// own tokens' counts, so it is never negative. bench/lda measures the
// effect: the log-likelihood per iteration on P workers against one.
//
// # The samplers
//
// With Config.MHSteps 0 a token is drawn from its exact conditional, at a
// cost that grows with the topics of its word and document (gibbs.go);
// AutoMH, the default, takes it for K ≤ ExactMaxTopics. Above, the cost
// per token must not grow with K, and the sampler is LightLDA's (Yuan et
// al., 2015): Metropolis–Hastings with two proposals that cost O(1) to
// draw, alternated Config.MHSteps times per token:
//
//   - the word proposal q_w(k) ∝ (n_wk + β)/(n_k + Wβ), drawn from Walker
//     alias tables built when the worker takes a block up: a sparse table
//     per word over its non-zero counts (weight n_wk/(n_k + Wβ)) and one
//     dense table over K (weight β/(n_k + Wβ)) shared by all words. The
//     proposal is the counts as they were when taken up; the acceptance
//     ratio uses those (kept beside the current counts), so that the chain
//     is exact however far the counts have moved since;
//   - the document proposal q_d(k) ∝ n_dk + α_k, drawn in O(1) by picking a
//     random token of the document and taking its topic (with weight
//     A = Σ_k α_k, a topic drawn ∝ α_k instead: uniform for a symmetric α,
//     from an alias table otherwise); its document terms cancel in the
//     acceptance.
//
// Documents are sampled one after the other, each document's tokens of the
// block together; a document's counts n_dk live in a dense scratch array
// while it is sampled. A token's word proposals are drawn when the chain
// comes to it, from a stream of their own whose draws are those that
// drawing every token's up front, word by word, would take (the generator
// is a counter: its n-th draw is at hand), so that nothing is kept per
// token but its word and topic. All proposals of a token
// are looked up before its chain runs, so that the look-ups overlap in
// memory; that is exact, as no count changes during a token's chain. A
// block's word-topic rows are dense (K cells) or open-addressing hashes,
// whichever is smaller, so memory is O(non-zeros), not O(W·K).
//
// The sampler is checked against the exact conditional of a token
// (TestKernel) and against plain collapsed Gibbs sampling
// (TestMatchesExactGibbs); it mixes more slowly per iteration than the
// latter, as Metropolis–Hastings samplers do.
//
// # Learned priors
//
// With Config.OptimizeEvery, the document-topic prior becomes an
// asymmetric α (α_k by topic) and β is learned too, as MALLET does
// (Wallach, Mimno & McCallum 2009): after every OptimizeEvery-th
// iteration from OptimizeBurnIn on, each worker adds to the partial of
// the iteration's last sub-round the histogram of its documents'
// counts n_dk, topic by topic (its document lengths' histogram went with
// its shard summary); the coordinator adds them up, takes the histogram
// of n_wk from the blocks it routes, solves for α and β by Minka's
// fixed-point iteration (prior.go), and sends them with the next update.
// Every role then uses them from the next round on: the sampler, the
// reports, the outputs.
//
// # Reports
//
// Every Config.ReportEvery iterations the workers report the collapsed
// joint log-likelihood, with A = Σ_k α_k,
//
//	log p(w, z) = Σ_d [log Γ(A) − log Γ(N_d + A) + Σ_k (log Γ(n_dk + α_k) − log Γ(α_k))]
//	            + Σ_k [log Γ(Wβ) − log Γ(n_k + Wβ) + Σ_w (log Γ(n_wk + β) − log Γ(β))]
//
// in parts: each its documents' part, and the word part of the block it
// holds; the coordinator adds the topic part and divides by N (the
// objective, per token, which the job maximizes). The progress (the
// schmp.Progress's Metrics) has the iteration, the rates, α's sum, least
// and greatest value, β and, with a test set, the held-out perplexity; the
// coordinator's Stage is "iter n/N". With every report the
// coordinator also checks the count invariants: all workers have the same
// n_k, and Σ_d n_dk = Σ_w n_wk = n_k topic by topic, Σ_k n_k = N, no count
// negative; Config.Check checks the table after every round too. A plan
// reports the tokens its round samples as the variables it updates, so
// that the runtime's updates and updates/s are tokens and tokens per
// second.
//
// # Outputs
//
// The model's files are the runtime's outputs (Outputs), written once the
// job is done and committed together, all or none: at the runtime's output
// path, the top words of every topic with p(word | topic) = (n_wk + β)/(n_k
// + Wβ); besides it, the word-topic counts (CSV word_id,word,topic,count),
// the document-topic proportions (CSV doc_id,topic,count,theta with θ_dk =
// (n_dk + α_k)/(N_d + A), non-zero counts only) and the trained model as
// JSON (Config.ModelOut; see Model). Word and document ids are 1-based as
// in the docword file, topics 0-based. The document-topic counts come from
// the workers once, in their final reports (FinalReport, Finish), of the
// state the job ended with; a stop lands at the end of an iteration
// (schmp.Iterated).
//
// Held-out perplexity (Config.TestDocword) is computed by document
// completion (Model.Perplexity) at reports and at the end (HeldOut).
//
// # Inference
//
// LoadModel reads a trained model back, and Model.Infer folds new
// documents (ReadDocword, ReadText) into it: with φ fixed, collapsed
// Gibbs sampling of their topic assignments alone gives their topic
// proportions (WriteProportions: a CSV line per document). strads lda
// infer is the command that does it.
//
// # The baseline
//
// Unscheduled is the naive data-parallel program: every worker samples all
// its tokens in one round against its own copy of the whole word-topic
// table, which the coordinator merges (adding every worker's changes)
// once per iteration and sends to all. Within an iteration a worker sees
// none of the other workers' moves.
package lda
