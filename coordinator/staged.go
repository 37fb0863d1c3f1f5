package coordinator

import "github.com/strads-go/strads/coordinator/pipeline"

// Staged is implemented by an app's coordinator whose job solves a sequence
// of problems, its stages, one after another, each from where the previous
// one stopped (a regularization path, say). It is pipeline.Staged, whose
// documentation says when the runtime ends a stage.
type Staged = pipeline.Staged

// Iterated is implemented by an app's coordinator whose rounds come in
// iterations of a fixed number of rounds, as the static rotation's do: a
// stop then lands at the end of an iteration. It is pipeline.Iterated.
type Iterated = pipeline.Iterated
