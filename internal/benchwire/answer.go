package benchwire

import (
	"context"
	"fmt"
	"slices"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/model/echo"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// LongAnswer is the echo model made to answer a long text to a short
// prompt, as a real model does: when the last user message is Ask(n),
// echo is asked to echo InputOf(n - len(echo.Prefix)) instead, so the
// answer is n bytes while the stored user message stays a few bytes
// (with plain echo a 64 KB answer needs a 64 KB user message, which every
// snapshot, checkpoint and save would carry too). Any other message is
// echoed as it is.
type LongAnswer struct{ Echo model.Model }

// Ask is the prompt LongAnswer answers with n bytes.
func Ask(n int) string { return fmt.Sprintf("answer with %d bytes", n) }

// Stream implements model.Model.
func (m LongAnswer) Stream(ctx context.Context, req model.Request) (model.Stream, error) {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role != protocol.RoleUser {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(req.Messages[i].Content, "answer with %d bytes", &n); err == nil && n > len(echo.Prefix) {
			req.Messages = slices.Clone(req.Messages)
			req.Messages[i].Content = InputOf(n - len(echo.Prefix))
		}
		break
	}
	return m.Echo.Stream(ctx, req)
}
