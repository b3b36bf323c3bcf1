package fate

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"github.com/turnstream/turnstream/pkg/store/dynamo"
)

// What a DynamoDB attempt is for, read from its request: the operation,
// the purpose the store labelled it with (dynamo.Purpose), and the item's
// sort key (classify).
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
	kindDecide     = "decide"     // deciding an expired lease: fences of the session, live and turn items, and freeing the session
	kindRead       = "read"       // GetItem, BatchGetItem, Query
	kindAttachment = "attachment" // recording a turn's use of an attachment, or taking it back
	kindBranch     = "branch"     // a supersession's or a select's writes (docs/branches.md)
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
	// LeaseTurn and Expires are the turn id and expiry (epoch ms) of the
	// lease a renewal or a claim asks for, read from its request.
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

// classify reads one attempt's operation (from X-Amz-Target), the purpose
// the store labelled it with (the dynamo.PurposeHeader its client sends to
// a local endpoint) and its body, for the item's key and a renewal's
// values. An attempt of a store without labels is kindRead when it reads
// and kindOther when it writes.
func classify(target, purpose string, body []byte) *attemptInfo {
	op := target
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	a := &attemptInfo{Op: op, Kind: kindOther}
	if m := sessionInBody.FindSubmatch(body); m != nil {
		a.Session = string(m[1])
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
	var req struct {
		Key                       map[string]map[string]any `json:"Key"`
		Item                      map[string]map[string]any `json:"Item"`
		UpdateExpression          string                    `json:"UpdateExpression"`
		ExpressionAttributeNames  map[string]string         `json:"ExpressionAttributeNames"`
		ExpressionAttributeValues map[string]map[string]any `json:"ExpressionAttributeValues"`
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
	a.Kind = writeKinds[dynamo.Purpose(purpose)]
	if a.Kind == "" {
		a.Kind = kindOther
	}
	switch {
	case a.Kind == kindRenew:
		a.LeaseTurn, _ = req.ExpressionAttributeValues[":turnId"]["S"].(string)
		if n, ok := req.ExpressionAttributeValues[":expires"]["N"].(string); ok {
			a.Expires, _ = strconv.ParseInt(n, 10, 64)
		}
	case a.Kind == kindClaim && a.SK == "SESSION":
		// A claim's lease is set by the expression builder's anonymous
		// placeholders: "SET #3 = :2" where #3 names leaseTurnId.
		set := func(attr string) map[string]any {
			for ph, name := range req.ExpressionAttributeNames {
				if name != attr {
					continue
				}
				m := regexp.MustCompile(`(?:SET |, )` + regexp.QuoteMeta(ph) + ` = (:[A-Za-z0-9_]+)(?:,|\n|$)`).FindStringSubmatch(req.UpdateExpression)
				if m != nil {
					return req.ExpressionAttributeValues[m[1]]
				}
			}
			return nil
		}
		a.LeaseTurn, _ = set("leaseTurnId")["S"].(string)
		if n, ok := set("leaseExpiresAt")["N"].(string); ok {
			a.Expires, _ = strconv.ParseInt(n, 10, 64)
		}
	}
	return a
}

// writeKinds are the kinds of the store's labelled writes; the others
// (give-backs, withdrawals, abandons, the queue's, the ledger's...) are
// kindOther.
var writeKinds = map[dynamo.Purpose]string{
	dynamo.PurposeClaim:          kindClaim,
	dynamo.PurposeTakeover:       kindClaim,
	dynamo.PurposeTakeoverRecord: kindClaim,
	dynamo.PurposeDequeue:        kindClaim,
	dynamo.PurposeRenew:          kindRenew,
	dynamo.PurposeAck:            kindAck,
	dynamo.PurposeDelta:          kindDelta,
	dynamo.PurposeLive:           kindLive,
	dynamo.PurposeStop:           kindStop,
	dynamo.PurposeSave:           kindSave,
	dynamo.PurposeRelease:        kindRelease,
	dynamo.PurposeFence:          kindDecide,
	dynamo.PurposeFenceRecord:    kindDecide,
	dynamo.PurposeFree:           kindDecide,
	dynamo.PurposeAttachment:     kindAttachment,
	dynamo.PurposeSupersede:      kindBranch,
	dynamo.PurposeSelect:         kindBranch,
}
