package model_test

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/turnstream/turnstream/pkg/model"
	"github.com/turnstream/turnstream/pkg/protocol"
)

func TestError(t *testing.T) {
	base := errors.New("connection reset")
	tests := map[string]struct {
		err           error
		wantText      string
		wantRetryable bool
		wantIsBase    bool
	}{
		"with cause":        {&model.Error{Code: "ThrottlingException", Retryable: true, Err: base}, "model: ThrottlingException: connection reset", true, true},
		"without cause":     {&model.Error{Code: "ValidationException"}, "model: ValidationException", false, false},
		"wrapped":           {fmt.Errorf("turn: %w", &model.Error{Code: "http_503", Retryable: true, Err: base}), "turn: model: http_503: connection reset", true, true},
		"not a model error": {io.ErrUnexpectedEOF, "unexpected EOF", false, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.wantText {
				t.Errorf("Error() = %q, want %q", got, tc.wantText)
			}
			if got := model.IsRetryable(tc.err); got != tc.wantRetryable {
				t.Errorf("IsRetryable = %v", got)
			}
			if got := errors.Is(tc.err, base); got != tc.wantIsBase {
				t.Errorf("errors.Is(cause) = %v", got)
			}
		})
	}
}

func TestLastUserContent(t *testing.T) {
	id := "call-1"
	tests := map[string]struct {
		msgs   []protocol.Message
		want   string
		wantOK bool
	}{
		"none":    {nil, "", false},
		"no user": {[]protocol.Message{{Role: protocol.RoleAssistant, Content: "a"}}, "", false},
		"last of several": {[]protocol.Message{
			{Role: protocol.RoleUser, Content: "one"},
			{Role: protocol.RoleAssistant, Content: "a"},
			{Role: protocol.RoleUser, Content: "two"},
			{Role: protocol.RoleAssistant, Content: ""},
			{Role: protocol.RoleTool, Content: "result", ToolCallID: &id},
		}, "two", true},
		"empty content": {[]protocol.Message{{Role: protocol.RoleUser, Content: ""}}, "", true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := model.LastUserContent(tc.msgs)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("got %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
