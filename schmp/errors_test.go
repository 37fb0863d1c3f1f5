package schmp

import (
	"errors"
	"strings"
	"testing"
)

func TestFieldError(t *testing.T) {
	flag := func(path string) string {
		return "--" + strings.ToLower(path[strings.LastIndexByte(path, '.')+1:])
	}
	tests := []struct {
		err        error
		goes, cmds string
	}{
		{Fieldf("Block", "must be >= 1, got %d", 0), "Block must be >= 1, got 0", "--block must be >= 1, got 0"},
		{Fieldf("Candidates", "must be >= {Block} (%d), got %d", 32, 16), "Candidates must be >= Block (32), got 16", "--candidates must be >= --block (32), got 16"},
		{InField("Schedule", Fieldf("Candidates", "must be >= {Block}")), "Schedule.Candidates must be >= Schedule.Block", "--candidates must be >= --block"},
		{InField("A", InField("B", Fieldf("", "give {X} or {Y}, 100%% sure"))), "give A.B.X or A.B.Y, 100% sure", "give --x or --y, 100% sure"},
		{Fieldf("Data", "is required"), "Data is required", "--data is required"},
		{Fieldf("Path", "%q: unbalanced { brace", "a{b}"), `Path "a{b}": unbalanced { brace`, `--path "a{b}": unbalanced { brace`},
	}
	for _, tt := range tests {
		var fe *FieldError
		if !errors.As(tt.err, &fe) {
			t.Fatalf("%v is no *FieldError", tt.err)
		}
		if got := tt.err.Error(); got != tt.goes {
			t.Errorf("Error() = %q, want %q", got, tt.goes)
		}
		if got := fe.Render(flag); got != tt.cmds {
			t.Errorf("Render = %q, want %q", got, tt.cmds)
		}
	}
	plain := errors.New("x")
	if InField("A", plain) != plain {
		t.Error("InField changed an error that is no *FieldError")
	}
}
