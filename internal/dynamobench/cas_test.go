package dynamobench_test

import (
	"net/http"
	"testing"

	"github.com/turnstream/turnstream/internal/ddbfault"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// TestCompareAndSetOwnedLostAnswer: a compare-and-set whose first attempt
// applies and loses its answer is retried by the SDK, whose retry fails
// the condition; CompareAndSetOwned recognises its own effect where
// CompareAndSet reports the failed condition. A stale revision still
// fails.
func TestCompareAndSetOwnedLostAnswer(t *testing.T) {
	ft := ddbfault.New(http.DefaultTransport)
	opts := dynalite.Options(t)
	opts.Transport = ft
	client, err := dynamo.NewClient(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	table := dynalite.Table(t)

	ft.SetRule(ddbfault.Once(ddbfault.LoseAnswer, ddbfault.Op("UpdateItem")))
	if err := dynamobench.CompareAndSet(t.Context(), client, table, "SESSION#plain", 0); err == nil {
		t.Fatal("CompareAndSet after a lost answer: no error; the fault did not reach the retry")
	}
	ft.SetRule(ddbfault.Once(ddbfault.LoseAnswer, ddbfault.Op("UpdateItem")))
	if err := dynamobench.CompareAndSetOwned(t.Context(), client, table, "SESSION#owned", 0); err != nil {
		t.Fatalf("CompareAndSetOwned after a lost answer: %v", err)
	}
	if got := ft.Counts()[ddbfault.LoseAnswer]; got != 2 {
		t.Fatalf("lost answers injected: %d, want 2", got)
	}
	ft.SetRule(nil)
	if err := dynamobench.CompareAndSetOwned(t.Context(), client, table, "SESSION#owned", 5); err == nil {
		t.Fatal("a stale CompareAndSetOwned succeeded")
	}
}
