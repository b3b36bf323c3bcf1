// Package protocol implements AgentsKit Chat's turn protocol v1 on the wire:
// turn event envelopes and their encoder and untrusted-input decoder, the
// snapshot cursor, ordered assistant content (agentskit.chat.content/1),
// component frames (their closed manifests, which need a JSON Schema
// library, are pkg/tool's), the session envelope with v0 migration, the
// canonical message record validator, and the diagnostic codes with their
// fixed messages. It imports nothing from this module.
//
// Every decoder reads untrusted bytes with one strict JSON reader (json.go)
// into a small tree and then validates it by hand in the order AgentsKit's
// reference implementation does (docs/protocol.md#decoding-untrusted-events,
// docs/protocol.md#the-canonical-message-record,
// docs/protocol.md#the-snapshot-cursor,
// docs/protocol.md#ordered-assistant-content,
// docs/protocol.md#component-frames, docs/protocol.md#the-session-envelope).
// The reader accepts what JavaScript's JSON.parse accepts except where Go and
// JavaScript could read one body two ways (docs/design.md#wire-protocol-v1): a
// duplicated key at any depth, a lone UTF-16 surrogate escape and invalid
// UTF-8 are rejected as invalid JSON. Keys match case-sensitively, and an
// object holding a key equal to one of its own fields but for case ("Event"
// for "event") is invalid, since a case-folding reader would take it for the
// field (IsCaseVariant). Other unknown keys are dropped, null never stands for
// an absent optional field, integers are integral numbers up to 2^53-1,
// lengths count UTF-16 code units and "blank" means empty after JavaScript's
// String#trim.
//
// Encoders validate their input against the same rules, so everything this
// package writes decodes again to an equal value, and write JSON exactly as
// JavaScript's JSON.stringify does: compact, the wire key order, only '"',
// '\' and C0 controls escaped (U+2028, U+2029, '<', '>' and '&' stay raw),
// numbers in ECMAScript form. Diagnostics never contain input bytes; the
// one exception is a decoder result's eventId, and only when it is a SafeId.
package protocol
