package sessionapi_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/sessionapi"
	"github.com/turnstream/turnstream/pkg/store/memory"
)

// failingStore is a chat.Store whose read and artifact calls fail with err.
type failingStore struct {
	chat.Store
	err error
}

func (s failingStore) GetSession(context.Context, string, chat.Principal) (*chat.Session, error) {
	return nil, s.err
}

func (s failingStore) ListTurns(context.Context, chat.ListRequest) (*chat.Page, error) {
	return nil, s.err
}

func (s failingStore) PutArtifacts(context.Context, string, string, chat.Principal, []chat.ArtifactReference) ([]chat.ArtifactReference, error) {
	return nil, s.err
}

func (s failingStore) GetArtifacts(context.Context, string, string, chat.Principal) ([]chat.ArtifactReference, error) {
	return nil, s.err
}

// failingAuth refuses every request with err.
type failingAuth struct{ err error }

func (a failingAuth) Authenticate(*http.Request) (chat.Principal, error) {
	return chat.Principal{}, a.err
}

// TestErrorMapping checks the error table for failures the memory store
// never produces: internal errors, deadlines, cancellation, conflicts and
// authenticator failures. Internal error text reaches the log, never the
// client.
func TestErrorMapping(t *testing.T) {
	t.Parallel()
	const secret = "dynamodb: table turnstream-prod in 123456789012 throttled"
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now())
	defer cancelExpired()
	gone, cancelGone := context.WithCancel(context.Background())
	cancelGone()
	cases := map[string]struct {
		ctx      context.Context // the request's; nil: live
		storeErr error
		authErr  error
		status   int
		code     string
	}{
		"internal":         {storeErr: errors.New(secret), status: 500, code: protocol.CodeServerInternal},
		"wrapped deadline": {ctx: expired, storeErr: fmt.Errorf("query: %w", context.DeadlineExceeded), status: 408, code: protocol.CodeServerTimeout},
		"cancelled":        {ctx: gone, storeErr: fmt.Errorf("query: %w", context.Canceled), status: 499, code: protocol.CodeRequestCancelled},
		// A store call whose attempts all timed out while the request had
		// time left: not the request's deadline.
		"attempt timeouts":  {storeErr: fmt.Errorf("query %s: %w", secret, context.DeadlineExceeded), status: 500, code: protocol.CodeServerInternal},
		"conflict":          {storeErr: fmt.Errorf("put: %w", chat.ErrConflict), status: 409, code: protocol.CodeSessionConflict},
		"wrapped not found": {storeErr: fmt.Errorf("get %s: %w", secret, chat.ErrSessionNotFound), status: 404, code: protocol.CodeSessionNotFound},
		"auth internal":     {authErr: errors.New(secret), status: 500, code: protocol.CodeServerInternal},
		"auth forbidden":    {authErr: fmt.Errorf("no tenant: %w", auth.ErrForbidden), status: 403, code: protocol.CodeRequestForbidden},
	}
	routes := map[string]struct {
		artifacts bool
		req       request
	}{
		"session":       {false, get("/sessions/s1", alice)},
		"turns":         {false, get("/sessions/s1/turns", alice)},
		"messages":      {false, get("/sessions/s1/messages", alice)},
		"artifacts GET": {true, get("/sessions/s1/turns/t1/artifacts", alice)},
		"artifacts PUT": {true, put("/sessions/s1/turns/t1/artifacts", host, `{"artifacts":[]}`)},
	}
	for name, tc := range cases {
		for route, rt := range routes {
			t.Run(name+"/"+route, func(t *testing.T) {
				f := newFixture(t, storeFactories["memory"])
				if tc.ctx != nil {
					f.ctx = tc.ctx
				}
				opts := sessionapi.Options{
					Store:  failingStore{Store: f.store, err: tc.storeErr},
					Logger: slog.New(slog.NewJSONHandler(f.logs, nil)),
				}
				opts.Authenticator = devAuthenticator(t)
				if tc.authErr != nil {
					opts.Authenticator = failingAuth{tc.authErr}
				}
				h, artifacts := newHandlers(t, opts)
				if rt.artifacts {
					h = artifacts
				}
				resp := f.do(h, rt.req)
				wantError(t, route, resp, tc.status, tc.code)
				if tc.status == 500 {
					if !strings.Contains(f.logs.String(), `"level":"ERROR"`) || !strings.Contains(f.logs.String(), secret) {
						t.Errorf("internal error not logged: %s", f.logs)
					}
				} else if strings.Contains(f.logs.String(), secret) {
					t.Errorf("non-internal error text logged: %s", f.logs)
				}
			})
		}
	}
}

// TestConstructorErrors: bad options are an error from both constructors,
// never a panic, naming the option.
func TestConstructorErrors(t *testing.T) {
	t.Parallel()
	store := memory.New(memory.Options{})
	authn := devAuthenticator(t)
	cases := map[string]struct {
		opts sessionapi.Options
		want string
	}{
		"no store":         {sessionapi.Options{Authenticator: authn}, "Store"},
		"no authenticator": {sessionapi.Options{Store: store}, "Authenticator"},
		"negative cap":     {sessionapi.Options{Store: store, Authenticator: authn, MaxBodyBytes: -1}, "MaxBodyBytes"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for ctor, build := range map[string]func(sessionapi.Options) (http.Handler, error){
				"history": sessionapi.NewHistoryHandler, "artifacts": sessionapi.NewArtifactsHandler,
			} {
				h, err := build(tc.opts)
				if err == nil || h != nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: %v, %v; want an error naming %s", ctor, h, err, tc.want)
				}
			}
		})
	}
}
