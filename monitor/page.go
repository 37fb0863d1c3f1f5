package monitor

import (
	_ "embed"
	"net/http"
)

// page is the live page: one self-contained HTML file (its CSS and script
// inline, nothing fetched from elsewhere) that polls /series every second
// and draws its charts as inline SVG.
//
//go:embed page.html
var page []byte

// servePage serves the live page.
func servePage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(page)
}
