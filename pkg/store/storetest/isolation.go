package storetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/chat"
)

// isolationCases prove owner isolation: a session is visible only to its owner
// (Subject and Tenant), and a foreign principal gets exactly the error a
// missing session gives, never a hint that it exists
// (docs/design.md#the-turn-pipeline,
// docs/design.md#authentication-and-tenancy).
func isolationCases() map[string]func(*testing.T, *env) {
	return map[string]func(*testing.T, *env){
		"ForeignPrincipalSeesNotFound": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t1")
			live := e.claim("s1", "t2")
			refs := []chat.ArtifactReference{{EntryPath: "a.md", ArtifactType: chat.ArtifactDocument}}
			if _, err := e.store.PutArtifacts(e.ctx, "s1", "t1", alice, refs); err != nil {
				t.Fatalf("PutArtifacts: %v", err)
			}
			before := e.session("s1")

			ops := map[string]func(sessionID string, p chat.Principal) error{
				"GetSession": func(id string, p chat.Principal) error {
					_, err := e.store.GetSession(e.ctx, id, p)
					return err
				},
				"FindTurn": func(id string, p chat.Principal) error {
					_, err := e.store.FindTurn(e.ctx, id, "t1", p)
					return err
				},
				"GetArtifacts": func(id string, p chat.Principal) error {
					_, err := e.store.GetArtifacts(e.ctx, id, "t1", p)
					return err
				},
				"PutArtifacts": func(id string, p chat.Principal) error {
					_, err := e.store.PutArtifacts(e.ctx, id, "t1", p, []chat.ArtifactReference{{EntryPath: "x.md", ArtifactType: chat.ArtifactDocument}})
					return err
				},
				"ListTurns": func(id string, p chat.Principal) error {
					_, err := e.store.ListTurns(e.ctx, chat.ListRequest{SessionID: id, Principal: p})
					return err
				},
				"RequestStop": func(id string, p chat.Principal) error {
					return e.store.RequestStop(e.ctx, id, "t2", p)
				},
			}
			principals := map[string]chat.Principal{
				"other subject": mallory,
				"other tenant":  aliceGlobex,
				// The trusted host may write artifacts of any session
				// (Artifacts/TrustedHostMayWrite) but reads and stops
				// nothing it does not own.
				"trusted host": host,
			}
			for pname, p := range principals {
				for oname, op := range ops {
					if p.Trusted && oname == "PutArtifacts" {
						continue
					}
					t.Run(pname+"/"+oname, func(t *testing.T) {
						foreign := op("s1", p)
						wantErr(t, "on alice's session", foreign, chat.ErrSessionNotFound)
						missing := op("missing", p)
						wantErr(t, "on a missing session", missing, chat.ErrSessionNotFound)
						if a, b := strings.ReplaceAll(foreign.Error(), "s1", "ID"), strings.ReplaceAll(missing.Error(), "missing", "ID"); a != b {
							t.Errorf("errors differ: foreign %q, missing %q", a, b)
						}
					})
				}
				t.Run(pname+"/ClaimTurn", func(t *testing.T) {
					req := claimRequest("s1", "t9")
					req.Principal = p
					_, err := e.store.ClaimTurn(e.ctx, req)
					wantErr(t, "claim of alice's session", err, chat.ErrSessionNotFound)
				})
			}

			after := e.session("s1")
			if after.Revision != before.Revision || after.ActiveTurn == nil || after.ActiveTurn.Token != live.Lease.Token || after.ActiveTurn.Stop {
				t.Errorf("alice's session changed under foreign calls: revision %d -> %d, active %+v",
					before.Revision, after.Revision, after.ActiveTurn)
			}
			arts, err := e.store.GetArtifacts(e.ctx, "s1", "t1", alice)
			if err != nil || len(arts) != 1 || arts[0] != refs[0] {
				t.Errorf("alice's artifacts after foreign writes = %+v, %v; want %+v", arts, err, refs)
			}
		},

		"SessionsOfDifferentOwnersIndependent": func(t *testing.T, e *env) {
			e.completeTurn("s1", "t1")
			req := claimRequest("s2", "t1") // same turn id, another owner's session
			req.Principal = mallory
			c, err := e.store.ClaimTurn(e.ctx, req)
			if err != nil {
				t.Fatalf("mallory's claim of a new session: %v", err)
			}
			if !c.Created || c.Session.Owner.Subject != mallory.Subject || c.Session.Owner.Tenant != mallory.Tenant {
				t.Errorf("mallory's session = %+v, created %v; want created, owned by mallory", c.Session, c.Created)
			}
			if c.Session.Owner.Trusted {
				t.Error("stored owner is Trusted; the flag is never stored")
			}
			_, err = e.store.GetSession(e.ctx, "s2", alice)
			wantErr(t, "alice reading mallory's session", err, chat.ErrSessionNotFound)
			if s, err := e.store.GetSession(e.ctx, "s2", mallory); err != nil || s.ActiveTurn == nil {
				t.Errorf("mallory reading her session: %+v, %v", s, err)
			}
		},

		"TrustedFlagNotPartOfOwnership": func(t *testing.T, e *env) {
			req := claimRequest("s1", "t1")
			req.Principal = chat.Principal{Subject: alice.Subject, Tenant: alice.Tenant, Trusted: true}
			c := e.claimWith(req)
			if c.Session.Owner.Trusted {
				t.Error("stored owner is Trusted; the flag is never stored")
			}
			s, err := e.store.GetSession(e.ctx, "s1", alice) // same subject and tenant, untrusted
			if err != nil || s.ID != "s1" {
				t.Errorf("GetSession by the same subject and tenant: %+v, %v", s, err)
			}
			if errors.Is(err, chat.ErrSessionNotFound) {
				t.Error("ownership depends on the Trusted flag")
			}
		},
	}
}
