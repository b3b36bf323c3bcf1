package tool

import (
	"context"

	"github.com/turnstream/turnstream/pkg/chat"
)

// CallInfo names what a tool call belongs to: the session and turn that
// run it, and the principal the turn runs for. The turn pipeline puts it
// into the context of every Tool.Call (WithCallInfo); a tool that needs
// the session (WorkspaceNoteDelete asks whether a note exists in it)
// reads it with CallInfoFrom. A tool run outside a turn has none.
type CallInfo struct {
	SessionID string
	TurnID    string
	Principal chat.Principal
}

// callInfoKey is the context key of a CallInfo.
type callInfoKey struct{}

// WithCallInfo returns ctx carrying info, for the tools run under it.
func WithCallInfo(ctx context.Context, info CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, info)
}

// CallInfoFrom returns the CallInfo ctx carries, ok false when none.
func CallInfoFrom(ctx context.Context) (info CallInfo, ok bool) {
	info, ok = ctx.Value(callInfoKey{}).(CallInfo)
	return info, ok
}
