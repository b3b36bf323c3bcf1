package fate_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/turnstream/turnstream/internal/fate"
)

// The long form, as cmd/turnbench runs it: 500 schedules on three dev
// servers of a prebuilt binary, dynalite started from the module root,
// and the report as markdown. It fails when anything broke an invariant.
func ExampleRun() {
	rep, err := fate.Run(context.Background(), fate.Config{
		Seed:        1,
		Schedules:   500,
		Concurrency: 8,
		Processes:   3,
		DevServer:   "bin/devserver", // go build -o bin/devserver ./cmd/devserver
		Root:        ".",
		Logf:        log.Printf,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(rep.Markdown())
	if len(rep.Violations) > 0 || len(rep.ProcessErrors) > 0 {
		os.Exit(1)
	}
}
