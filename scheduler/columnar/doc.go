// Package columnar schedules models with one variable per column (feature)
// of a LIBSVM data set, Lasso and logistic regression, on top of the dynamic
// engine of package scheduler (DESIGN §4):
//
//   - Scheduler, for the row layout: scheduler parts each own a contiguous
//     range of the columns, read those columns, and check dependencies with
//     their correlations;
//   - BlockScheduler, for the column layout (DESIGN §5): one engine per
//     worker over the columns that worker owns (OwnedRange), planning a
//     block per worker sized by its work, with the helpers that the
//     layout's workers and coordinator share (BlockPlan, OwnedShard,
//     WorkingSet, CheckChange).
//
// Unlike package scheduler, it reads data files.
package columnar
