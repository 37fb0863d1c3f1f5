package lda

import (
	"cmp"
	"slices"
)

// heldOut is the result of the evaluation.
type heldOut struct {
	perplexity float64
	tokens     int64 // held-out tokens
}

// testDoc is a test document's tokens, in file order.
type testDoc = []int32

// readTest reads a held-out docword file on a vocabulary of w words: its
// non-empty documents.
func readTest(path string, w int) ([]testDoc, error) {
	docs, err := ReadDocword(path, w)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(docs, func(d testDoc) bool { return len(d) == 0 }), nil
}

// header returns the model as it stands without its word-topic counts:
// its sizes, vocabulary, priors, topic totals and iterations.
func (m *model) header() *Model {
	md := &Model{
		Topics: m.k, Words: m.w, Vocab: m.vocab, Alpha: slices.Clone(m.priors.Alpha), Beta: m.priors.Beta,
		TopicTotals: make([]int64, m.k), Tokens: m.tokens, Iterations: int(m.iter()),
	}
	for t, n := range m.nk {
		md.TopicTotals[t] = int64(n)
	}
	return md
}

// Model returns the job's model as it stands: the topics of the last
// round pulled, the priors the workers have from the next round on.
func (m *model) Model() *Model {
	md := m.header()
	m.wordCount(func(w, t, n int32) { md.WordTopic = append(md.WordTopic, WordTopicCount{w, t, n}) })
	slices.SortFunc(md.WordTopic, func(a, b WordTopicCount) int {
		return cmp.Or(cmp.Compare(a.Word, b.Word), cmp.Compare(a.Topic, b.Topic))
	})
	return md
}

// perplexity returns the held-out perplexity of the model as it stands on
// Config.TestDocword, and its held-out tokens (see Model.Perplexity): 40
// sweeps, seeded with Config.Seed, so that a job stays deterministic.
func (m *model) perplexity() (float64, int64, error) {
	if m.test == nil {
		docs, err := readTest(m.cfg.TestDocword, m.w)
		if err != nil {
			return 0, 0, err
		}
		m.test = docs
	}
	return m.testModel().Perplexity(m.test, InferOptions{Seed: m.cfg.Seed})
}

// testModel returns the model as it stands (as Model does) for the
// held-out documents only: without its counts, and with the rows of φ of
// the words that the documents use, not a dense K × W array of them
// (1.1 GB at K = 1000, W = 141,000), computed as buildPhi computes them.
func (m *model) testModel() *Model {
	md := m.header()
	md.phiIndex = make([]int32, m.w)
	for w := range md.phiIndex {
		md.phiIndex[w] = -1
	}
	rows := 0
	for _, d := range m.test {
		for _, w := range d {
			if w >= 0 && int(w) < m.w && md.phiIndex[w] < 0 {
				md.phiIndex[w] = int32(rows)
				rows++
			}
		}
	}
	md.phi = md.smoothPhi(rows)
	inv := md.invDen()
	m.wordCount(func(w, t, n int32) {
		if r := md.phiIndex[w]; r >= 0 {
			md.phi[int(r)*m.k+int(t)] = (float64(n) + md.Beta) * inv[t]
		}
	})
	return md
}

// HeldOut computes (once) and returns the held-out perplexity on
// Config.TestDocword of the final model, and the number of held-out
// tokens; ok is false without a test file. The method is document
// completion: see Model.Perplexity.
func (m *model) HeldOut() (perplexity float64, tokens int64, ok bool, err error) {
	if m.cfg.TestDocword == "" {
		return 0, 0, false, nil
	}
	if m.heldOut == nil {
		p, n, err := m.perplexity()
		if err != nil {
			return 0, 0, false, err
		}
		m.heldOut = &heldOut{perplexity: p, tokens: n}
	}
	return m.heldOut.perplexity, m.heldOut.tokens, true, nil
}
