// Package modeltest holds local fake model provider servers and the model
// conformance suite that every pkg/model provider runs.
//
// The fakes speak the real wire protocols to the real SDK clients: Bedrock
// is an event-stream ConverseStream server for the bedrockruntime client,
// OpenAI a server-sent-events chat completions server for openai-go. Each
// answers its calls with scripted Replies, records every request body,
// and first checks the request against the validation rules of the real
// API that matter for tool use (see ValidateConverse and
// ValidateChatCompletions, and docs/providers.md for where each rule is
// documented). A request the real provider would reject is answered with
// that provider's validation error and reported to the test with
// t.Errorf, so a request shape a real provider rejects fails the test
// that sent it.
//
// Run is the conformance suite: the same cases (stored histories with tool
// exchanges, with and without tools offered, with repeated, empty and
// foreign tool call ids, arguments that are not objects, text written
// after tool results; and, for scripted providers, model output with such
// arguments and ids) against any model.Model. RunStreamFailures,
// RunCancellation and CheckEvents are the stream's conformance: each
// provider scripts its own wire's failures (error statuses, errors and
// dropped connections mid-stream, streams that end early) and the suite
// checks that every one becomes the same *model.Error behaviour, and that
// cancellation and Close end a stream alike.
package modeltest
