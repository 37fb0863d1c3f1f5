// Package columnar schedules models with one variable per column (feature)
// of a LIBSVM data set, Lasso and logistic regression, on top of package
// scheduler (DESIGN "Scheduling engines"):
//
//   - Scheduler, for the row layout: scheduler parts each own a contiguous
//     range of the columns, read those columns, and check dependencies with
//     their correlations;
//   - BlockScheduler, for the column layout (DESIGN "The column layout"), whose workers
//     each own a range of the columns (OwnedRange) and choose the columns
//     they update themselves: its plans are empty blocks. With it come the
//     helpers that the layout's workers and coordinator share: a worker's
//     working set (Screen), the columns the workers share (Columns, Held,
//     CheckShared) and the checks of what they send (BlockPlan,
//     OwnedShard, CheckChange).
//
// Unlike package scheduler, it reads data files.
package columnar
