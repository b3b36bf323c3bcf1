package storetest

import (
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/chat"
)

// leaseCases prove RenewLease, ReleaseTurn, RequestStop and the lease as
// GetSession shows it (docs/design.md#the-turn-pipeline).
func leaseCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"RenewExtendsLease": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			e.clock.Advance(10 * time.Second)
			until := e.clock.Now().Add(leaseDuration)
			l, err := e.store.RenewLease(e.ctx, chat.RenewRequest{Claim: c, ExpiresAt: until, Sequence: 5})
			if err != nil {
				t.Fatalf("renew: %v", err)
			}
			if !l.ExpiresAt.Equal(until) || l.Token != c.Lease.Token || l.TurnID != "t1" || l.Stop {
				t.Errorf("renewed lease = %+v, want t1's token until %v, no stop", l, until)
			}
			e.clock.Advance(leaseDuration - time.Millisecond) // past the first expiry, before the new one
			_, err = e.store.ClaimTurn(e.ctx, claimRequest("s1", "t2"))
			wantErr(t, "claim while the renewed lease holds", err, chat.ErrSessionBusy)
			if s := e.session("s1"); s.Sequence != 5 || s.ActiveTurn == nil || !s.ActiveTurn.ExpiresAt.Equal(until) {
				t.Errorf("session after renew: sequence %d, active %+v; want sequence 5, expiry %v", s.Sequence, s.ActiveTurn, until)
			}
		},

		"RenewExpiredLeaseLost": func(t *testing.T, e *env) {
			// An expired lease protects nothing: its holder must stop, even
			// when no other turn has claimed the session yet.
			c := e.claim("s1", "t1")
			e.clock.Advance(leaseDuration)
			_, err := e.store.RenewLease(e.ctx, chat.RenewRequest{Claim: c, ExpiresAt: e.clock.Now().Add(leaseDuration)})
			wantErr(t, "renew at the exact expiry", err, chat.ErrLeaseLost)
		},

		"StaleTokenLeaseLost": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			bad := forged(c, c.Lease.Token+"x")
			_, err := e.store.RenewLease(e.ctx, chat.RenewRequest{Claim: bad, ExpiresAt: e.clock.Now().Add(leaseDuration)})
			wantErr(t, "renew with a wrong token", err, chat.ErrLeaseLost)
			_, err = e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{Claim: bad, Outcome: chat.OutcomeCompleted})
			wantErr(t, "release with a wrong token", err, chat.ErrLeaseLost)

			e.clock.Advance(leaseDuration)
			c2 := e.claim("s1", "t2") // takes over from t1
			_, err = e.store.RenewLease(e.ctx, chat.RenewRequest{Claim: c, ExpiresAt: e.clock.Now().Add(leaseDuration)})
			wantErr(t, "renew by the taken-over turn", err, chat.ErrLeaseLost)
			_, err = e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: 3})
			wantErr(t, "release by the taken-over turn", err, chat.ErrLeaseLost)
			_, err = e.store.Supersede(e.ctx, c, 1, 2)
			wantErr(t, "supersede by the taken-over turn", err, chat.ErrLeaseLost)
			if s := e.session("s1"); s.ActiveTurn == nil || s.ActiveTurn.Token != c2.Lease.Token {
				t.Errorf("active turn = %+v, want t2's lease untouched by the stale holder", s.ActiveTurn)
			}
			// Once the successor released, the crashed turn's late release
			// is still not its to make: its outcome stays indeterminate.
			e.release("s1", c2, chat.OutcomeCompleted, 3)
			_, err = e.store.ReleaseTurn(e.ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: 3})
			wantErr(t, "late release by the taken-over turn", err, chat.ErrLeaseLost)
			if s := e.session("s1"); len(s.TerminalTurns) != 2 || s.TerminalTurns[0].TurnID != "t1" || s.TerminalTurns[0].Outcome != chat.OutcomeIndeterminate {
				t.Errorf("terminal window = %+v, want [t1 indeterminate, t2 completed]", s.TerminalTurns)
			}
		},

		"ReleaseTwiceHarmless": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			e.release("s1", c, chat.OutcomeCompleted, 2)
			before := e.session("s1")
			e.release("s1", c, chat.OutcomeCompleted, 2)
			after := e.session("s1")
			if after.ActiveTurn != nil || len(after.TerminalTurns) != 1 || after.Sequence != 2 {
				t.Errorf("after a second release: active %+v, window %+v, sequence %d; want idle, one entry, sequence 2",
					after.ActiveTurn, after.TerminalTurns, after.Sequence)
			}
			if after.Revision != before.Revision {
				t.Errorf("a repeated release wrote the session (revision %d -> %d)", before.Revision, after.Revision)
			}
			// A retried release whose first attempt succeeded may arrive
			// after the next turn claimed: still a no-op.
			c2 := e.claim("s1", "t2")
			e.release("s1", c, chat.OutcomeIndeterminate, 0)
			if s := e.session("s1"); s.ActiveTurn == nil || s.ActiveTurn.Token != c2.Lease.Token || len(s.TerminalTurns) != 1 ||
				s.TerminalTurns[0].Outcome != chat.OutcomeCompleted || s.Sequence != 2 {
				t.Errorf("after a late repeated release: active %+v, window %+v, sequence %d; want t2's lease, t1 completed, sequence 2",
					s.ActiveTurn, s.TerminalTurns, s.Sequence)
			}
		},

		"ReleaseRecordsOutcomeAndClearsLease": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			if s := e.session("s1"); s.ActiveTurn == nil || s.ActiveTurn.TurnID != "t1" || s.ActiveTurn.Ordinal != 1 {
				t.Fatalf("active turn while running = %+v, want t1 at ordinal 1", s.ActiveTurn)
			}
			e.release("s1", c, chat.OutcomeIndeterminate, 9)
			s := e.session("s1")
			if s.ActiveTurn != nil {
				t.Errorf("active turn after release = %+v, want nil", s.ActiveTurn)
			}
			want := chat.TerminalEntry{TurnID: "t1", Outcome: chat.OutcomeIndeterminate, InputHash: chat.HashInput(inputOf("t1"))}
			if len(s.TerminalTurns) != 1 || s.TerminalTurns[0] != want {
				t.Errorf("terminal window = %+v, want [%+v]", s.TerminalTurns, want)
			}
			if s.Sequence != 9 {
				t.Errorf("sequence = %d, want 9", s.Sequence)
			}
		},

		"StopVisibleToHolder": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			if err := e.store.RequestStop(e.ctx, "s1", "t1", alice); err != nil {
				t.Fatalf("stop: %v", err)
			}
			if err := e.store.RequestStop(e.ctx, "s1", "t1", alice); err != nil {
				t.Fatalf("second stop: %v", err)
			}
			l, err := e.store.RenewLease(e.ctx, chat.RenewRequest{Claim: c, ExpiresAt: e.clock.Now().Add(leaseDuration), Sequence: 1})
			if err != nil {
				t.Fatalf("renew after stop: %v", err)
			}
			if !l.Stop {
				t.Error("renewed lease Stop = false after RequestStop, want true")
			}
			if s := e.session("s1"); s.ActiveTurn == nil || !s.ActiveTurn.Stop {
				t.Errorf("session active turn = %+v, want the stop flag set", s.ActiveTurn)
			}
			e.release("s1", c, chat.OutcomeCompleted, 1)
			if c2 := e.claim("s1", "t2"); c2.Lease.Stop {
				t.Error("the next turn's lease carries the previous stop flag")
			}
		},

		"StopErrors": func(t *testing.T, e *env) {
			c := e.claim("s1", "t1")
			cases := map[string]struct {
				sessionID, turnID string
				p                 chat.Principal
				want              error
			}{
				"missing session":        {"nope", "t1", alice, chat.ErrSessionNotFound},
				"other subject":          {"s1", "t1", mallory, chat.ErrSessionNotFound},
				"other tenant":           {"s1", "t1", aliceGlobex, chat.ErrSessionNotFound},
				"trusted host not owner": {"s1", "t1", host, chat.ErrSessionNotFound},
				"turn without the lease": {"s1", "t2", alice, chat.ErrTurnNotActive},
			}
			for name, tc := range cases {
				t.Run(name, func(t *testing.T) {
					wantErr(t, "stop", e.store.RequestStop(e.ctx, tc.sessionID, tc.turnID, tc.p), tc.want)
				})
			}
			if s := e.session("s1"); s.ActiveTurn == nil || s.ActiveTurn.Stop {
				t.Errorf("active turn after rejected stops = %+v, want no stop flag", s.ActiveTurn)
			}
			e.release("s1", c, chat.OutcomeCompleted, 0)
			wantErr(t, "stop a released turn", e.store.RequestStop(e.ctx, "s1", "t1", alice), chat.ErrTurnNotActive)
			e.claim("s1", "t2")
			e.clock.Advance(leaseDuration)
			wantErr(t, "stop a turn whose lease expired", e.store.RequestStop(e.ctx, "s1", "t2", alice), chat.ErrTurnNotActive)
		},
	}
}
