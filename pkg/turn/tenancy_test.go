package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/turnstream/turnstream/pkg/auth"
	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/turn"
)

// TestTenancyIAM: in iam mode, through the function URL adapter, a
// principal is its ARN and account together. Another account's caller,
// even with the owner's ARN string, and the trusted artifacts writer get
// 404 SESSION_NOT_FOUND from the stop route and from a submit on the
// session, and nothing changes; the owner's stop is accepted.
func TestTenancyIAM(t *testing.T) {
	const (
		acctA, acctB = "111111111111", "222222222222"
		ownerARN     = "arn:aws:iam::111111111111:user/owner"
		hostARN      = "arn:aws:iam::111111111111:role/host"
	)
	authn, err := auth.New(context.Background(), config.AuthConfig{Mode: config.AuthIAM, TrustedSubject: hostARN})
	if err != nil {
		t.Fatal(err)
	}
	owner := chat.Principal{Subject: ownerARN, Tenant: acctA}
	forEachStore(t, func(t *testing.T, newStore func(testing.TB) chat.Store) {
		m := &scriptModel{Chunks: []string{"x"}}
		e := newEnv(t, newStore(t), m, func(o *turn.Options) { o.Authenticator = authn })
		ctx := context.Background()
		if _, err := e.store.ClaimTurn(ctx, chat.ClaimRequest{
			SessionID: "s", TurnID: "t1", Principal: owner, InputHash: chat.HashInput("running"),
			Lineage: protocol.Lineage{Operation: protocol.OperationSubmit}, DefinitionID: "default", DefinitionRevision: 1,
			LeaseDuration: time.Minute,
		}); err != nil {
			t.Fatal(err)
		}
		invoke := func(t *testing.T, arn, account, path string, body []byte) result {
			t.Helper()
			ev := events.LambdaFunctionURLRequest{
				RawPath: path, Body: string(body), Headers: map[string]string{"content-type": "application/json"},
				RequestContext: events.LambdaFunctionURLRequestContext{
					AccountID: "999999999999", DomainName: "x.lambda-url.us-east-1.on.aws",
					HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: http.MethodPost, Path: path},
					Authorizer: &events.LambdaFunctionURLRequestContextAuthorizerDescription{
						IAM: &events.LambdaFunctionURLRequestContextAuthorizerIAMDescription{UserARN: arn, AccountID: account},
					},
				},
			}
			raw, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			resp, cancel := invokeURL(t, e.h, raw, time.Minute)
			defer cancel()
			return readResult(t, &http.Response{StatusCode: resp.StatusCode, Header: http.Header{}, Body: io.NopCloser(resp.Body)})
		}
		stopBody := []byte(`{"sessionId":"s","turnId":"t1"}`)
		for name, id := range map[string][2]string{
			"owner's ARN, another account": {ownerARN, acctB},
			"another account's caller":     {"arn:aws:iam::222222222222:user/owner", acctB},
			"trusted artifacts writer":     {hostARN, acctA},
		} {
			t.Run(name, func(t *testing.T) {
				invoke(t, id[0], id[1], "/stop", stopBody).want(t, http.StatusNotFound, protocol.CodeSessionNotFound)
				invoke(t, id[0], id[1], "/", submitBody(t, "s", "t2", "hello", nil)).want(t, http.StatusNotFound, protocol.CodeSessionNotFound)
				sess, err := e.store.GetSession(ctx, "s", owner)
				if err != nil || sess.ActiveTurn == nil || sess.ActiveTurn.TurnID != "t1" || sess.ActiveTurn.Stop {
					t.Fatalf("session %+v, %v; want t1 running without a stop flag", sess, err)
				}
			})
		}
		if m.Calls() != 0 {
			t.Errorf("the model ran %d times", m.Calls())
		}
		if _, err := e.store.GetSession(ctx, "s", chat.Principal{Subject: ownerARN, Tenant: acctB}); !errors.Is(err, chat.ErrSessionNotFound) {
			t.Errorf("GetSession by the owner's ARN in another account = %v; want ErrSessionNotFound", err)
		}
		r := invoke(t, ownerARN, acctA, "/stop", stopBody)
		if r.status != http.StatusAccepted {
			t.Fatalf("owner's stop: %d %s", r.status, r.raw)
		}
		if sess, err := e.store.GetSession(ctx, "s", owner); err != nil || sess.ActiveTurn == nil || !sess.ActiveTurn.Stop {
			t.Fatalf("after the owner's stop: %+v, %v; want the stop flag set", sess, err)
		}
	})
}
