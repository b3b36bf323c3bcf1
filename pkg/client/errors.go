package client

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/turnstream/turnstream/pkg/protocol"
)

// Client-side codes: the Diagnostic.Code of an Error that has no wire
// diagnostic, beside the server's codes (protocol.Code...).
const (
	// CodeNetworkFailed: the request got no answer, or its answer broke
	// off (retryable).
	CodeNetworkFailed = "NETWORK_FAILED"
	// CodeStreamIncomplete: a turn stream ended before its terminal line
	// and could not be resumed (retryable: the turn may still be running;
	// resume it or read history).
	CodeStreamIncomplete = "STREAM_INCOMPLETE"
	// CodeResponseInvalid: the server answered something that is not the
	// protocol (an error status without an error body, a malformed JSON
	// body). Retryable for 408, 429 and 5xx statuses.
	CodeResponseInvalid = "RESPONSE_INVALID"
)

// Kind says what an Error is.
type Kind int

// Error kinds.
const (
	// KindHTTP is an HTTP error answer: Status, Header and Body are set,
	// Diagnostic is its error body's (or CodeResponseInvalid's when the
	// body is not one).
	KindHTTP Kind = iota + 1
	// KindDiagnostic is a server.turn.diagnostic line, the last line of
	// its stream (SERVER_TIMEOUT, SESSION_CONFLICT, SERVER_INTERNAL, ...).
	KindDiagnostic
	// KindInvalidLine is a stream line that is not a turn event (nor, in
	// compact mode, an append line): Diagnostic is the decoder's result
	// (docs/protocol.md#decoding-untrusted-events).
	KindInvalidLine
	// KindIncomplete is a stream that ended before its terminal line
	// where no resume was offered (CodeStreamIncomplete).
	KindIncomplete
	// KindNetwork is a request without an answer, a read that failed, or
	// resumes that kept failing (CodeNetworkFailed); Err is the cause.
	KindNetwork
	// KindInvalidResponse is a 2xx answer whose body is not what the
	// route returns (CodeResponseInvalid).
	KindInvalidResponse
)

// Error is every failure the client reports but the context's: a request
// whose context ends returns ctx.Err() (context.Canceled or
// context.DeadlineExceeded) as it is. Diagnostic.Message is the server's
// fixed message or the client's own, never other response bytes.
type Error struct {
	Kind Kind
	// Op is what was asked: "submit", "resume", "stop", "capabilities",
	// "session", "turns", "messages" or "artifacts".
	Op string
	// Status, Header and Body are an error answer's (KindHTTP); Body is
	// at most 64 KiB, for checks and logs.
	Status int
	Header http.Header
	Body   []byte
	// Diagnostic is the protocol diagnostic: the error body's, the
	// diagnostic line's, the decoder's, or one of a client code.
	Diagnostic protocol.Diagnostic
	// FunctionURLMessage is the Message of the {"Message":"..."} body
	// with which Lambda's function URL front end itself refuses a request
	// (a bad signature, a missing permission); "" otherwise.
	FunctionURLMessage string
	// Sequence is the last snapshot sequence the stream accepted, where a
	// resume continues after; -1 when none (stream kinds only).
	Sequence int64
	// Err is the cause of a KindNetwork error.
	Err error
}

// Retryable reports whether the same request may succeed later: the
// diagnostic's retryable flag.
func (e *Error) Retryable() bool { return e.Diagnostic.Retryable }

// Code is the diagnostic's code.
func (e *Error) Code() string { return e.Diagnostic.Code }

// Unwrap returns the cause of a KindNetwork error.
func (e *Error) Unwrap() error { return e.Err }

// Error describes the failure: "<op>: HTTP <status>: <CODE>: <message>
// (retryable)" for an error answer, "stream diagnostic: <CODE>: ..." for a
// diagnostic line, the cause's text for a network failure.
func (e *Error) Error() string {
	switch e.Kind {
	case KindHTTP:
		switch {
		case e.Diagnostic.Code != CodeResponseInvalid:
			return fmt.Sprintf("%s: HTTP %d: %s", e.Op, e.Status, describe(e.Diagnostic))
		case e.FunctionURLMessage != "":
			return fmt.Sprintf("%s: HTTP %s: %s", e.Op, statusText(e.Status), e.FunctionURLMessage)
		}
		return fmt.Sprintf("%s: HTTP %s", e.Op, statusText(e.Status))
	case KindDiagnostic:
		return "stream diagnostic: " + describe(e.Diagnostic)
	case KindInvalidLine:
		return fmt.Sprintf("the server sent a line that is not a turn event (%s)", e.Diagnostic.Code)
	case KindIncomplete:
		return "the stream ended before the turn's last snapshot"
	case KindNetwork:
		if e.Err != nil {
			return e.Err.Error()
		}
	}
	return fmt.Sprintf("%s: %s", e.Op, e.Diagnostic.Message)
}

// describe is "CODE: message (retryable|not retryable)".
func describe(d protocol.Diagnostic) string {
	retry := "not retryable"
	if d.Retryable {
		retry = "retryable"
	}
	return fmt.Sprintf("%s: %s (%s)", d.Code, d.Message, retry)
}

// statusText is "503 Service Unavailable", as http.Response.Status has it.
func statusText(status int) string {
	if t := http.StatusText(status); t != "" {
		return fmt.Sprintf("%d %s", status, t)
	}
	return fmt.Sprint(status)
}

// retryableStatus reports whether an answer of status without a
// diagnostic may succeed later: 408, 429 and 5xx.
func retryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// clientDiagnostic is a diagnostic of a client code.
func clientDiagnostic(code, message string, retryable bool) protocol.Diagnostic {
	return protocol.Diagnostic{Version: 1, Code: code, Message: message, Retryable: retryable}
}

// networkError is a KindNetwork Error of op caused by err.
func networkError(op string, err error) *Error {
	return &Error{Kind: KindNetwork, Op: op, Err: err, Sequence: -1,
		Diagnostic: clientDiagnostic(CodeNetworkFailed, "The server could not be reached.", true)}
}

// invalidResponse is a KindInvalidResponse Error of op.
func invalidResponse(op string, status int) *Error {
	return &Error{Kind: KindInvalidResponse, Op: op, Status: status, Sequence: -1,
		Diagnostic: clientDiagnostic(CodeResponseInvalid, "The server's answer is not the expected protocol.", retryableStatus(status))}
}

// refusedForGood reports whether err is an HTTP answer that retrying
// cannot change: a 4xx other than 408 and 429.
func refusedForGood(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == KindHTTP && e.Status >= 400 && e.Status < 500 &&
		e.Status != http.StatusRequestTimeout && e.Status != http.StatusTooManyRequests
}

// IsConfirmationCode reports whether code refuses a decision
// (docs/approvals.md#bad-decisions): no such pending confirmation in the
// session (CONFIRMATION_NOT_FOUND, 404), decided already
// (CONFIRMATION_DECIDED, 409) or expired (CONFIRMATION_EXPIRED, 410).
// None is retryable: deciding again with the same token fails the same
// way.
func IsConfirmationCode(code string) bool {
	switch code {
	case protocol.CodeConfirmationNotFound, protocol.CodeConfirmationDecided, protocol.CodeConfirmationExpired:
		return true
	}
	return false
}
