package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/turnstream/turnstream/internal/devserver"
	"github.com/turnstream/turnstream/internal/dynalite"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// tableEnv is a dev server environment on a fresh dynalite table, deleted
// when t ends.
func tableEnv(t *testing.T) map[string]string {
	t.Helper()
	table := "devserver_" + randomHex(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dynamo.DeleteTable(ctx, dynalite.Client(t), table); err != nil {
			t.Errorf("delete table: %v", err)
		}
	})
	return map[string]string{"DYNAMODB_ENDPOINT": dynalite.Endpoint(t), "TABLE_NAME": table, "ECHO_DELAY": "0"}
}

// TestTableVanishes: the table disappears under a running dev server (the
// local DynamoDB restarted without its data); the next turn recreates it
// and completes, and the log says what happened.
func TestTableVanishes(t *testing.T) {
	env := tableEnv(t)
	srv := startServer(t, env)
	complete := func(turnID string) {
		t.Helper()
		lines := submit(t, srv.url+"/turn/", "alice", "s-"+turnID, turnID, "hi")
		if last := lines[len(lines)-1]; last.Kind != protocol.EventSnapshot || last.Snapshot.Status != protocol.StatusComplete {
			t.Fatalf("turn %s ended %s %+v, want a complete snapshot", turnID, last.Kind, last.Snapshot)
		}
	}
	complete("t1")
	if err := dynamo.DeleteTable(t.Context(), dynalite.Client(t), env["TABLE_NAME"]); err != nil {
		t.Fatal(err)
	}
	complete("t2")
	complete("t3")
	out := srv.stop(t)
	if n := strings.Count(out, "recreated it, empty"); n != 1 {
		t.Errorf("%d recreation warnings in the log, want 1:\n%s", n, out)
	}
}

// TestTwoServersStartAtOnce: dev servers starting at the same moment on
// one DynamoDB, whose table does not exist yet, all set up their store
// (one creates the table, the others find it present) and serve turns.
func TestTwoServersStartAtOnce(t *testing.T) {
	env := tableEnv(t)
	cfg, err := config.FromLookup(lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	descs := make([]string, 3)
	errs := make([]error, 3)
	for i := range descs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, descs[i], errs[i] = devserver.NewStore(t.Context(), cfg, true, discardLogger(), nil)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("store set-up: %v", err)
	}
	created := 0
	for _, d := range descs {
		if strings.HasSuffix(d, "(created)") {
			created++
		}
	}
	if created != 1 {
		t.Errorf("store descriptions %q: %d created the table, want 1", descs, created)
	}
	srv := startServer(t, env)
	lines := submit(t, srv.url+"/turn/", "alice", "s1", "t1", "hi")
	if last := lines[len(lines)-1]; last.Kind != protocol.EventSnapshot || last.Snapshot.Status != protocol.StatusComplete {
		t.Errorf("turn ended %s, want a complete snapshot", last.Kind)
	}
}
