package cli

import (
	"errors"
	"flag"
	"fmt"
	"testing"

	"github.com/strads-go/strads/schmp"
)

func TestFlagError(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	for _, name := range []string{"lambda-ratio", "true-nnz", "C", "block", "candidates", "schedule", "lambda-path"} {
		fs.String(name, "", "")
	}
	names := map[string]string{"Path": "lambda-path", "Schedule.Policy": "schedule"}
	tests := []struct {
		err  error
		want string
	}{
		{schmp.Fieldf("LambdaRatio", "must be >= 0"), "--lambda-ratio must be >= 0"},
		{schmp.Fieldf("TrueNNZ", "must be in [0,9]"), "--true-nnz must be in [0,9]"},
		{schmp.Fieldf("", "give one of {LambdaRatio} or {C}"), "give one of --lambda-ratio or --C"},
		{schmp.InField("Schedule", schmp.Fieldf("Candidates", "must be >= {Block}")), "--candidates must be >= --block"},
		{schmp.InField("Schedule", schmp.Fieldf("Policy", "must be cyclic")), "--schedule must be cyclic"},
		{schmp.Fieldf("Path", "must be 0 or >= 2"), "--lambda-path must be 0 or >= 2"},
		{schmp.Fieldf("InnerTol", "must be in [0, 1)"), "InnerTol must be in [0, 1)"},
		{fmt.Errorf("lasso: %w", schmp.Fieldf("LambdaRatio", "must be >= 0")), "lasso: --lambda-ratio must be >= 0"},
		{errors.New("plain"), "plain"},
	}
	for _, tt := range tests {
		err := FlagError(fs, names, tt.err)
		if !isUsage(err) || err.Error() != tt.want {
			t.Errorf("FlagError(%q) = %q (usage error: %v), want %q", tt.err, err, isUsage(err), tt.want)
		}
	}
}

func TestKebab(t *testing.T) {
	for in, want := range map[string]string{"Lambda": "lambda", "LambdaRatio": "lambda-ratio", "TrueNNZ": "true-nnz", "NNZCount": "nnz-count", "C": "c", "ReportEvery": "report-every", "Top10Items": "top10-items"} {
		if got := kebab(in); got != want {
			t.Errorf("kebab(%q) = %q, want %q", in, got, want)
		}
	}
}
