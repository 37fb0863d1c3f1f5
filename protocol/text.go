package protocol

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxText bounds the text that Printable keeps, in bytes of its result
// (the marker of the cut aside). Every error and reason this runtime sends
// is far shorter (a node's error with its path and line: a few hundred
// bytes), while a message may carry megabytes: a forged abort could
// otherwise flood a terminal, or every log line that quotes it.
const maxText = 1000

// Printable returns s, text that came from the network (an abort's
// reason, another node's error, its host name), made safe to print on a
// terminal or in a log line: every rune that is not graphic
// (strconv.IsGraphic: the C0 controls, \n, \r and \t included, so the
// text stays on one line; DEL; ESC, which opens colour and set-title
// sequences; the C1 controls 0x80–0x9F; Unicode's format and separator
// runes, such as the bidirectional overrides) is escaped as Go writes it
// in a quoted string (\x1b, \n, \u0085), as is each byte of invalid
// UTF-8 (\xff). Valid graphic text, spaces and backslashes included, is
// kept as it is, unquoted. A text longer than 1,000 bytes, once escaped,
// is cut there, at a rune, and ends with "…[N more bytes]", N counting
// the bytes of s left out.
//
// Open applies it to the free text of every message it decodes (a task's
// or a plan request's Abort, a partial's Err, a join's Host), and member.Join
// and member.Announce to the replies they receive: once the text enters, every
// later print of it, in an error returned up to the command line or in a
// log, is safe, and none can be missed. Identifiers that are compared
// (run ids, node IDs, tickets, digests) and settings that are applied are
// kept exact, and quoted (%q) or passed through Printable where printed.
func Printable(s string) string {
	if len(s) <= maxText && graphic(s) {
		return s
	}
	var b strings.Builder
	b.Grow(min(len(s), maxText) + 24)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		var part string
		switch {
		case r == utf8.RuneError && n == 1:
			part = fmt.Sprintf(`\x%02x`, s[i])
		case strconv.IsGraphic(r):
			part = s[i : i+n]
		default:
			q := strconv.QuoteRune(r) // e.g. '\x1b'
			part = q[1 : len(q)-1]
		}
		if b.Len()+len(part) > maxText {
			fmt.Fprintf(&b, "…[%d more bytes]", len(s)-i)
			break
		}
		b.WriteString(part)
		i += n
	}
	return b.String()
}

// graphic reports whether s is valid UTF-8 of graphic runes alone.
func graphic(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !strconv.IsGraphic(r) {
			return false
		}
	}
	return true
}

// The clean methods make a message's free text Printable (Open).

func (j *JoinRequest) clean()   { j.Host = Printable(j.Host) }
func (p *Presence) clean()      { p.Host = Printable(p.Host) }
func (a *Assign) clean()        { a.Abort = Printable(a.Abort) }
func (s *Stored) clean()        { s.Err = Printable(s.Err) }
func (r *Ready[S]) clean()      { r.Err = Printable(r.Err) }
func (r *PlanRequest) clean()   { r.Abort = Printable(r.Abort) }
func (r *PlanReply[P]) clean()  { r.Err = Printable(r.Err) }
func (t *Task[P, U]) clean()    { t.Abort = Printable(t.Abort) }
func (p *Partial[R, S]) clean() { p.Err = Printable(p.Err) }
func (r *JoinReply) clean()     { r.Err = Printable(r.Err) }
func (a *Ack) clean()           { a.Err = Printable(a.Err) }
