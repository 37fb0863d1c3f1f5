package logreg

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/strads-go/strads/apps/lasso"
	"github.com/strads-go/strads/apps/linear"

	"github.com/strads-go/strads/schmp"
)

// genStreamLabels is the PCG stream of the label draws; GenConfig.Seed is
// the first word.
const genStreamLabels = 0x6c6f6772656701 // "logreg" 1

// GenConfig describes a reproducible synthetic classification problem. The
// features and the sparse true weights w* are the Lasso generator's
// (lasso.GenConfig, whose Noise is added to the margin), and each label is
// drawn from the logistic model: y = +1 with probability σ(x·w* + noise + Bias).
type GenConfig struct {
	lasso.GenConfig
	// Bias is the true intercept.
	Bias float64
	// ZeroOne writes the labels as 0/1 instead of −1/+1.
	ZeroOne bool
}

// Validate returns a *schmp.FieldError naming the offending field, if c
// does not describe a valid problem.
func (c GenConfig) Validate() error {
	if err := c.GenConfig.Validate(); err != nil {
		return err
	}
	if math.IsNaN(c.Bias) || math.IsInf(c.Bias, 0) {
		return schmp.Fieldf("Bias", "must be finite, got %v", c.Bias)
	}
	return nil
}

// Generate writes the data set described by c to w in LIBSVM format and
// returns the true weights w*, of length c.Features. The output depends
// only on c, and its design matrix is the one lasso.Generate writes for
// c.GenConfig.
func Generate(w io.Writer, c GenConfig) (truth []float64, err error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("logreg: %w", err)
	}
	lw := &labelWriter{
		w:   bufio.NewWriterSize(w, 64<<10),
		rng: rand.New(rand.NewPCG(c.Seed, genStreamLabels)),
		cfg: c,
	}
	truth, err = lasso.Generate(lw, c.GenConfig)
	if err == nil && len(lw.line) > 0 {
		err = fmt.Errorf("logreg: generator left an unterminated line")
	}
	if err == nil {
		err = lw.w.Flush()
	}
	if err != nil {
		return nil, fmt.Errorf("logreg: %w", err)
	}
	return truth, nil
}

// labelWriter rewrites the lines of a Lasso data set, whose labels are the
// margins x·w* + noise, with labels drawn from the logistic model.
type labelWriter struct {
	w    *bufio.Writer
	rng  *rand.Rand
	cfg  GenConfig
	line []byte // an incomplete line
	buf  []byte
}

// Write implements io.Writer.
func (lw *labelWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			lw.line = append(lw.line, p...)
			break
		}
		line := p[:i+1]
		if len(lw.line) > 0 {
			lw.line = append(lw.line, line...)
			line = lw.line
		}
		if err := lw.rewrite(line); err != nil {
			return 0, err
		}
		lw.line = lw.line[:0]
		p = p[i+1:]
	}
	return n, nil
}

// rewrite writes line (with its '\n') with its margin replaced by a label.
func (lw *labelWriter) rewrite(line []byte) error {
	end := bytes.IndexAny(line, " \n")
	margin, err := strconv.ParseFloat(string(line[:end]), 64)
	if err != nil {
		return fmt.Errorf("generated margin %q: %w", line[:end], err)
	}
	pos := lw.rng.Float64() < linear.Sigmoid(margin+lw.cfg.Bias)
	switch {
	case pos && lw.cfg.ZeroOne:
		lw.buf = append(lw.buf[:0], '1')
	case pos:
		lw.buf = append(lw.buf[:0], "+1"...)
	case lw.cfg.ZeroOne:
		lw.buf = append(lw.buf[:0], '0')
	default:
		lw.buf = append(lw.buf[:0], "-1"...)
	}
	lw.buf = append(lw.buf, line[end:]...)
	_, err = lw.w.Write(lw.buf)
	return err
}
