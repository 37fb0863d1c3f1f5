package schmp

import (
	"errors"
	"fmt"
	"strings"
)

// ErrDiverged is wrapped in the error of a job whose model diverged: the
// runtime's, when a report's objective or gap is not finite or the
// objective rose by more than the job allows, and an app's own, when it
// finds its model no longer finite (errors.Is matches both).
var ErrDiverged = errors.New("the model diverged")

// FieldError reports a bad value in a configuration struct: an app's
// Config, the scheduler's or the runtime's options. It names fields as Go
// spells them; a command line that sets them from flags names the flags
// instead (Render), so that a library says "Schedule.Block must be >= 1"
// and the command "--block must be >= 1".
type FieldError struct {
	// Field is the field at fault, a path for a nested one
	// ("Schedule.Block"); empty when the fault lies in how several fields
	// combine.
	Field string
	// prefix is the path of the struct whose fields the message names
	// ("" or, say, "Schedule.").
	prefix string
	// format and args are the message after the field's name; the format
	// names fields of the struct as {Name}.
	format string
	args   []any
}

// Fieldf returns a *FieldError for field (empty for several) with the
// message fmt.Sprintf(format, args...), in which {Name} stands for the
// field Name of the same struct, e.g.
//
//	Fieldf("Candidates", "must be >= {Block} (%d), got %d", c.Block, c.Candidates)
func Fieldf(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, format: format, args: args}
}

// Error implements error, naming the fields as Go does.
func (e *FieldError) Error() string {
	return e.Render(func(path string) string { return path })
}

// Render returns the message with every field named by name(path), where
// path is the field's path from the outermost struct ("Schedule.Block").
func (e *FieldError) Render(name func(path string) string) string {
	var b strings.Builder
	if e.Field != "" {
		b.WriteString(strings.ReplaceAll(name(e.Field), "%", "%%"))
		b.WriteByte(' ')
	}
	rest := e.format
	for {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			break
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			break
		}
		b.WriteString(rest[:i])
		b.WriteString(strings.ReplaceAll(name(e.prefix+rest[i+1:i+j]), "%", "%%"))
		rest = rest[i+j+1:]
	}
	b.WriteString(rest)
	return fmt.Sprintf(b.String(), e.args...)
}

// InField returns err with the fields it names taken as fields of the
// struct field outer: a *FieldError about Block becomes one about
// outer.Block. Other errors are returned as they are.
func InField(outer string, err error) error {
	fe, ok := err.(*FieldError)
	if !ok {
		return err
	}
	c := *fe
	if c.Field != "" {
		c.Field = outer + "." + c.Field
	}
	c.prefix = outer + "." + c.prefix
	return &c
}
