package lsq_test

import (
	"context"
	"fmt"
	"math"

	"github.com/strads-go/strads/apps/lsq"
	"github.com/strads-go/strads/natsserver"
	"github.com/strads-go/strads/ps"
	"github.com/strads-go/strads/ps/node"
	"github.com/strads-go/strads/wire"
)

// Example fits β on two workers and two servers under SSP(2), every node
// on its own connection to an embedded nats-server. The true β is
// 0, 1, 2, 0, 1, 2.
func Example() {
	srv, err := natsserver.Start(natsserver.Options{Port: -1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Stop()
	dial := func(name string) (*wire.Conn, error) {
		nc, err := srv.ConnectInProcess(name)
		if err != nil {
			return nil, err
		}
		return wire.NewConn(nc, "lsq-example")
	}
	c := lsq.Config{Rows: 2000, Cols: 6, Seed: 3, Workers: 2, Servers: 2,
		Model: ps.SSP, Staleness: 2, Passes: 30, ClocksPerPass: 10, Step: 0.1, Batch: 10}
	res, err := lsq.Fit(context.Background(), dial, c, node.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for j, b := range res.Beta {
		fmt.Printf("β_%d = %.1f\n", j, math.Round(b*10)/10+0) // +0: no -0
	}
	fmt.Printf("mean squared error at the last pass: %.3f\n", res.MSE[len(res.MSE)-1])
	// Output:
	// β_0 = 0.0
	// β_1 = 1.0
	// β_2 = 2.0
	// β_3 = 0.0
	// β_4 = 1.0
	// β_5 = 2.0
	// mean squared error at the last pass: 0.010
}
