package lda

import (
	"fmt"
	"slices"

	"github.com/strads-go/strads/codec"
)

// shard is a worker's documents: its tokens, grouped by document, and
// their topics. A token is two int32s, its word and its topic: nothing
// else is kept per token (the sampler draws the word proposals as it
// goes, sampleDoc).
type shard struct {
	k      int
	docIDs []int32 // the corpus id (0-based) of each document
	start  []int32 // the tokens of document d are [start[d], start[d+1])
	// word is the word of each token: its corpus id (0-based) until
	// layout, its row in its block after (its rank among the block's
	// words, ascending: the id is blockWords[b][row]).
	word   []int32
	z      []int32 // the topic of each token
	tokens int64

	// Set by layout: the words of each block, ascending, and where each
	// document's tokens of each block start: [bstart[d·B+b],
	// bstart[d·B+b+1]).
	blocks     int
	blockWords [][]int32
	bstart     []int32
	own        [][]int32 // own[b][i]: this shard's tokens of the i-th word of block b
}

// loadShard reads the documents [lo, hi) of the corpus and gives their
// tokens random topics drawn from r.
func loadShard(c *corpus, lo, hi, k int, r *rng) (*shard, error) {
	sh := &shard{k: k, start: []int32{0}}
	err := c.read(lo, hi, false, func(doc int, words, counts []int32) error {
		for j, w := range words {
			for range counts[j] {
				sh.word = append(sh.word, w)
			}
		}
		if len(sh.word) > maxTokens {
			return fmt.Errorf("lda: shard of documents [%d, %d) has more than %d tokens", lo+1, hi, maxTokens)
		}
		sh.docIDs = append(sh.docIDs, int32(doc))
		sh.start = append(sh.start, int32(len(sh.word)))
		return nil
	})
	if err != nil {
		return nil, err
	}
	sh.tokens = int64(len(sh.word))
	sh.z = make([]int32, len(sh.word))
	for i := range sh.z {
		sh.z[i] = int32((uint64(uint32(r.next())) * uint64(k)) >> 32)
	}
	return sh, nil
}

// docs returns the number of documents.
func (sh *shard) docs() int { return len(sh.docIDs) }

// counts returns the shard's word-topic counts (rows named by word,
// ascending, each row's topics ascending) and topic totals. Called before
// the layout, while word holds corpus ids. It buckets the topics by word
// (4 bytes a token, freed on return) rather than sorting the tokens.
func (sh *shard) counts() (*Sparse, codec.Int32s) {
	nk := make(codec.Int32s, sh.k)
	var words int32
	for _, w := range sh.word {
		words = max(words, w+1)
	}
	off := make([]int32, words+1)
	for _, w := range sh.word {
		off[w+1]++
	}
	rows := 0
	for w := range words {
		if off[w+1] > 0 {
			rows++
		}
		off[w+1] += off[w]
	}
	next := slices.Clone(off[:words])
	topics := make([]int32, len(sh.word))
	for i, w := range sh.word {
		topics[next[w]] = sh.z[i]
		next[w]++
		nk[sh.z[i]]++
	}
	s := &Sparse{IDs: make(codec.Int32s, 0, rows)}
	s.startRows(rows)
	for w := range words {
		ts := topics[off[w]:off[w+1]]
		if len(ts) == 0 {
			continue
		}
		slices.Sort(ts)
		s.IDs = append(s.IDs, w)
		for j, t := range ts {
			if j > 0 && ts[j-1] == t {
				s.Counts[len(s.Counts)-1]++
				continue
			}
			s.Topics, s.Counts = append(s.Topics, t), append(s.Counts, 1)
		}
		s.endRow()
	}
	return s, nk
}

// layout groups every document's tokens by block, given the block of each
// word (blocks in all), and within a block by row (the rank of the word
// among its block's words), keeping each token's topic. From then on a
// token's word is its row.
func (sh *shard) layout(wordBlock []int32, blocks int) error {
	rowOf := make([]int32, len(wordBlock))
	size := make([]int32, blocks)
	for w, b := range wordBlock {
		if b < 0 || int(b) >= blocks {
			return fmt.Errorf("word %d in block %d of %d", w+1, b, blocks)
		}
		rowOf[w] = size[b]
		size[b]++
	}
	for _, w := range sh.word {
		if int(w) >= len(wordBlock) {
			return fmt.Errorf("word %d beyond the layout of %d words", w+1, len(wordBlock))
		}
	}
	sh.blocks = blocks
	sh.own = make([][]int32, blocks)
	sh.blockWords = make([][]int32, blocks)
	for b := range sh.own {
		sh.own[b] = make([]int32, size[b])
		sh.blockWords[b] = make([]int32, 0, size[b])
	}
	for w, b := range wordBlock {
		sh.blockWords[b] = append(sh.blockWords[b], int32(w))
	}
	sh.bstart = make([]int32, sh.docs()*blocks+1)
	type tok struct{ block, row, z int32 }
	var buf []tok
	for d := range sh.docs() {
		a, e := sh.start[d], sh.start[d+1]
		buf = buf[:0]
		for i := a; i < e; i++ {
			w := sh.word[i]
			buf = append(buf, tok{wordBlock[w], rowOf[w], sh.z[i]})
		}
		slices.SortFunc(buf, func(x, y tok) int {
			if x.block != y.block {
				return int(x.block - y.block)
			}
			return int(x.row - y.row)
		})
		b := 0
		for j, t := range buf {
			i := a + int32(j)
			for ; b <= int(t.block); b++ {
				sh.bstart[d*blocks+b] = i
			}
			sh.word[i], sh.z[i] = t.row, t.z
			sh.own[t.block][t.row]++
		}
		for ; b < blocks; b++ {
			sh.bstart[d*blocks+b] = e
		}
	}
	sh.bstart[len(sh.bstart)-1] = int32(len(sh.word))
	return nil
}

// docWords appends to dst the corpus id (0-based) of each token of
// document d, in the shard's order, after the layout.
func (sh *shard) docWords(d int, dst []int32) []int32 {
	for b := range sh.blocks {
		for i := sh.bstart[d*sh.blocks+b]; i < sh.bstart[d*sh.blocks+b+1]; i++ {
			dst = append(dst, sh.blockWords[b][sh.word[i]])
		}
	}
	return dst
}

// sample resamples, with s, the topics of the shard's tokens whose words are
// in block b, document by document. It checks ctx's error function every
// few thousand documents.
func (sh *shard) sample(s *sampler, b int, cancelled func() error) error {
	s.startBlock(sh.own[b])
	for d := range sh.docs() {
		first, last := sh.bstart[d*sh.blocks+b], sh.bstart[d*sh.blocks+b+1]
		if first == last {
			continue
		}
		a, e := sh.start[d], sh.start[d+1]
		s.sampleDoc(sh.z[a:e], sh.word[a:e], int(first-a), int(last-a))
		if d%4096 == 4095 {
			if err := cancelled(); err != nil {
				return err
			}
		}
	}
	return nil
}

// docTopic returns the shard's document-topic counts, rows named by
// document id (0-based).
func (sh *shard) docTopic() *Sparse {
	s := &Sparse{IDs: make(codec.Int32s, 0, sh.docs())}
	s.startRows(sh.docs())
	ndk := make([]int32, sh.k)
	for d := range sh.docs() {
		z := sh.z[sh.start[d]:sh.start[d+1]]
		for _, t := range z {
			ndk[t]++
		}
		for _, t := range z {
			if ndk[t] > 0 {
				s.Topics, s.Counts = append(s.Topics, t), append(s.Counts, ndk[t])
				ndk[t] = 0
			}
		}
		s.IDs = append(s.IDs, sh.docIDs[d])
		s.endRow()
	}
	return s
}
