package testhelper

import (
	"encoding/csv"
	"math"
	"os"
	"slices"
	"strconv"
	"testing"
)

// ReadCSV reads the CSV file at path: its header and its rows, every one
// as long as the header. It fails tb on any error.
func ReadCSV(tb testing.TB, path string) (header []string, rows [][]string) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	all, err := csv.NewReader(f).ReadAll()
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	if len(all) == 0 {
		tb.Fatalf("%s: empty, want a header", path)
	}
	return all[0], all[1:]
}

// WrittenRow reads the metrics CSV at path and returns its row whose
// written column is 1, the report of the model written, by column name (an
// empty cell is a NaN). It fails tb unless exactly one row is so marked
// and every other is 0.
func WrittenRow(tb testing.TB, path string) map[string]float64 {
	tb.Helper()
	header, rows := ReadCSV(tb, path)
	if len(rows) == 0 {
		tb.Fatalf("metrics %s: a header and no rows", path)
	}
	col := slices.Index(header, "written")
	if col < 0 {
		tb.Fatalf("metrics %s: no written column in %q", path, header)
	}
	var row map[string]float64
	for i, r := range rows {
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
