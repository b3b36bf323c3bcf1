package dynamo_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/store/storetest"
)

// TestContract runs the chat.Store contract suite against the DynamoDB
// store on dynalite (or $DYNAMODB_ENDPOINT), one fresh table per case.
// Cases run in parallel (each has its own table and clock): the time of
// a case is mostly waiting for the server.
//
// Every item call the suite makes is checked for its purpose label: in
// its context (dynamo.PurposeOf) and, the same, in the PurposeHeader on
// the wire.
func TestContract(t *testing.T) {
	labels := &labelCheck{}
	t.Cleanup(func() { labels.check(t) })
	storetest.Run(t, func(t *testing.T, clock *storetest.Clock, cursorKey []byte) chat.Store {
		t.Parallel()
		opts := dynalite.Options(t)
		opts.Transport = labels
		client, err := dynamo.NewClient(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		table := dynalite.Table(t)
		return dynamo.New(client, dynamo.Options{Table: table, Now: clock.Now, CursorKey: cursorKey, ResolveShare: dynalite.ResolveShare,
			Ledger: chat.LedgerOptions{Enabled: true}})
	})
}

// labelCheck is a client's transport that reads each item call's purpose
// in its request's header and in its context (the SDK passes the call's
// context down to the transport), and fails a test on an item call
// without one or with a header that differs from the context's.
type labelCheck struct {
	mu        sync.Mutex
	seen      int
	unlabeled []string
}

// itemOps are the operations a store makes on items (the table's creation
// is no store call).
var itemOps = map[string]bool{"GetItem": true, "PutItem": true, "UpdateItem": true, "DeleteItem": true, "Query": true, "BatchGetItem": true}

func (l *labelCheck) RoundTrip(r *http.Request) (*http.Response, error) {
	op := r.Header.Get("X-Amz-Target")
	op = op[strings.LastIndexByte(op, '.')+1:]
	if itemOps[op] {
		l.mu.Lock()
		got := r.Header.Get(dynamo.PurposeHeader)
		l.seen++
		if got == "" || dynamo.Purpose(got) != dynamo.PurposeOf(r.Context()) {
			l.unlabeled = append(l.unlabeled, op+" header "+got+" context "+string(dynamo.PurposeOf(r.Context())))
		}
		l.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (l *labelCheck) check(t *testing.T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == 0 {
		t.Error("no item call was seen: the label check does not run")
	}
	for _, u := range l.unlabeled {
		t.Errorf("a call without its purpose label: %s", u)
	}
}
