package mf

import (
	"fmt"
	"testing"

	"github.com/strads-go/strads/internal/testhelper"
)

func TestBalance(t *testing.T) {
	counts := map[int64]int32{}
	for id := range int64(1000) {
		counts[id*7919-3000] = int32(1 + (id*id)%97)
	}
	for _, bins := range []int{1, 2, 3, 8} {
		ids, load := balance(counts, bins)
		total, biggest, seen := 0, int32(0), map[int64]bool{}
		for b, bin := range ids {
			sum := 0
			for k, id := range bin {
				if k > 0 && bin[k-1] >= id {
					t.Fatalf("bins=%d: bin %d not in ascending order", bins, b)
				}
				if seen[id] {
					t.Fatalf("bins=%d: id %d twice", bins, id)
				}
				seen[id] = true
				sum += int(counts[id])
				biggest = max(biggest, counts[id])
			}
			if sum != load[b] {
				t.Fatalf("bins=%d: bin %d holds %d, reports %d", bins, b, sum, load[b])
			}
			total += sum
		}
		if len(seen) != len(counts) {
			t.Fatalf("bins=%d: %d of %d ids placed", bins, len(seen), len(counts))
		}
		// Greedy LPT: no bin exceeds the mean by more than the largest item.
		for b, l := range load {
			if float64(l) > float64(total)/float64(bins)+float64(biggest) {
				t.Errorf("bins=%d: bin %d holds %d of %d", bins, b, l, total)
			}
		}
		again, _ := balance(counts, bins)
		if fmt.Sprint(again) != fmt.Sprint(ids) {
			t.Errorf("bins=%d: not deterministic", bins)
		}
	}
}

func TestBuildIndex(t *testing.T) {
	path := testhelper.WriteFile(t, "ratings.txt", "5 -1 1\n5 7 2\n-9 7 3\n12 100 4\n12 7 5\n12 -1 1\n")
	ix, err := BuildIndex(path, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Users by count: 12 (3), 5 (2), -9 (1) → 12 to worker 0, 5 and -9 to 1.
	if fmt.Sprint(ix.ShardUsers) != "[[12] [-9 5]]" || fmt.Sprint(ix.ShardRatings) != "[3 3]" {
		t.Errorf("users %v, ratings %v", ix.ShardUsers, ix.ShardRatings)
	}
	if p := ix.Users[5]; p != (Place{Shard: 1, Index: 1}) {
		t.Errorf("user 5 at %+v", p)
	}
	// Items by count: 7 (3), -1 (2), 100 (1) → 7 to block 0, -1 and 100 to 1.
	if fmt.Sprint(ix.ItemIDs) != "[7 -1 100]" || fmt.Sprint(ix.BlockStart) != "[0 1 3]" || fmt.Sprint(ix.ItemCount) != "[3 2 1]" {
		t.Errorf("items %v, blocks %v, counts %v", ix.ItemIDs, ix.BlockStart, ix.ItemCount)
	}
	if ix.Ratings != 6 || ix.Mean != 16.0/6 {
		t.Errorf("%d ratings, mean %v", ix.Ratings, ix.Mean)
	}
	other, err := BuildIndex(testhelper.WriteFile(t, "ratings.txt", "5 -1 1\n5 7 2\n-9 7 3\n12 100 4\n12 7 5\n12 -1 2\n"), 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	same, _ := BuildIndex(path, 2, 2)
	if other.Fingerprint == ix.Fingerprint || same.Fingerprint != ix.Fingerprint {
		t.Error("the fingerprint does not tell the files apart, or the same file apart")
	}
}
