// Package agui is the AG-UI 1.0 wire format as turnstream speaks it
// (docs/agui.md): the events a turn stream sends, the messages of a
// MESSAGES_SNAPSHOT, the run outcomes, the server-sent-event framing with
// the event ids that make a run resumable, and the decoder of the
// RunAgentInput a client posts.
//
// It knows nothing of turns, stores or HTTP: pkg/turn encodes its turn
// states with it (a third writer beside the snapshot and compact ones) and
// decodes requests with it. The shapes follow @ag-ui/core 1.0.0's event and
// message schemas; what turnstream sends of them, and what it reads of a
// RunAgentInput, is pinned in docs/agui.md.
//
// Encoding writes compact JSON without HTML escaping, one event per SSE
// frame: "id: <event id>\ndata: <json>\n\n" (LF only; AG-UI's reference
// parser splits frames at "\n\n"). Decoding reads untrusted bytes with the
// one strict reader, protocol.UnmarshalStrict (docs/design.md#wire-protocol-v1):
// keys match case-sensitively, a duplicated key, a lone surrogate escape,
// invalid UTF-8 or a null member is invalid, and a member that equals a
// field of the same object but for case is invalid. Errors name the field and the rule broken,
// never a value of the input.
package agui
