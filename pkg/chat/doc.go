// Package chat holds turnstream's domain: sessions, the active-turn lease,
// turns with their canonical messages, lineage and artifact references, and
// the Store contract every storage implementation satisfies.
//
// A session is claimed by one turn at a time through an expiring lease
// (docs/design.md#the-turn-pipeline). The claim reserves the session's snapshot sequence;
// the turn numbers its snapshots from it without a storage write per
// snapshot, saves its turn item once, and releases the lease, appending its
// outcome to the terminal window (the newest few turns, at most 64) that
// rejects replays fast; older turn ids are looked up among the turns. Store implementations live
// in pkg/store/dynamo (DynamoDB, conditional writes only) and
// pkg/store/memory (in process); pkg/store/storetest is the contract suite
// both pass.
package chat
