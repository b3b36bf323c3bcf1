package fate_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/turnstream/turnstream/internal/fate"
)

// The long form, as cmd/turnbench runs it: 500 schedules at each lease
// on three dev servers of a prebuilt binary (and the quota and pause
// ones), dynalite started from the module root, and the report as
// markdown. It fails when anything broke an invariant or a rule.
func ExampleRun() {
	failed := false
	for _, lease := range []string{fate.LeaseShort, fate.LeaseDefault} {
		timings, err := fate.TimingsFor(lease)
		if err != nil {
			log.Fatal(err)
		}
		concurrency := 8
		if lease == fate.LeaseDefault {
			concurrency = 16 // its schedules mostly wait
		}
		rep, err := fate.Run(context.Background(), fate.Config{
			Seed:        1,
			Schedules:   500,
			Concurrency: concurrency,
			Processes:   3,
			Timings:     timings,
			DevServer:   "bin/devserver", // go build -o bin/devserver ./cmd/devserver
			Root:        ".",
			Logf:        log.Printf,
		})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(rep.Markdown())
		failed = failed || len(rep.Violations) > 0 || len(rep.ProcessErrors) > 0
	}
	if failed {
		os.Exit(1)
	}
}
