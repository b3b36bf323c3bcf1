package fate

import (
	"bytes"
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// What a DynamoDB attempt is for, read from its request body the way
// ddbfault.Op matches attempts: the operation, the item's sort key, and
// fragments of the hand-written condition expressions of
// pkg/store/dynamo (session.go, checkpoint.go, turns.go, fate.go). Only
// the request is read, so the classification works against any version
// of the store that keeps these shapes (older ones are classified as
// well as their shapes allow; an unknown write is kindOther).
const (
	kindClaim = "claim" // a claim or a takeover's compare-and-set that claims
	// kindCheckpoint is a running turn's checkpoint write of any of the
	// three kinds after it: the first checkpoint's turn item (the
	// acknowledgment), a delta item, or the live item.
	kindCheckpoint = "checkpoint"
	kindAck        = "ack"
	kindDelta      = "delta"
	kindLive       = "live"
	kindRenew      = "renew"
	kindSave       = "save" // the final save of the turn item, or a chunk of it
	kindRelease    = "release"
	kindStop       = "stop"
	kindDecide     = "decide" // deciding an expired lease: fences of the session, live and turn items, and freeing the session
	kindRead       = "read"   // GetItem, BatchGetItem, Query
	kindOther      = "other"
	// kindLiveItem is every write of a turn's live item, whoever sends
	// it: its checkpoints, a stop's flag, a decision's fence. A fault
	// window of this kind is a hot or throttled item, which fails every
	// writer alike; no attempt is classified so.
	kindLiveItem = "liveitem"
)

// attemptInfo is what the proxy knows of one HTTP attempt.
type attemptInfo struct {
	Slot    int // the dev server process slot that sent it
	Op      string
	Kind    string
	Session string // the session id of its key, "" when none
	SK      string
	Index   bool // a Query of a secondary index
	// LeaseTurn and Expires are a renewal's turn id and requested expiry
	// (epoch ms), read from its request.
	LeaseTurn string
	Expires   int64
}

// is reports whether the attempt is of kind k (kindCheckpoint: any
// checkpoint write).
func (a *attemptInfo) is(k string) bool {
	switch k {
	case kindCheckpoint:
		return isCheckpoint(a.Kind) && a.Kind != kindLiveItem
	case kindLiveItem:
		return (a.Op == "UpdateItem" || a.Op == "PutItem") && strings.HasSuffix(a.SK, "#LIVE")
	}
	return a.Kind == k
}

// isCheckpoint reports whether kind is a checkpoint write's (a window of
// kindLiveItem fails the live item's checkpoints among others).
func isCheckpoint(kind string) bool {
	return kind == kindCheckpoint || kind == kindAck || kind == kindDelta || kind == kindLive || kind == kindLiveItem
}

var sessionInBody = regexp.MustCompile(`"SESSION#([A-Za-z0-9._:-]+)"`)

// classify reads one attempt's operation (from X-Amz-Target) and body.
func classify(target string, body []byte) *attemptInfo {
	op := target
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	a := &attemptInfo{Op: op, Kind: kindOther}
	if m := sessionInBody.FindSubmatch(body); m != nil {
		a.Session = string(m[1])
	}
	var req struct {
		Key                       map[string]map[string]any `json:"Key"`
		Item                      map[string]map[string]any `json:"Item"`
		ConditionExpression       string                    `json:"ConditionExpression"`
		ExpressionAttributeNames  map[string]string         `json:"ExpressionAttributeNames"`
		ExpressionAttributeValues map[string]map[string]any `json:"ExpressionAttributeValues"`
	}
	switch op {
	case "GetItem", "BatchGetItem", "Query":
		a.Kind = kindRead
		a.Index = op == "Query" && bytes.Contains(body, []byte(`"IndexName"`))
		return a
	case "UpdateItem", "PutItem":
	default:
		return a
	}
	if json.Unmarshal(body, &req) != nil {
		return a
	}
	key := req.Key
	if op == "PutItem" {
		key = req.Item
	}
	if sk, ok := key["sk"]["S"].(string); ok {
		a.SK = sk
	}
	cond := req.ConditionExpression
	names := make([]string, 0, len(req.ExpressionAttributeNames))
	for _, n := range req.ExpressionAttributeNames {
		names = append(names, n)
	}
	has := func(s string) bool { return strings.Contains(cond, s) }
	named := func(n string) bool { return slices.Contains(names, n) }
	sk := a.SK
	switch {
	case op == "PutItem" && (strings.Contains(sk, "#D#") || strings.Contains(sk, "#LIVE#")):
		a.Kind = kindDelta // (#LIVE#<n>: an older layout)
	case op == "PutItem" && strings.Contains(sk, "#CHUNK#"):
		a.Kind = kindSave
	case op == "PutItem":
	case sk == "SESSION":
		switch {
		case has("attribute_not_exists(#leaseToken)"):
			a.Kind = kindClaim
		case has(":crashed"):
			a.Kind = kindDecide // the session's fence
		case has(":revision") && named("fencedToken"):
			a.Kind = kindDecide // freeing the decided session
		case has(":revision"):
			a.Kind = kindClaim // a takeover's compare-and-set
		case named("releasedToken"):
			a.Kind = kindRelease
		case has(":expires") || has("#leaseToken = :token") && has("#leaseExpiresAt > :now"):
			a.Kind = kindRenew
			a.LeaseTurn, _ = req.ExpressionAttributeValues[":turnId"]["S"].(string)
			if n, ok := req.ExpressionAttributeValues[":expires"]["N"].(string); ok {
				a.Expires, _ = strconv.ParseInt(n, 10, 64)
			}
		case named("leaseStop") && has(":owner"):
			a.Kind = kindStop
		}
	case strings.HasSuffix(sk, "#LIVE"):
		switch {
		case has(":crashed") || has(":fence"):
			a.Kind = kindDecide
		case named("stop") && !named("sequence"):
			a.Kind = kindStop
		default:
			a.Kind = kindLive
		}
	case strings.HasPrefix(sk, "TURN#"):
		switch {
		case has(":saveId"):
			a.Kind = kindSave
		case has(":fence"):
			a.Kind = kindDecide
		case has(":running"):
			a.Kind = kindAck
		case has("#leaseToken = :token"):
			a.Kind = kindSave // an older layout, without a save id
		}
	}
	return a
}
