package lda

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"sync"

	"github.com/strads-go/strads/inputfile"
)

// Model is a trained LDA model, as inference for new documents needs it:
// the topics (word-topic counts and β, or their distributions φ), the
// document-topic prior α, and the vocabulary.
//
// The trained model is saved as JSON (Config.ModelOut, Model.Write), which
// LoadModel reads back and any JSON reader loads:
//
//	{"format": "strads-lda", "version": 1,
//	 "topics": K, "words": W, "tokens": N, "iterations": T,
//	 "alpha": [α_0, …, α_{K−1}], "beta": β,
//	 "vocab": ["word", …],                       (W words; absent without a vocabulary)
//	 "topic_totals": [n_0, …, n_{K−1}],
//	 "word_topic": {"word": […], "topic": […], "count": […]}}
//
// word_topic lists the non-zero word-topic counts n_wk by word then topic,
// with 0-based word ids (an index into vocab: the docword file's id less
// one) and topics. The topics are φ_kw = (n_wk + β)/(n_k + Wβ); a
// document's proportions have the prior Dirichlet(α). In Python (numpy),
// φ as a K × W array:
//
//	m = json.load(open("model.json")); wt = m["word_topic"]; n = np.zeros((m["topics"], m["words"])); n[wt["topic"], wt["word"]] = wt["count"]
//	phi = (n + m["beta"]) / (n.sum(1)[:, None] + m["words"] * m["beta"]); alpha = np.array(m["alpha"])
type Model struct {
	// Topics is K and Words is W.
	Topics, Words int
	// Vocab is the vocabulary, W words (nil: words are known by id).
	Vocab []string
	// Alpha is the document-topic prior, α_k for topic k.
	Alpha []float64
	// Beta is the topic-word prior.
	Beta float64
	// TopicTotals is n_k, the training tokens of every topic, and WordTopic
	// the non-zero word-topic counts n_wk.
	TopicTotals []int64
	WordTopic   []WordTopicCount
	// Tokens is N, the training tokens, and Iterations the iterations
	// trained (information only).
	Tokens     int64
	Iterations int

	phi []float64 // φ word-major: phi[r·K + k] = φ_kw, r = w or phiIndex[w]
	// phiIndex, if set, is the row of phi of each word (−1: none): phi
	// holds the rows of the words that the held-out documents use only.
	phiIndex []int32
}

// WordTopicCount is a non-zero word-topic count n_wk: word (0-based),
// topic, count.
type WordTopicCount struct {
	Word, Topic, Count int32
}

// maxPhi bounds K × W, the values of φ that a model holds (8 bytes each:
// 16 GiB): a model file's "topics" and "words" announce them, and φ is
// built from those numbers whatever else the file holds.
const maxPhi = 1 << 31

// modelFormat and modelVersion name the JSON format of a model.
const (
	modelFormat  = "strads-lda"
	modelVersion = 1
)

// modelJSON is the JSON form of a Model.
type modelJSON struct {
	Format      string    `json:"format"`
	Version     int       `json:"version"`
	Topics      int       `json:"topics"`
	Words       int       `json:"words"`
	Tokens      int64     `json:"tokens"`
	Iterations  int       `json:"iterations"`
	Alpha       []float64 `json:"alpha"`
	Beta        float64   `json:"beta"`
	Vocab       []string  `json:"vocab,omitempty"`
	TopicTotals []int64   `json:"topic_totals"`
	WordTopic   struct {
		Word  []int32 `json:"word"`
		Topic []int32 `json:"topic"`
		Count []int32 `json:"count"`
	} `json:"word_topic"`
}

// NewModelPhi returns a model given by its topic distributions instead
// of counts: phi[k] is φ_k over W words, alpha α by topic; vocab may be
// nil. It can infer and evaluate, but not be written (Write needs counts).
// It is how other systems' topics are evaluated with the same code
// (bench/lda).
func NewModelPhi(phi [][]float64, alpha []float64, vocab []string) (*Model, error) {
	if len(phi) == 0 || len(phi) != len(alpha) {
		return nil, fmt.Errorf("lda: %d topics and %d values of α", len(phi), len(alpha))
	}
	k, w := len(phi), len(phi[0])
	m := &Model{Topics: k, Words: w, Vocab: vocab, Alpha: slices.Clone(alpha), phi: make([]float64, w*k)}
	for t, row := range phi {
		if len(row) != w {
			return nil, fmt.Errorf("lda: topic %d has %d words, topic 0 has %d", t, len(row), w)
		}
		var sum float64
		for wd, p := range row {
			if !(p >= 0) || math.IsInf(p, 0) {
				return nil, fmt.Errorf("lda: φ of topic %d, word %d is %v", t, wd, p)
			}
			m.phi[wd*k+t] = p
			sum += p
		}
		if math.Abs(sum-1) > 1e-6 {
			return nil, fmt.Errorf("lda: φ of topic %d sums to %v, want 1", t, sum)
		}
	}
	if err := m.checkPriors(); err != nil {
		return nil, err
	}
	return m, nil
}

// checkPriors checks Alpha and, for a model of counts, Beta.
func (m *Model) checkPriors() error {
	if len(m.Alpha) != m.Topics {
		return fmt.Errorf("lda: Model.Alpha has %d values for %d topics", len(m.Alpha), m.Topics)
	}
	for t, a := range m.Alpha {
		if !(a > 0) || math.IsInf(a, 0) {
			return fmt.Errorf("lda: Model.Alpha[%d] = %v, want a finite number > 0", t, a)
		}
	}
	if m.Vocab != nil && len(m.Vocab) != m.Words {
		return fmt.Errorf("lda: Model.Vocab has %d words, want %d", len(m.Vocab), m.Words)
	}
	return nil
}

// check checks a model of counts: its sizes, priors and counts.
func (m *Model) check() error {
	switch {
	case m.Topics < 1 || m.Topics > maxTopics:
		return fmt.Errorf("lda: Model.Topics = %d, want [1, %d]", m.Topics, maxTopics)
	case m.Words < 1 || m.Words > maxWords:
		return fmt.Errorf("lda: Model.Words = %d, want [1, %d]", m.Words, maxWords)
	case m.Words*m.Topics > maxPhi:
		// φ, K × W numbers, is what the model costs in memory.
		return fmt.Errorf("lda: %d topics × %d words = %d values of φ, more than the limit of %d", m.Topics, m.Words, m.Topics*m.Words, maxPhi)
	case !(m.Beta > 0) || math.IsInf(m.Beta, 0):
		return fmt.Errorf("lda: Model.Beta = %v, want a finite number > 0", m.Beta)
	case len(m.TopicTotals) != m.Topics:
		return fmt.Errorf("lda: Model.TopicTotals has %d values for %d topics", len(m.TopicTotals), m.Topics)
	}
	if err := m.checkPriors(); err != nil {
		return err
	}
	sums := make([]int64, m.Topics)
	for i, c := range m.WordTopic {
		if c.Word < 0 || int(c.Word) >= m.Words || c.Topic < 0 || int(c.Topic) >= m.Topics || c.Count <= 0 {
			return fmt.Errorf("lda: Model.WordTopic[%d] = word %d, topic %d, count %d: out of range", i, c.Word, c.Topic, c.Count)
		}
		sums[c.Topic] += int64(c.Count)
	}
	for t, n := range m.TopicTotals {
		if n != sums[t] {
			return fmt.Errorf("lda: topic %d: the word-topic counts add up to %d, Model.TopicTotals says %d", t, sums[t], n)
		}
	}
	return nil
}

// Phi returns φ_kw, the probability of word w in topic k.
func (m *Model) Phi(k, w int) float64 {
	m.buildPhi()
	return m.phi[w*m.Topics+k]
}

// buildPhi computes φ from the counts, once.
func (m *Model) buildPhi() {
	if m.phi != nil {
		return
	}
	m.phi = m.smoothPhi(m.Words)
	k := m.Topics
	inv := m.invDen()
	for _, c := range m.WordTopic {
		m.phi[int(c.Word)*k+int(c.Topic)] = (float64(c.Count) + m.Beta) * inv[c.Topic]
	}
}

// invDen returns 1/(n_k + Wβ) by topic.
func (m *Model) invDen() []float64 {
	wbeta := float64(m.Words) * m.Beta
	inv := make([]float64, m.Topics)
	for t, n := range m.TopicTotals {
		inv[t] = 1 / (float64(n) + wbeta)
	}
	return inv
}

// smoothPhi returns rows rows of φ_kw for n_wk = 0: β/(n_k + Wβ).
func (m *Model) smoothPhi(rows int) []float64 {
	k := m.Topics
	phi := make([]float64, rows*k)
	inv := m.invDen()
	for r := range rows {
		for t := range k {
			phi[r*k+t] = m.Beta * inv[t]
		}
	}
	return phi
}

// phiRow returns the row of φ of word w: φ_kw for every topic k.
func (m *Model) phiRow(w int32) []float64 {
	r := int(w)
	if m.phiIndex != nil {
		r = int(m.phiIndex[w])
	}
	return m.phi[r*m.Topics : (r+1)*m.Topics]
}

// Write writes m as JSON (see Model).
func (m *Model) Write(w io.Writer) error {
	if m.TopicTotals == nil {
		return fmt.Errorf("lda: a model without counts cannot be written")
	}
	j := modelJSON{
		Format: modelFormat, Version: modelVersion, Topics: m.Topics, Words: m.Words, Tokens: m.Tokens,
		Iterations: m.Iterations, Alpha: m.Alpha, Beta: m.Beta, Vocab: m.Vocab, TopicTotals: m.TopicTotals,
	}
	n := len(m.WordTopic)
	j.WordTopic.Word, j.WordTopic.Topic, j.WordTopic.Count = make([]int32, n), make([]int32, n), make([]int32, n)
	for i, c := range m.WordTopic {
		j.WordTopic.Word[i], j.WordTopic.Topic[i], j.WordTopic.Count[i] = c.Word, c.Topic, c.Count
	}
	bw := bufio.NewWriter(w)
	if err := json.NewEncoder(bw).Encode(&j); err != nil {
		return err
	}
	return bw.Flush()
}

// LoadModel reads a model written by Write (Config.ModelOut), checking it.
func LoadModel(path string) (*Model, error) {
	f, err := inputfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("lda: %w", err)
	}
	defer f.Close()
	var j modelJSON
	dec := json.NewDecoder(bufio.NewReader(f))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, jsonError(path, err)
	}
	if j.Format != modelFormat || j.Version != modelVersion {
		return nil, fmt.Errorf("lda: %s: format %q version %d, want %q version %d", path, j.Format, j.Version, modelFormat, modelVersion)
	}
	wt := j.WordTopic
	if len(wt.Word) != len(wt.Topic) || len(wt.Word) != len(wt.Count) {
		return nil, fmt.Errorf("lda: %s: word_topic has %d words, %d topics and %d counts", path, len(wt.Word), len(wt.Topic), len(wt.Count))
	}
	m := &Model{
		Topics: j.Topics, Words: j.Words, Vocab: j.Vocab, Alpha: j.Alpha, Beta: j.Beta,
		TopicTotals: j.TopicTotals, Tokens: j.Tokens, Iterations: j.Iterations,
		WordTopic: make([]WordTopicCount, len(wt.Word)),
	}
	for i := range wt.Word {
		m.WordTopic[i] = WordTopicCount{wt.Word[i], wt.Topic[i], wt.Count[i]}
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// jsonError returns err, an error decoding the JSON file path, as a
// *ParseError at its line if it has an offset (a syntax error, or a value
// of the wrong type), or else wrapped with the path.
func jsonError(path string, err error) error {
	var off int64
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return &ParseError{File: path, Line: 1, Msg: "not a strads-lda model: the JSON ends early"}
	default:
		return fmt.Errorf("lda: %s: %w", path, err)
	}
	b, rerr := os.ReadFile(path)
	if rerr != nil || off > int64(len(b)) {
		return fmt.Errorf("lda: %s: byte %d: %w", path, off, err)
	}
	return parseErrorf(path, 1+bytes.Count(b[:off], []byte{'\n'}), "%v (byte %d)", err, off)
}

// InferOptions configure the fold-in of documents into a model.
type InferOptions struct {
	// Sweeps is the number of Gibbs sweeps over a document's tokens; the
	// topic counts are averaged over the last half. 0 means 40.
	Sweeps int
	// Seed seeds the sampler. Document i (0-based) is sampled from its own
	// stream of Seed, so that its result does not depend on the others.
	Seed uint64
	// Threads is the number of documents folded in at once, each by its
	// own goroutine; 0 means 1. The result does not depend on it.
	Threads int
}

// defaultSweeps is InferOptions.Sweeps' default.
const defaultSweeps = 40

// Infer folds docs (each a list of 0-based word ids, a word once per
// occurrence) into the model and returns their topic proportions: with
// the topics φ fixed, collapsed Gibbs sampling of the documents' topic
// assignments alone, p(z_i = k) ∝ (n_dk + α_k)·φ_kw without token i, O(K)
// per token. The first sweep adds the tokens one by one, each drawn given
// those before it; then o.Sweeps sweeps resample every token, and
// θ_dk = (n̄_dk + α_k)/(N_d + Σ_k α_k), where n̄_dk is the mean count over
// the last half of the sweeps. An empty document gets the prior mean
// α_k/Σ_k α_k. Word ids out of range are an error, before any sampling.
func (m *Model) Infer(docs [][]int32, o InferOptions) ([][]float64, error) {
	if o.Threads < 0 {
		return nil, fmt.Errorf("lda: InferOptions.Threads must be >= 0, got %d", o.Threads)
	}
	for i, d := range docs {
		if err := m.checkDoc(i, d); err != nil {
			return nil, err
		}
	}
	threads := min(max(o.Threads, 1), max(len(docs), 1))
	folders := make([]*folder, threads)
	for t := range folders {
		f, err := m.folder(o)
		if err != nil {
			return nil, err
		}
		folders[t] = f
	}
	out := make([][]float64, len(docs))
	flat := make([]float64, len(docs)*m.Topics)
	for i := range out {
		out[i] = flat[i*m.Topics : (i+1)*m.Topics : (i+1)*m.Topics]
	}
	// Thread t takes documents t, t+threads, …: long and short documents
	// mix in every thread.
	var wg sync.WaitGroup
	for t, f := range folders {
		wg.Go(func() {
			for i := t; i < len(docs); i += threads {
				f.theta(docs[i], uint64(i), out[i])
			}
		})
	}
	wg.Wait()
	return out, nil
}

// Perplexity returns the held-out perplexity of docs by document
// completion (Wallach et al., "Evaluation methods for topic models", ICML
// 2009, §4.2), and the number of held-out tokens: every document with at
// least two tokens is split into its even-numbered tokens (0, 2, …; in
// the order given), which are observed, and its odd-numbered ones, held
// out. θ_d is inferred from the observed tokens as Infer does, and the
// perplexity is exp(−Σ log Σ_k θ_dk φ_kw / M) over the M held-out tokens.
func (m *Model) Perplexity(docs [][]int32, o InferOptions) (perplexity float64, tokens int64, err error) {
	f, err := m.folder(o)
	if err != nil {
		return 0, 0, err
	}
	theta := make([]float64, m.Topics)
	var obs []int32
	var logp float64
	for i, d := range docs {
		if err := m.checkDoc(i, d); err != nil {
			return 0, 0, err
		}
		if len(d) < 2 {
			continue
		}
		obs = obs[:0]
		for j := 0; j < len(d); j += 2 {
			obs = append(obs, d[j])
		}
		f.theta(obs, uint64(i), theta)
		for j := 1; j < len(d); j += 2 {
			row := m.phiRow(d[j])
			var p float64
			for k, th := range theta {
				p += th * row[k]
			}
			logp += math.Log(p)
			tokens++
		}
	}
	if tokens == 0 {
		return 0, 0, fmt.Errorf("lda: no document with two tokens or more to complete")
	}
	return math.Exp(-logp / float64(tokens)), tokens, nil
}

// checkDoc checks the word ids of document i.
func (m *Model) checkDoc(i int, d []int32) error {
	for _, w := range d {
		if w < 0 || int(w) >= m.Words {
			return fmt.Errorf("lda: document %d: word %d of a model of %d words", i+1, w, m.Words)
		}
	}
	return nil
}

// folder folds documents into a model.
type folder struct {
	k      int
	m      *Model // its φ, by phiRow
	alpha  []float64
	asum   float64
	sweeps int
	seed   uint64
	ndk    []int32
	acc    []float64
	cum    []float64
	z      []int32
}

func (m *Model) folder(o InferOptions) (*folder, error) {
	if o.Sweeps < 0 {
		return nil, fmt.Errorf("lda: InferOptions.Sweeps must be >= 0, got %d", o.Sweeps)
	}
	if err := m.checkPriors(); err != nil {
		return nil, err
	}
	m.buildPhi()
	f := &folder{
		k: m.Topics, m: m, alpha: m.Alpha, sweeps: cmp.Or(o.Sweeps, defaultSweeps), seed: o.Seed,
		ndk: make([]int32, m.Topics), acc: make([]float64, m.Topics), cum: make([]float64, m.Topics),
	}
	for _, a := range m.Alpha {
		f.asum += a
	}
	return f, nil
}

// theta sets out to the topic proportions of the document words, sampled
// from stream of the folder's seed.
func (f *folder) theta(words []int32, stream uint64, out []float64) {
	n := len(words)
	if n == 0 {
		for k, a := range f.alpha {
			out[k] = a / f.asum
		}
		return
	}
	r := newRNG(f.seed, stream+1)
	f.z = resize(f.z, n)
	clear(f.ndk)
	clear(f.acc)
	for i, w := range words {
		f.z[i] = f.draw(w, &r)
		f.ndk[f.z[i]]++
	}
	burn := f.sweeps - f.sweeps/2
	for sweep := range f.sweeps {
		for i, w := range words {
			f.ndk[f.z[i]]--
			f.z[i] = f.draw(w, &r)
			f.ndk[f.z[i]]++
		}
		if sweep >= burn {
			for k, c := range f.ndk {
				f.acc[k] += float64(c)
			}
		}
	}
	kept := float64(f.sweeps - burn)
	norm := float64(n) + f.asum
	for k := range out {
		mean := 0.0
		if kept > 0 {
			mean = f.acc[k] / kept
		} else {
			mean = float64(f.ndk[k])
		}
		out[k] = (mean + f.alpha[k]) / norm
	}
}

// draw draws a topic for a token of word w: ∝ (n_dk + α_k)·φ_kw, with the
// document's counts without the token.
func (f *folder) draw(w int32, r *rng) int32 {
	row := f.m.phiRow(w)
	var sum float64
	for k, p := range row {
		sum += (float64(f.ndk[k]) + f.alpha[k]) * p
		f.cum[k] = sum
	}
	u := r.unit() * sum
	k, _ := slices.BinarySearchFunc(f.cum, u, func(c, u float64) int {
		if c <= u {
			return -1
		}
		return 1
	})
	return int32(min(k, f.k-1))
}

// maxInferTokens bounds the tokens that ReadDocword holds (512 MiB).
const maxInferTokens = 1 << 27

// ReadDocword reads the documents of a UCI docword file (header D, W, NNZ,
// then "docID wordID count" lines) whose W must be words: document d
// (0-based, docID d+1) is its word ids (0-based), each repeated by its
// count, in file order; an empty document is empty. It holds at most
// maxInferTokens tokens. Bad input is a *ParseError.
func ReadDocword(path string, words int) ([][]int32, error) {
	c, err := openDocword(path)
	if err != nil {
		return nil, err
	}
	if c.words != words {
		return nil, parseErrorf(path, 2, "W = %d, but the model has W = %d", c.words, words)
	}
	// Every token is held, 4 bytes each, however few bytes its count
	// takes in the file.
	c.maxTokens = maxInferTokens
	docs := make([][]int32, c.docs)
	err = c.read(0, c.docs, true, func(doc int, ws, counts []int32) error {
		var d []int32
		for j, w := range ws {
			for range counts[j] {
				d = append(d, w)
			}
		}
		docs[doc] = d
		return nil
	})
	return docs, err
}

// ReadText reads a raw text file, one document a line, split into words as
// Config.Text is (lower-cased, split on non-letters), keeping the words of
// vocab (in order, repeated as they occur) and dropping the others:
// document d is line d+1.
func ReadText(path string, vocab []string) ([][]int32, error) {
	if len(vocab) == 0 {
		return nil, fmt.Errorf("lda: reading text needs the model's vocabulary")
	}
	index := make(map[string]int32, len(vocab))
	for i, w := range vocab {
		index[w] = int32(i)
	}
	var docs [][]int32
	var buf []byte
	err := eachLine(path, func(_ int, b []byte) error {
		var d []int32
		buf = splitWords(b, buf, func(w []byte) {
			if id, ok := index[string(w)]; ok {
				d = append(d, id)
			}
		})
		docs = append(docs, d)
		return nil
	})
	return docs, err
}

// WriteProportions writes topic proportions (as Infer returns them) as
// CSV, a line per document: the header doc_id,theta_0,…,theta_{K−1}, then
// the document's id (1-based, in order: the docword file's ids, or line
// numbers of a text file) and its K proportions θ_dk, topics 0-based, to
// 6 significant digits. All rows must have the same length.
func WriteProportions(w io.Writer, theta [][]float64) error {
	bw := bufio.NewWriter(w)
	k := 0
	if len(theta) > 0 {
		k = len(theta[0])
	}
	b := []byte("doc_id")
	for t := range k {
		b = append(b, ",theta_"...)
		b = strconv.AppendInt(b, int64(t), 10)
	}
	b = append(b, '\n')
	if _, err := bw.Write(b); err != nil {
		return err
	}
	for d, row := range theta {
		if len(row) != k {
			return fmt.Errorf("lda: document %d has %d proportions, document 1 has %d", d+1, len(row), k)
		}
		b = strconv.AppendInt(b[:0], int64(d)+1, 10)
		for _, v := range row {
			b = append(b, ',')
			b = strconv.AppendFloat(b, v, 'g', 6, 64)
		}
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}
