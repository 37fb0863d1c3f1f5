package lda

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/strads-go/strads/schmp"
)

// GenConfig describes a synthetic corpus drawn from a known LDA model:
// topics φ_k ~ Dirichlet(Beta) over Vocab words, and for each document
// proportions θ_d ~ Dirichlet(Alpha) over Topics topics, a length drawn
// uniformly from [⌈DocLen/2⌉, ⌊3·DocLen/2⌋], and each token's topic
// z ~ θ_d and word w ~ φ_z. TestDocs more documents are drawn the same
// way for a held-out set.
//
// With Zipf = s > 0 the topics are φ_k ~ Dirichlet(Vocab·Beta·π) instead,
// π_w ∝ (w+1)^−s: every topic's mean is π, so the corpus's word
// frequencies follow Zipf's law with exponent s (word 1 the most
// frequent), as in real text, while the topics still differ.
type GenConfig struct {
	Docs, Vocab, Topics, DocLen int
	TestDocs                    int
	Alpha, Beta                 float64
	Zipf                        float64
	// Alphas, if set, is an asymmetric document-topic prior, α_k for topic
	// k (Topics values), instead of Alpha.
	Alphas []float64
	Seed   uint64
}

// alpha returns α_k.
func (c *GenConfig) alpha(k int) float64 {
	if c.Alphas != nil {
		return c.Alphas[k]
	}
	return c.Alpha
}

// Validate returns an error naming the offending field by its flag.
func (c GenConfig) Validate() error {
	switch {
	case c.Docs < 1 || c.Docs > math.MaxInt32:
		return fmt.Errorf("--docs must be in [1, %d], got %d", math.MaxInt32, c.Docs)
	case c.Vocab < 1 || c.Vocab > math.MaxInt32:
		return fmt.Errorf("--vocab must be in [1, %d], got %d", math.MaxInt32, c.Vocab)
	case c.Topics < 1 || c.Topics > maxTopics:
		return fmt.Errorf("--topics must be in [1, %d], got %d", maxTopics, c.Topics)
	case c.DocLen < 1:
		return fmt.Errorf("--doc-len must be at least 1, got %d", c.DocLen)
	case c.TestDocs < 0:
		return fmt.Errorf("--test-docs must be >= 0, got %d", c.TestDocs)
	case c.Alphas == nil && (!(c.Alpha > 0) || math.IsInf(c.Alpha, 0)):
		return fmt.Errorf("--alpha must be a finite number > 0, got %v", c.Alpha)
	case c.Alphas != nil && len(c.Alphas) != c.Topics:
		return schmp.Fieldf("Alphas", "has %d values for {Topics} = %d topics", len(c.Alphas), c.Topics)
	case !(c.Beta > 0) || math.IsInf(c.Beta, 0):
		return fmt.Errorf("--beta must be a finite number > 0, got %v", c.Beta)
	case !(c.Zipf >= 0) || c.Zipf > 10:
		return fmt.Errorf("--zipf must be in [0, 10], got %v", c.Zipf)
	case slices.ContainsFunc(c.Alphas, func(a float64) bool { return !(a > 0) || math.IsInf(a, 0) }):
		return schmp.Fieldf("Alphas", "must be finite numbers > 0, got %v", c.Alphas)
	case float64(c.Topics)*float64(c.Vocab) > 1<<28:
		return fmt.Errorf("--topics × --vocab must be at most %d (the generator holds the model densely), got %d", 1<<28, c.Topics*c.Vocab)
	case float64(c.Docs+c.TestDocs)*float64(c.DocLen)*1.5 > maxTokens:
		return fmt.Errorf("--docs × --doc-len must be below %d tokens", maxTokens)
	}
	return nil
}

// GenModel is the model a corpus was drawn from.
type GenModel struct {
	// Phi[k][w] is p(word w | topic k).
	Phi [][]float64
	// Counts[k][w] is the number of training tokens of word w drawn from
	// topic k: the word-topic counts of the true assignment.
	Counts [][]int32
	// Tokens is the number of training tokens.
	Tokens int64
	// DocTopics is the histogram of the true assignment's document-topic
	// counts n_dk over the training documents (row k for topic k), and
	// Lengths that of their lengths (one row): what learning α needs.
	DocTopics, Lengths *Hist
}

// Streams of the generator's PCG: the topics, the training documents, the
// test documents.
const (
	genStreamPhi  = 0x6c6461_0001 // "lda" 1
	genStreamDocs = 0x6c6461_0002
	genStreamTest = 0x6c6461_0003
)

// GenModelOnly draws the topics of c.
func GenModelOnly(c GenConfig) *GenModel {
	r := rand.New(rand.NewPCG(c.Seed, genStreamPhi))
	m := &GenModel{Phi: make([][]float64, c.Topics), Counts: make([][]int32, c.Topics)}
	beta := func(int) float64 { return c.Beta }
	if c.Zipf > 0 {
		base := make([]float64, c.Vocab)
		var sum float64
		for w := range base {
			base[w] = math.Pow(float64(w+1), -c.Zipf)
			sum += base[w]
		}
		scale := float64(c.Vocab) * c.Beta / sum
		beta = func(w int) float64 { return base[w] * scale }
	}
	for k := range m.Phi {
		m.Phi[k] = dirichlet(r, c.Vocab, beta)
		m.Counts[k] = make([]int32, c.Vocab)
	}
	return m
}

// Generate draws the corpus of c: it writes the training documents to
// docword and the vocabulary ("w1" … "wW") to vocab in the UCI format,
// the topics to phi (CSV topic,word_id,prob of the probabilities ≥ 1e-6,
// most probable first), and the test documents, if any, to test. It
// returns the model.
func Generate(docword, vocab, phi, test *bufio.Writer, c GenConfig) (*GenModel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := GenModelOnly(c)
	tabs := make([][]aliasEntry, c.Topics)
	var sc aliasScratch
	words := make([]int32, c.Vocab)
	for w := range words {
		words[w] = int32(w)
	}
	for k, p := range m.Phi {
		tabs[k] = make([]aliasEntry, c.Vocab)
		buildAlias(tabs[k], words, p, &sc)
	}
	draws := func(docs int, stream uint64, count bool) (entries [][3]int32, tokens int64) {
		r := rand.New(rand.NewPCG(c.Seed, stream))
		topics := make([]int32, c.Topics)
		for k := range topics {
			topics[k] = int32(k)
		}
		theta := make([]aliasEntry, c.Topics)
		lo, hi := (c.DocLen+1)/2, max(3*c.DocLen/2, (c.DocLen+1)/2)
		n := map[int32]int32{}
		var ws []int32
		ndk := make([]int32, c.Topics)
		dh, lh := newHistBuilder(c.Topics), newHistBuilder(1)
		for d := range docs {
			buildAlias(theta, topics, dirichlet(r, c.Topics, c.alpha), &sc)
			length := lo + r.IntN(hi-lo+1)
			clear(n)
			ws = ws[:0]
			for range length {
				k := draw(theta, r.Uint64())
				w := draw(tabs[k], r.Uint64())
				if n[w] == 0 {
					ws = append(ws, w)
				}
				n[w]++
				if count {
					m.Counts[k][w]++
					ndk[k]++
				}
			}
			if count {
				lh.add(0, int32(length), 1)
				for k, nk := range ndk {
					if nk > 0 {
						dh.add(k, nk, 1)
					}
				}
				clear(ndk)
			}
			slices.Sort(ws)
			for _, w := range ws {
				entries = append(entries, [3]int32{int32(d + 1), w + 1, n[w]})
			}
			tokens += int64(length)
		}
		if count {
			m.DocTopics, m.Lengths = dh.hist(), lh.hist()
		}
		return entries, tokens
	}
	train, tokens := draws(c.Docs, genStreamDocs, true)
	m.Tokens = tokens
	writeDocword(docword, c.Docs, c.Vocab, train)
	for w := range c.Vocab {
		vocab.WriteString("w" + strconv.Itoa(w+1) + "\n")
	}
	phi.WriteString("topic,word_id,prob\n")
	order := make([]int32, c.Vocab)
	for k, p := range m.Phi {
		copy(order, words)
		slices.SortFunc(order, func(a, b int32) int {
			if p[a] != p[b] {
				if p[a] > p[b] {
					return -1
				}
				return 1
			}
			return int(a - b)
		})
		for _, w := range order {
			if p[w] < 1e-6 {
				break
			}
			fmt.Fprintf(phi, "%d,%d,%.6g\n", k, w+1, p[w])
		}
	}
	if test != nil && c.TestDocs > 0 {
		entries, _ := draws(c.TestDocs, genStreamTest, false)
		writeDocword(test, c.TestDocs, c.Vocab, entries)
	}
	return m, nil
}

// writeDocword writes a UCI docword file.
func writeDocword(w *bufio.Writer, docs, words int, entries [][3]int32) {
	fmt.Fprintf(w, "%d\n%d\n%d\n", docs, words, len(entries))
	var b []byte
	for _, e := range entries {
		b = strconv.AppendInt(b[:0], int64(e[0]), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(e[1]), 10)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(e[2]), 10)
		b = append(b, '\n')
		w.Write(b)
	}
}

// dirichlet draws from a Dirichlet(a(0), …, a(n−1)), in log space so that
// small a does not underflow: G ~ Gamma(a) as Gamma(a+1)·U^(1/a).
func dirichlet(r *rand.Rand, n int, alpha func(i int) float64) []float64 {
	logs := make([]float64, n)
	top := math.Inf(-1)
	for i := range logs {
		a := alpha(i)
		logs[i] = math.Log(gamma(r, a+1)) + math.Log(1-r.Float64())/a
		top = max(top, logs[i])
	}
	var sum float64
	for i, l := range logs {
		logs[i] = math.Exp(l - top)
		sum += logs[i]
	}
	for i := range logs {
		logs[i] /= sum
	}
	return logs
}

// gamma draws from Gamma(a, 1) for a ≥ 1 (Marsaglia and Tsang).
func gamma(r *rand.Rand, a float64) float64 {
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := 1 - r.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}
