package testhelper

import (
	"encoding/csv"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
)

// WrittenRow reads the metrics CSV at path and returns its row whose
// written column is 1, the report of the model written, by column name (an
// empty cell is a NaN). It fails tb unless exactly one row is so marked
// and every other is 0.
func WrittenRow(tb testing.TB, path string) map[string]float64 {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		tb.Fatalf("metrics %s: %v", path, err)
	}
	if len(rows) < 2 {
		tb.Fatalf("metrics %s: %d lines, want a header and rows", path, len(rows))
	}
	header := rows[0]
	col := slices.Index(header, "written")
	if col < 0 {
		tb.Fatalf("metrics %s: no written column in %q", path, header)
	}
	var row map[string]float64
	for i, r := range rows[1:] {
		switch r[col] {
		case "0":
			continue
		case "1":
		default:
			tb.Fatalf("metrics %s line %d: written %q, want 0 or 1", path, i+2, r[col])
		}
		if row != nil {
			tb.Fatalf("metrics %s: line %d is a second written row", path, i+2)
		}
		row = map[string]float64{}
		for k, name := range header {
			v, err := strconv.ParseFloat(r[k], 64)
			if r[k] == "" {
				v, err = math.NaN(), nil
			}
			if err != nil {
				tb.Fatalf("metrics %s line %d: %s %q: %v", path, i+2, name, r[k], err)
			}
			row[name] = v
		}
	}
	if row == nil {
		tb.Fatalf("metrics %s: no written row", path)
	}
	return row
}
