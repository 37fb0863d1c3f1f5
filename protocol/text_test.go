package protocol

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/strads-go/strads/codec"
)

// TestPrintable checks that Printable escapes what a terminal would act
// on, keeps plain text as it is, and cuts long text with a marker.
func TestPrintable(t *testing.T) {
	long := strings.Repeat("é", 800) // 1,600 bytes
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "worker shard 1: round 7: open /data/a b.txt: no such file", "worker shard 1: round 7: open /data/a b.txt: no such file"},
		{"empty", "", ""},
		{"unicode kept", "données ✓ 数据 C:\\tmp \"q\"", "données ✓ 数据 C:\\tmp \"q\""},
		{"colour", "\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`},
		{"OSC set title", "\x1b]0;pwned\x07rest", `\x1b]0;pwned\arest`},
		{"newlines", "a\nfake log line\r\nb", `a\nfake log line\r\nb`},
		{"tab and NUL", "a\tb\x00c", `a\tb\x00c`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"C1 CSI and NEL", "a\u009b31mb\u0085c", `a\u009b31mb\u0085c`},
		{"bidi override", "abc\u202edcba", `abc\u202edcba`},
		{"invalid UTF-8", "a\xffb\xc3(\xed\xa0\x80", `a\xffb\xc3(\xed\xa0\x80`},
		{"a raw C1 byte", "a\x9bb", `a\x9bb`},
		{"long", long, strings.Repeat("é", 500) + "…[600 more bytes]"},
		{"long escapes", strings.Repeat("\x1b", 300), strings.Repeat(`\x1b`, 250) + "…[50 more bytes]"},
		{"exactly the bound", strings.Repeat("a", maxText), strings.Repeat("a", maxText)},
	} {
		got := Printable(tc.in)
		if got != tc.want {
			t.Errorf("%s: Printable(%q) = %q, want %q", tc.name, tc.in, got, tc.want)
		}
		if !utf8.ValidString(got) || strings.ContainsFunc(got, func(r rune) bool { return r < ' ' || r >= 0x7f && r < 0xa0 }) {
			t.Errorf("%s: %q holds a control character or invalid UTF-8", tc.name, got)
		}
		if Printable(got) != got && len(got) <= maxText {
			t.Errorf("%s: Printable of its own result %q changes it", tc.name, got)
		}
	}
}

// TestOpenCleansText checks that the free text of a message that Open
// decodes, and of the replies Join and Announce receive, is Printable.
func TestOpenCleansText(t *testing.T) {
	evil := "forged\n\x1b]0;title\x07\x1b[31mred\u009b"
	want := Printable(evil)
	task := Task[int, int]{Header: Header{Type: TypeTask, Run: "r"}, Stop: true, Abort: evil}
	var gotTask Task[int, int]
	if err := Open(mustMarshal(t, task), &gotTask, TypeTask, "r"); err != nil || gotTask.Abort != want {
		t.Errorf("task: %v, abort %q, want %q", err, gotTask.Abort, want)
	}
	part := Partial[int, int]{Header: Header{Type: TypePartial, Run: "r"}, Round: 1, Err: evil}
	var gotPart Partial[int, int]
	if err := Open(mustMarshal(t, part), &gotPart, TypePartial, "r"); err != nil || gotPart.Err != want {
		t.Errorf("partial: %v, err %q, want %q", err, gotPart.Err, want)
	}
	for _, m := range []interface {
		message
		texter
	}{&JoinRequest{Host: evil}, &Presence{Host: evil}, &Assign{Abort: evil}, &Stored{Err: evil}, &Ready[int]{Err: evil},
		&PlanRequest{Abort: evil}, &PlanReply[int]{Err: evil}} {
		data, err := codec.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := Open(data, m, "", ""); err != nil {
			t.Fatal(err)
		}
		if data, _ := codec.Marshal(m); strings.ContainsAny(string(data), "\n\x1b") {
			t.Errorf("%T: opened with raw text: %+v", m, m)
		}
	}
}
