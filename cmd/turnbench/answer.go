package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// longAnswer is the echo model made to answer a long text to a short
// prompt, as a real model does: when the last user message is ask(n),
// echo is asked to echo inputOf(n - len(echo.Prefix)) instead, so the
// answer is n bytes while the stored user message stays a few bytes
// (with plain echo a 64 KB answer needs a 64 KB user message, which every
// snapshot, checkpoint and save would carry too). Any other message is
// echoed as it is.
type longAnswer struct{ echo model.Model }

// ask is the prompt longAnswer answers with n bytes.
func ask(n int) string { return fmt.Sprintf("answer with %d bytes", n) }

// Stream implements model.Model.
func (m longAnswer) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role != protocol.RoleUser {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(req.Messages[i].Content, "answer with %d bytes", &n); err == nil && n > len(echo.Prefix) {
			req.Messages = slices.Clone(req.Messages)
			req.Messages[i].Content = inputOf(n - len(echo.Prefix))
		}
		break
	}
	return m.echo.Stream(ctx, req)
}
