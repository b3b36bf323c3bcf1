// Package protocol implements AgentsKit Chat's turn protocol v1 on the wire:
// turn event envelopes and their encoder and untrusted-input decoder, the
// snapshot cursor, ordered assistant content (agentskit.chat.content/1),
// component frames and manifests, the session envelope with v0 migration,
// the canonical message record validator, and the diagnostic codes with
// their fixed messages. It imports nothing from this module.
package protocol
