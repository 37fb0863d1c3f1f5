package lda

import (
	"fmt"
	"slices"

	"github.com/strads-go/strads/codec"
)

// shard is a worker's documents: its tokens, grouped by document, and
// their topics.
type shard struct {
	k      int
	docIDs []int32 // the corpus id (0-based) of each document
	start  []int32 // the tokens of document d are [start[d], start[d+1])
	word   []int32 // the word of each token
	z      []int32 // the topic of each token
	tokens int64

	// Set by layout: the block of each word, the row of each token's word
	// in its block, and where each document's tokens of each block start:
	// [bstart[d·B+b], bstart[d·B+b+1]).
	blocks int
	row    []int32
	bstart []int32
	own    [][]int32 // own[b][i]: this shard's tokens of the i-th word of block b
	// occ[b][occOff[b][i]:occOff[b][i+1]] are the tokens of row i of
	// block b.
	occ, occOff [][]int32
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

// counts returns the shard's word-topic counts (rows named by word) and
// topic totals.
func (sh *shard) counts() (*Sparse, codec.Int32s) {
	nk := make(codec.Int32s, sh.k)
	order := make([]int, len(sh.word))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := int(sh.word[a]) - int(sh.word[b]); c != 0 {
			return c
		}
		return int(sh.z[a]) - int(sh.z[b])
	})
	s := &Sparse{IDs: codec.Int32s{}}
	s.startRows(0)
	for j, i := range order {
		w, t := sh.word[i], sh.z[i]
		nk[t]++
		if j > 0 && sh.word[order[j-1]] == w {
			if sh.z[order[j-1]] == t {
				s.Counts[len(s.Counts)-1]++
				continue
			}
		} else {
			if j > 0 {
				s.endRow()
			}
			s.IDs = append(s.IDs, w)
		}
		s.Topics, s.Counts = append(s.Topics, t), append(s.Counts, 1)
	}
	if len(order) > 0 {
		s.endRow()
	}
	return s, nk
}

// layout groups every document's tokens by block, given the block of each
// word (blocks in all), and within a block by row (the rank of the word
// among its block's words), keeping each token's topic.
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
	sh.blocks = blocks
	sh.own = make([][]int32, blocks)
	for b := range sh.own {
		sh.own[b] = make([]int32, size[b])
	}
	sh.row = make([]int32, len(sh.word))
	sh.bstart = make([]int32, sh.docs()*blocks+1)
	type tok struct{ block, row, word, z int32 }
	var buf []tok
	for d := range sh.docs() {
		a, e := sh.start[d], sh.start[d+1]
		buf = buf[:0]
		for i := a; i < e; i++ {
			w := sh.word[i]
			if int(w) >= len(wordBlock) {
				return fmt.Errorf("word %d beyond the layout of %d words", w+1, len(wordBlock))
			}
			buf = append(buf, tok{wordBlock[w], rowOf[w], w, sh.z[i]})
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
			sh.word[i], sh.row[i], sh.z[i] = t.word, t.row, t.z
			sh.own[t.block][t.row]++
		}
		for ; b < blocks; b++ {
			sh.bstart[d*blocks+b] = e
		}
	}
	sh.bstart[len(sh.bstart)-1] = int32(len(sh.word))
	sh.occ, sh.occOff = make([][]int32, blocks), make([][]int32, blocks)
	for b, own := range sh.own {
		off := make([]int32, len(own)+1)
		for i, n := range own {
			off[i+1] = off[i] + n
		}
		sh.occOff[b] = off
		sh.occ[b] = make([]int32, off[len(own)])
	}
	next := make([][]int32, blocks)
	for b := range next {
		next[b] = slices.Clone(sh.occOff[b][:len(sh.own[b])])
	}
	for d := range sh.docs() {
		for b := range blocks {
			for i := sh.bstart[d*blocks+b]; i < sh.bstart[d*blocks+b+1]; i++ {
				r := sh.row[i]
				sh.occ[b][next[b][r]] = i
				next[b][r]++
			}
		}
	}
	return nil
}

// sample resamples, with s, the topics of the shard's tokens whose words are
// in block b, document by document. It checks ctx's error function every
// few thousand documents.
func (sh *shard) sample(s *sampler, b int, cancelled func() error) error {
	s.predraw(sh.occ[b], sh.occOff[b], len(sh.z))
	for d := range sh.docs() {
		first, last := sh.bstart[d*sh.blocks+b], sh.bstart[d*sh.blocks+b+1]
		if first == last {
			continue
		}
		a, e := sh.start[d], sh.start[d+1]
		s.sampleDoc(sh.z[a:e], sh.row[a:e], int(first-a), int(last-a), s.props[int(a)*s.mh:int(e)*s.mh])
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
