package echo_test

import (
	"context"
	"fmt"
	"io"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
)

func ExampleModel_Stream() {
	m := echo.New(0, 4) // no delay, 4 runes per delta
	s, err := m.Stream(context.Background(), model.Request{
		Messages: []protocol.Message{{Role: protocol.RoleUser, Content: "héllo"}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = s.Close() }()
	for {
		ev, err := s.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		if ev.TextDelta != "" {
			fmt.Printf("delta %q\n", ev.TextDelta)
		}
		if ev.FinishReason != "" {
			fmt.Printf("finish %s, usage %+v\n", ev.FinishReason, *ev.Usage)
		}
	}
	// Output:
	// delta "Echo"
	// delta ": hé"
	// delta "llo"
	// finish stop, usage {PromptTokens:2 CompletionTokens:3 TotalTokens:5}
}
