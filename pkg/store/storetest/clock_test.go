package storetest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/store/storetest"
)

func TestClock(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	c := storetest.NewClock(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now() = %v, want %v", got, start)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				c.Advance(time.Millisecond)
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	if got, want := c.Now(), start.Add(800*time.Millisecond); !got.Equal(want) {
		t.Errorf("after 800 concurrent 1 ms advances Now() = %v, want %v", got, want)
	}
	c.Advance(-time.Second)
	if got, want := c.Now(), start.Add(-200*time.Millisecond); !got.Equal(want) {
		t.Errorf("after a negative advance Now() = %v, want %v", got, want)
	}
}
