// Package tool is turnstream's registry of model-callable tools: Go
// functions with a JSON Schema input (docs/design.md#models-tools-definitions).
//
// A Registry holds Tools by name. Register compiles each tool's input
// schema once; Specs lists the model.ToolSpec values a definition's tool
// names select, for model.Request.Tools; Run executes one model.ToolCall
// and never fails: every problem (an unknown tool, arguments that are not
// a JSON object or break the schema, a tool error, a panic, a result that
// breaks a limit, a component the manifest rejects) becomes an Outcome
// with status error and a fixed text meant for the model, so one bad call
// never crashes a turn. Arguments are validated BEFORE the tool runs.
//
// An Outcome carries what the turn needs for both sides of the wire:
//   - the assistant message's toolCalls entry
//     (docs/protocol.md#the-canonical-message-record): Outcome.ToolCall
//     gives {id, name, args, status, result | error};
//   - the model's next request (pkg/model package documentation): a
//     protocol.RoleTool message with ToolCallID, Content Outcome.Text and
//     Status error for a failed call (Outcome.ToolMessage);
//   - artifact references the turn records before its terminal snapshot
//     (docs/design.md#models-tools-definitions), already validated with
//     chat.ValidateArtifacts;
//   - at most one component render frame to append to the ordered
//     assistant content (docs/protocol.md#ordered-assistant-content,
//     docs/protocol.md#component-frames), already checked against the
//     registry's closed component manifest (Manifest).
//
// Schemas are compiled here, where they are used (a tool's input schema
// when it is registered, a manifest's props schemas by NewManifest), so
// that only the turn function links a JSON Schema library.
//
// Tools decode their arguments with DecodeArgs: case-sensitive names and no
// duplicate keys (docs/design.md#wire-protocol-v1), so the tool reads exactly
// what the schema validated.
//
// A tool that needs to know where it runs reads CallInfoFrom(ctx): the
// session, turn and principal of the call, which the turn pipeline puts
// in every call's context. The demo tools are WorkspaceNote and
// WorkspaceNoteDelete; the second asks its Notes (SessionNotes: the
// session's visible turns) whether the note exists, and never reports a
// delete of a note it could not find.
package tool
