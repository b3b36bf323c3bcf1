package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// TestUsageAnswers: Usage and TenantUsage send their query and refuse an
// answer that is not a report; a 429 says how long to wait.
func TestUsageAnswers(t *testing.T) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries = append(queries, r.URL.Path+"?"+r.URL.RawQuery)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Query().Get("period") {
		case "month":
			_, _ = w.Write([]byte(`{"period":"month","start":"s","resetsAt":"r","principal":{"subject":"a","tenant":"t"},"usage":{"turns":2},"limits":[]}`))
		case "day":
			_, _ = w.Write([]byte(`{"unexpected":true}`))
		default:
			w.Header().Set("Retry-After", "42")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write(protocol.EncodeErrorBody(protocol.NewDiagnostic(protocol.CodeQuotaExceeded)))
		}
	}))
	defer srv.Close()
	c, err := client.New(client.Options{TurnURL: srv.URL + "/turn/", HistoryURL: srv.URL + "/history/"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r, err := c.Usage(ctx, client.UsageOptions{Period: api.PeriodMonth}); err != nil || r.Usage.Turns != 2 {
		t.Errorf("Usage(month) = %+v, %v", r, err)
	}
	var e *client.Error
	if _, err := c.Usage(ctx, client.UsageOptions{Period: api.PeriodDay}); !errors.As(err, &e) || e.Kind != client.KindInvalidResponse {
		t.Errorf("a body that is no report: %v", err)
	}
	_, err = c.TenantUsage(ctx, client.UsageOptions{Limit: 5, Cursor: "c1"})
	if !errors.As(err, &e) || e.Kind != client.KindHTTP || e.Diagnostic.Code != protocol.CodeQuotaExceeded {
		t.Fatalf("429: %v", err)
	}
	if wait, ok := e.RetryAfter(); !ok || wait != 42*time.Second {
		t.Errorf("RetryAfter = %v, %v; want 42s", wait, ok)
	}
	want := []string{"/history/usage?period=month", "/history/usage?period=day", "/history/usage?cursor=c1&limit=5&scope=tenant"}
	if len(queries) != 3 || queries[0] != want[0] || queries[1] != want[1] || queries[2] != want[2] {
		t.Errorf("requests %q, want %q", queries, want)
	}
}
