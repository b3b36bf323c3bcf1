package turn_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// TestStrictBodies: every route that takes a JSON body reads it with the
// one strict reader, so each hazard where Go and JavaScript could read one
// body two ways is a 400 on each of them: a duplicated key, a key equal
// to a field's name but for case, a lone surrogate escape, null for an
// optional member, and a JSON string holding the body. Nothing is run or
// stopped: every body is refused before the store is asked.
func TestStrictBodies(t *testing.T) {
	e := newEnv(t, newStoreMemory(), &scriptModel{}, nil)
	decision := string(decisionBody(t, "s", "d1", "ok", "cf-1", protocol.DecisionApprove))
	const aguiOK = `{"threadId":"s","runId":"r1","messages":[{"id":"m1","role":"user","content":"hi"}]}`
	const aguiDecision = `{"threadId":"s","runId":"r1","messages":[],"resume":[{"interruptId":"cf-1","status":"resolved","payload":{"approved":true}}]}`
	for name, tc := range map[string]struct {
		path, body string
		code       string
	}{
		"decision, duplicated token":   {"/", strings.Replace(decision, `"token":`, `"token":"cf-2","token":`, 1), protocol.CodeRequestInvalidEvent},
		"decision, Token beside token": {"/", strings.Replace(decision, `"token":`, `"Token":"cf-2","token":`, 1), protocol.CodeRequestInvalidEvent},
		"decision, Token for token":    {"/", strings.Replace(decision, `"token":`, `"Token":`, 1), protocol.CodeRequestInvalidEvent},
		"decision, lone surrogate":     {"/", strings.Replace(decision, `"token":"cf-1"`, `"token":"cf-1\ud800"`, 1), protocol.CodeRequestInvalidEvent},
		"decision, null confirmation":  {"/", strings.Replace(decision, `"confirmation":{`, `"confirmation":null,"x":{`, 1), protocol.CodeRequestInvalidEvent},
		"decision, double-encoded":     {"/", strconv.Quote(decision), protocol.CodeRequestInvalidEvent},

		"stop, duplicated key":        {"/stop", `{"sessionId":"s","turnId":"t1","turnId":"t2"}`, protocol.CodeRequestInvalidBody},
		"stop, TurnId beside turnId":  {"/stop", `{"sessionId":"s","turnId":"t1","TurnId":"t2"}`, protocol.CodeRequestInvalidBody},
		"stop, lone surrogate":        {"/stop", `{"sessionId":"s","turnId":"t1","reason":"\udc00"}`, protocol.CodeRequestInvalidBody},
		"stop, null id":               {"/stop", `{"sessionId":null,"turnId":"t1"}`, protocol.CodeRequestInvalidBody},
		"stop, double-encoded":        {"/stop", strconv.Quote(`{"sessionId":"s","turnId":"t1"}`), protocol.CodeRequestInvalidBody},
		"stop, integer id":            {"/stop", `{"sessionId":"s","turnId":1}`, protocol.CodeRequestInvalidBody},
		"agui, duplicated key":        {"/agui", strings.Replace(aguiOK, `"role":`, `"role":"system","role":`, 1), protocol.CodeRequestInvalidBody},
		"agui, RunId beside runId":    {"/agui", strings.Replace(aguiOK, `"runId":`, `"RunId":"r2","runId":`, 1), protocol.CodeRequestInvalidBody},
		"agui, Tools (ignored field)": {"/agui", strings.Replace(aguiOK, `{"threadId"`, `{"Tools":[],"threadId"`, 1), protocol.CodeRequestInvalidBody},
		"agui, lone surrogate":        {"/agui", strings.Replace(aguiOK, `"content":"hi"`, `"content":"hi\ud83d"`, 1), protocol.CodeRequestInvalidBody},
		"agui, null protocolVersion":  {"/agui", strings.Replace(aguiOK, `{"threadId"`, `{"protocolVersion":null,"threadId"`, 1), protocol.CodeRequestInvalidBody},
		"agui, null resume":           {"/agui", strings.Replace(aguiOK, `{"threadId"`, `{"resume":null,"threadId"`, 1), protocol.CodeRequestInvalidBody},
		"agui, Approved for approved": {"/agui", strings.Replace(aguiDecision, `"approved"`, `"Approved"`, 1), protocol.CodeRequestInvalidBody},
		"agui, approved beside":       {"/agui", strings.Replace(aguiDecision, `"approved":true`, `"approved":true,"APPROVED":false`, 1), protocol.CodeRequestInvalidBody},
		"agui, double-encoded":        {"/agui", strconv.Quote(aguiOK), protocol.CodeRequestInvalidBody},
	} {
		t.Run(name, func(t *testing.T) {
			readResult(t, e.post(t, context.Background(), tc.path, []byte(tc.body), nil)).want(t, http.StatusBadRequest, tc.code)
		})
	}
	// The bodies the cases alter are read: they reach the store.
	readResult(t, e.post(t, context.Background(), "/", []byte(decision), nil)).want(t, http.StatusNotFound, protocol.CodeConfirmationNotFound)
	readResult(t, e.post(t, context.Background(), "/stop", []byte(`{"sessionId":"s","turnId":"t1","reason":"x"}`), nil)).
		want(t, http.StatusNotFound, protocol.CodeSessionNotFound)
	resp := e.post(t, context.Background(), "/agui", []byte(aguiOK), nil)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("agui: %d", resp.StatusCode)
	}
}
