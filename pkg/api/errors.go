package api

import "github.com/turnstream/turnstream/pkg/protocol"

// ErrorBody is every function's JSON error answer
// (docs/protocol.md#server-handler-behaviour), written by
// protocol.EncodeErrorBody; the HTTP status is protocol.HTTPStatus of its
// code and the code's message is fixed (protocol.NewDiagnostic).
//
//	{"error":{"version":1,"code","message","retryable"}}
type ErrorBody struct {
	Error *protocol.Diagnostic `json:"error"`
}
