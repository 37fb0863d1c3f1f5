package lda

import (
	"bufio"
	"cmp"
	"container/heap"
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/strads-go/strads/schmp"
)

// word returns the name of word w (0-based): its vocabulary entry, or its
// 1-based id.
func (m *model) word(w int32) string {
	if m.vocab != nil {
		return m.vocab[w]
	}
	return "#" + strconv.Itoa(int(w)+1)
}

// wordCount is a word and its count in a topic.
type wordCount struct {
	w, n int32
}

// topHeap is a min-heap of the best words of a topic so far.
type topHeap []wordCount

func (h topHeap) Len() int { return len(h) }
func (h topHeap) Less(i, j int) bool {
	return h[i].n < h[j].n || (h[i].n == h[j].n && h[i].w > h[j].w)
}
func (h topHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *topHeap) Push(x any)   { *h = append(*h, x.(wordCount)) }
func (h *topHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// TopWords returns the n most frequent words (0-based ids) of every topic,
// most frequent first (ties by word id).
func (m *model) TopWords(n int) [][]int32 {
	heaps := make([]topHeap, m.k)
	m.wordCount(func(w, t, c int32) {
		h := &heaps[t]
		if h.Len() < n {
			heap.Push(h, wordCount{w, c})
		} else if n > 0 && ((*h)[0].n < c || ((*h)[0].n == c && (*h)[0].w > w)) {
			(*h)[0] = wordCount{w, c}
			heap.Fix(h, 0)
		}
	})
	top := make([][]int32, m.k)
	for t, h := range heaps {
		slices.SortFunc(h, func(a, b wordCount) int {
			if c := cmp.Compare(b.n, a.n); c != 0 {
				return c
			}
			return cmp.Compare(a.w, b.w)
		})
		for _, wc := range h {
			top[t] = append(top[t], wc.w)
		}
	}
	return top
}

// Phi returns the estimated topic-word distributions,
// φ_kw = (n_wk + β)/(n_k + Wβ), topic by topic (K×W, dense).
func (m *model) Phi() [][]float64 {
	phi := make([][]float64, m.k)
	beta := m.priors.Beta
	wbeta := float64(m.w) * beta
	for t := range phi {
		phi[t] = make([]float64, m.w)
		d := float64(m.nk[t]) + wbeta
		for w := range phi[t] {
			phi[t][w] = beta / d
		}
	}
	m.wordCount(func(w, t, n int32) {
		phi[t][w] = (float64(n) + beta) / (float64(m.nk[t]) + wbeta)
	})
	return phi
}

// Priors returns the priors as they stand: α by topic, and β.
func (m *model) Priors() (alpha []float64, beta float64) {
	return slices.Clone(m.priors.Alpha), m.priors.Beta
}

// Outputs implements schmp.Outputter: the model's files, which the
// runtime writes once the job is done and commits together (DESIGN "Outputs and inputs"): the
// word-topic counts (Config.WordTopicOut), the document-topic proportions
// (Config.DocTopicOut), the trained model as JSON (Config.ModelOut), then,
// at out, the top words of every topic.
func (m *model) Outputs(out string) ([]schmp.Output, error) {
	var outs []schmp.Output
	for _, o := range []struct {
		path  string
		write func(*bufio.Writer) error
	}{{m.cfg.WordTopicOut, m.writeWordTopic}, {m.cfg.DocTopicOut, m.writeDocTopic}, {m.cfg.ModelOut, m.writeModelJSON}} {
		if o.path == "" {
			continue
		}
		write := o.write
		outs = append(outs, schmp.Output{Path: o.path, Write: func(w io.Writer) error {
			bw := bufio.NewWriter(w)
			if err := write(bw); err != nil {
				return err
			}
			return bw.Flush()
		}})
	}
	if out != "" {
		outs = append(outs, schmp.Output{Path: out, Write: func(w io.Writer) error {
			if _, _, _, err := m.HeldOut(); err != nil {
				return err
			}
			return m.writeTopWords(w)
		}})
	}
	return outs, nil
}

// Finish implements schmp.Finisher: it takes the workers' document-topic
// counts from their final reports, of the state the job ended with.
func (m *model) Finish(reports []Summary) error {
	m.docTopic = m.docTopic[:0]
	docs := 0
	for p, r := range reports {
		if r.DocTopic == nil {
			return fmt.Errorf("worker %d: a final report without document-topic counts", p)
		}
		if err := r.DocTopic.check(r.DocTopic.Rows(), m.k, false); err != nil && r.DocTopic.Rows() > 0 {
			return fmt.Errorf("worker %d: document-topic counts: %w", p, err)
		}
		docs += r.DocTopic.Rows()
		m.docTopic = append(m.docTopic, r.DocTopic)
	}
	if docs != m.docs {
		return fmt.Errorf("the final reports hold %d documents, want %d", docs, m.docs)
	}
	return nil
}

// RoundsPerIteration implements schmp.Iterated: a stop lands at the
// end of an iteration, once every token was sampled equally often.
func (m *model) RoundsPerIteration() uint64 { return uint64(m.cfg.RoundsPerIteration()) }

// LastRound implements schmp.Iterated: LDA needs no notice, but on
// the ring the coordinator holds the table written only at an iteration's
// end, where every stop of the runtime lands unless Options.MaxRounds cuts
// an iteration short.
func (m *model) LastRound(last uint64) error {
	if !m.cfg.gathers(last) {
		return fmt.Errorf("lda on the ring stops at the end of an iteration (%d rounds), not after round %d: set MaxRounds to whole iterations, or use the star (Config.Star)", m.cfg.RoundsPerIteration(), last)
	}
	return nil
}

// writeTopWords writes, for every topic, its share of the tokens and its
// top words with their probabilities φ_kw.
func (m *model) writeTopWords(w io.Writer) error {
	bw := bufio.NewWriter(w)
	asum, alo, ahi := alphaStats(m.priors.Alpha)
	fmt.Fprintf(bw, "# LDA: K = %d topics, W = %d words, N = %d tokens, alpha = %g, beta = %g, %d iterations; log-likelihood per token %.6f\n",
		m.k, m.w, m.tokens, m.cfg.Alpha, m.cfg.Beta, m.cfg.Iters, m.lastLL)
	if m.learned > 0 {
		fmt.Fprintf(bw, "# priors learned %d times: sum of alpha %.6g (min %.4g, max %.4g), beta %.6g\n", m.learned, asum, alo, ahi, m.priors.Beta)
	}
	if h := m.heldOut; h != nil {
		fmt.Fprintf(bw, "# held-out perplexity %.2f on %d tokens of %s (document completion)\n", h.perplexity, h.tokens, m.cfg.TestDocword)
	}
	fmt.Fprintf(bw, "# topic, alpha, share of the tokens, then the top %d words with p(word | topic)\n", m.cfg.TopWords)
	beta := m.priors.Beta
	wbeta := float64(m.w) * beta
	counts := map[[2]int32]int32{}
	top := m.TopWords(m.cfg.TopWords)
	for t, words := range top {
		for _, wd := range words {
			counts[[2]int32{int32(t), wd}] = 0
		}
	}
	m.wordCount(func(wd, t, n int32) {
		if _, ok := counts[[2]int32{t, wd}]; ok {
			counts[[2]int32{t, wd}] = n
		}
	})
	for t, words := range top {
		fmt.Fprintf(bw, "topic %d (alpha %.4g, %.2f%%):", t, m.priors.Alpha[t], 100*float64(m.nk[t])/float64(m.tokens))
		for _, wd := range words {
			p := (float64(counts[[2]int32{int32(t), wd}]) + beta) / (float64(m.nk[t]) + wbeta)
			fmt.Fprintf(bw, " %s %.4f", m.word(wd), p)
		}
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// writeModelJSON writes the model as JSON (see Model).
func (m *model) writeModelJSON(w *bufio.Writer) error { return m.Model().Write(w) }

// writeWordTopic writes the word-topic counts: CSV word_id,word,topic,count
// of the non-zero counts, by word then topic; word ids are 1-based as in
// the docword file, topics 0-based.
func (m *model) writeWordTopic(w *bufio.Writer) error {
	type entry struct{ w, t, n int32 }
	var all []entry
	m.wordCount(func(wd, t, n int32) { all = append(all, entry{wd, t, n}) })
	slices.SortFunc(all, func(a, b entry) int {
		if c := cmp.Compare(a.w, b.w); c != 0 {
			return c
		}
		return cmp.Compare(a.t, b.t)
	})
	cw := csv.NewWriter(w)
	cw.Write([]string{"word_id", "word", "topic", "count"})
	for _, e := range all {
		cw.Write([]string{strconv.Itoa(int(e.w) + 1), m.word(e.w), strconv.Itoa(int(e.t)), strconv.Itoa(int(e.n))})
	}
	cw.Flush()
	return cw.Error()
}

// writeDocTopic writes the document-topic proportions of every non-empty
// document: CSV doc_id,topic,count,theta for the topics with a non-zero
// count, θ_dk = (n_dk + α_k)/(N_d + Σ_k α_k); a topic not listed has
// θ_dk = α_k/(N_d + Σ_k α_k). Document ids are 1-based, topics 0-based.
func (m *model) writeDocTopic(w *bufio.Writer) error {
	if len(m.docTopic) == 0 {
		return fmt.Errorf("the last reports carried no document-topic counts")
	}
	cw := csv.NewWriter(w)
	cw.Write([]string{"doc_id", "topic", "count", "theta"})
	kalpha, _, _ := alphaStats(m.priors.Alpha)
	type entry struct{ t, n int32 }
	var row []entry
	for _, s := range m.docTopic {
		for r, d := range s.IDs {
			topics, counts := s.Row(r)
			row = row[:0]
			var nd int64
			for j, t := range topics {
				row = append(row, entry{t, counts[j]})
				nd += int64(counts[j])
			}
			slices.SortFunc(row, func(a, b entry) int { return cmp.Compare(a.t, b.t) })
			for _, e := range row {
				theta := (float64(e.n) + m.priors.Alpha[e.t]) / (float64(nd) + kalpha)
				cw.Write([]string{strconv.Itoa(int(d) + 1), strconv.Itoa(int(e.t)), strconv.Itoa(int(e.n)), strconv.FormatFloat(theta, 'g', 6, 64)})
			}
		}
	}
	cw.Flush()
	return cw.Error()
}
