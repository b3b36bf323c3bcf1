package turn_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/config"
	"github.com/turnstream/turnstream/pkg/definition"
	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/memory"
	"github.com/turnstream/turnstream/pkg/tool"
	"github.com/turnstream/turnstream/pkg/turn"
)

// anyone is an Authenticator that admits every caller as one principal.
type anyone struct{}

func (anyone) Authenticate(*http.Request) (chat.Principal, error) {
	return chat.Principal{Subject: "example", Tenant: "example"}, nil
}

// ExampleNewHandler submits one turn to a handler over the in-memory store
// and the echo model and prints the stream's last line.
func ExampleNewHandler() {
	h, err := turn.NewHandler(turn.Options{
		Config: turn.Config{
			Store:      memory.New(memory.Options{}),
			Model:      echo.New(0, 4),
			Definition: turn.Definition{ID: "default", Revision: 1},
		},
		Authenticator: anyone{},
	})
	if err != nil {
		panic(err)
	}
	body := `{"protocol":"agentskit.chat.turn","version":1,"eventId":"e1","sessionId":"s1","turnId":"t1",` +
		`"sequence":0,"emittedAt":"2026-07-11T03:00:00.000Z","event":"client.turn.submit","payload":{"input":"hello"}}`
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)

	var last *protocol.Event
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		last, _ = protocol.DecodeTurnEvent(sc.Bytes())
	}
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	fmt.Println(last.Sequence > 1, last.Snapshot.Status)
	for _, m := range last.Snapshot.Messages {
		fmt.Printf("%s %s %q\n", m.ID, m.Role, m.Content)
	}
	// Output:
	// 200 application/x-ndjson; charset=utf-8
	// true complete
	// t1.u user "hello"
	// t1.a assistant "Echo: hello"
}

// ExampleNewHandler_tools wires definitions, providers and tools as the
// turn function does: the echo model's /note command calls the demo tool,
// and the stored assistant message carries the call and its result.
func ExampleNewHandler_tools() {
	reg := tool.NewRegistry(nil)
	if err := reg.Register(tool.WorkspaceNote()); err != nil {
		panic(err)
	}
	defs, err := definition.Load(config.ModelConfig{
		Provider: config.ProviderEcho, DefinitionID: "default", DefinitionRevision: 1,
		Tools: []string{tool.WorkspaceNoteName}, MaxSteps: 4,
	}.Definitions(), os.ReadFile, reg.Has)
	if err != nil {
		panic(err)
	}
	store := memory.New(memory.Options{})
	h, err := turn.NewHandler(turn.Options{
		Config: turn.Config{
			Store:       store,
			Definitions: defs,
			Models:      map[string]model.Model{config.ProviderEcho: echo.New(0, 0)},
			Tools:       reg,
		},
		Authenticator: anyone{},
	})
	if err != nil {
		panic(err)
	}
	body := `{"protocol":"agentskit.chat.turn","version":1,"eventId":"e1","sessionId":"s1","turnId":"t1",` +
		`"sequence":0,"emittedAt":"2026-07-11T03:00:00.000Z","event":"client.turn.submit","payload":{"input":"/note Plan: Pack light."}}`
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	h.ServeHTTP(httptest.NewRecorder(), req)

	t, err := store.FindTurn(context.Background(), "s1", "t1", chat.Principal{Subject: "example", Tenant: "example"})
	if err != nil {
		panic(err)
	}
	a := t.Messages[1]
	fmt.Printf("%s %q\n", a.Status, a.Content)
	for _, c := range a.ToolCalls {
		fmt.Printf("%s %s %s %q\n", c.Name, c.Status, c.Args, *c.Result)
	}
	fmt.Println(t.Artifacts)
	// Output:
	// complete "Echo: /note Plan: Pack light."
	// workspace_note complete {"title":"Plan","body":"Pack light."} "Saved note \"notes/plan.md\" (11 characters)."
	// [{notes/plan.md document}]
}
