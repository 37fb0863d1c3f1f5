package atomicfile

import (
	"os"
	"testing"
)

func TestParseStat(t *testing.T) {
	tail := " S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 987654 20 21\n"
	cases := []struct {
		name, line string
		start      uint64
		ok         bool
	}{
		{"plain", "42 (strads)" + tail, 987654, true},
		{"spaces and parentheses in the name", "42 (a ) b) (c)" + tail, 987654, true},
		{"empty name", "42 ()" + tail, 987654, true},
		{"too short", "42 (strads) S 1 2 3", 0, false},
		{"no parenthesis", "42 strads" + tail, 0, false},
		{"not a number", "42 (strads) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x 20\n", 0, false},
		{"empty", "", 0, false},
	}
	for _, c := range cases {
		start, ok := parseStat([]byte(c.line))
		if start != c.start || ok != c.ok {
			t.Errorf("%s: parseStat = %d, %v; want %d, %v", c.name, start, ok, c.start, c.ok)
		}
	}
	if _, ok := procStart(os.Getpid()); !ok {
		t.Errorf("procStart of this process failed")
	}
}
