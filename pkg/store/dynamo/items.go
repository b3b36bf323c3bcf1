package dynamo

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/chat"
	"github.com/turnstream/turnstream/pkg/protocol"
)

// Key values (docs/design.md#storage-one-dynamodb-table).
const (
	sessionPrefix = "SESSION#"
	sessionSK     = "SESSION"
	turnPrefix    = "TURN#"
	// ordinalDigits is the zero padding of ordinals in sort keys, so that
	// string order is numeric order.
	ordinalDigits = 12
	// maxOrdinal is the largest ordinal that fits ordinalDigits.
	maxOrdinal = 999_999_999_999
)

// Attribute names used in expressions. The expression builder aliases
// every name, so reserved words are safe; purgeAt is deliberately absent.
const (
	attrOwnerKey       = "ownerKey"
	attrDefinitionID   = "definitionId"
	attrDefinitionRev  = "definitionRevision"
	attrNextOrdinal    = "nextOrdinal"
	attrRevision       = "revision"
	attrCreatedAt      = "createdAt"
	attrUpdatedAt      = "updatedAt"
	attrLeaseTurnID    = "leaseTurnId"
	attrLeaseToken     = "leaseToken"
	attrLeaseExpiresAt = "leaseExpiresAt"
	attrLeaseStop      = "leaseStop"
	attrLeaseAbandoned = "leaseAbandoned"
	attrLeaseOrdinal   = "leaseOrdinal"
	attrLeaseInputHash = "leaseInputHash"
	attrLeaseLineage   = "leaseLineage"
	// attrLeaseStartedAt (epoch ms) and attrLeaseAdmission are the
	// lease's chat.Lease.StartedAt and Admission: what the usage ledger
	// counts the turn under (ledger.go).
	attrLeaseStartedAt = "leaseStartedAt"
	attrLeaseAdmission = "leaseAdmission"
	attrWindow         = "window"
	attrReleasedToken  = "releasedToken"

	attrArtifacts  = "artifacts"
	attrSuperseded = "superseded"
	attrSiblings   = "siblings"
	attrBranchHead = "branchHead"
	attrBranchEnd  = "branchEnd"
	attrSelecting  = "selecting"
	attrHiddenBy   = "hiddenBy"
	// attrForkedFrom is, on a forked session's item, the source session
	// and turn ids (ForkSession).
	attrForkedFrom   = "forkedFrom"
	attrStatus       = "status"
	attrInputHash    = "inputHash"
	attrOrdinal      = "ordinal"
	attrError        = "error"
	attrLineage      = "lineage"
	attrLastSequence = "lastSequence"
	attrCompletedAt  = "completedAt"
	// attrSaveID is a random id per SaveTurn call, by which a save whose
	// outcome is unknown recognises its own write.
	attrSaveID = "saveId"
)

// leaseAttrs are removed from the session item when a lease ends.
var leaseAttrs = []string{attrLeaseTurnID, attrLeaseToken, attrLeaseExpiresAt, attrLeaseStop, attrLeaseAbandoned,
	attrLeaseOrdinal, attrLeaseInputHash, attrLeaseLineage, attrLeaseStartedAt, attrLeaseAdmission}

func sessionPK(sessionID string) string { return sessionPrefix + sessionID }

func ordinalKey(ordinal int64) string {
	return fmt.Sprintf("%0*d", ordinalDigits, ordinal)
}

func turnSK(ordinal int64) string { return turnPrefix + ordinalKey(ordinal) }

func sessionKey(sessionID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrPK: &types.AttributeValueMemberS{Value: sessionPK(sessionID)},
		AttrSK: &types.AttributeValueMemberS{Value: sessionSK},
	}
}

func turnKey(sessionID string, ordinal int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		AttrPK: &types.AttributeValueMemberS{Value: sessionPK(sessionID)},
		AttrSK: &types.AttributeValueMemberS{Value: turnSK(ordinal)},
	}
}

// ownerKey encodes a principal as one string so that conditions compare
// one attribute: "<len(subject)>:<subject><tenant>", unambiguous for any
// subject and tenant.
func ownerKey(p chat.Principal) string {
	return strconv.Itoa(len(p.Subject)) + ":" + p.Subject + p.Tenant
}

func parseOwnerKey(s string) (chat.Principal, error) {
	n, rest, ok := strings.Cut(s, ":")
	size, err := strconv.Atoi(n)
	if !ok || err != nil || size < 0 || size > len(rest) {
		return chat.Principal{}, fmt.Errorf("malformed owner key")
	}
	return chat.Principal{Subject: rest[:size], Tenant: rest[size:]}, nil
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

type lineageAV struct {
	Operation       string `dynamodbav:"operation,omitempty"`
	ParentTurnID    string `dynamodbav:"parentTurnId,omitempty"`
	SourceMessageID string `dynamodbav:"sourceMessageId,omitempty"`
}

func toLineageAV(l protocol.Lineage) lineageAV { return lineageAV(l) }

func (l lineageAV) lineage() protocol.Lineage { return protocol.Lineage(l) }

// siblingsAV is a turn's sibling group (chat.Siblings), compact: each
// member one string, its ordinal and turn id ("12:t7"), so that a
// group of ten costs a history page about 200 bytes a turn.
type siblingsAV struct {
	Group   int64    `dynamodbav:"g"`
	Members []string `dynamodbav:"m"`
}

func toSiblingsAV(g *chat.Siblings) *siblingsAV {
	if g == nil {
		return nil
	}
	av := &siblingsAV{Group: g.Group, Members: make([]string, len(g.Members))}
	for i, m := range g.Members {
		av.Members[i] = strconv.FormatInt(m.Ordinal, 10) + ":" + m.TurnID
	}
	return av
}

// siblings decodes av; a member that is not "<ordinal>:<turn id>" is
// left out.
func (av *siblingsAV) siblings() *chat.Siblings {
	if av == nil {
		return nil
	}
	g := &chat.Siblings{Group: av.Group, Members: make([]chat.Sibling, 0, len(av.Members))}
	for _, m := range av.Members {
		ord, id, ok := strings.Cut(m, ":")
		n, err := strconv.ParseInt(ord, 10, 64)
		if ok && err == nil && id != "" {
			g.Members = append(g.Members, chat.Sibling{Ordinal: n, TurnID: id})
		}
	}
	return g
}

// The terminal window is stored as one map from turn id to entry, so
// that the claim's condition tests the id (attribute_not_exists of
// window.<turn id>) and no id is stored twice. An entry is the turn's
// position in the window (oldest 0, decimal), its outcome's letter
// (outcomeLetters) and its compact input hash (compactHash).
var outcomeLetters = map[chat.TerminalOutcome]byte{chat.OutcomeCompleted: 'c', chat.OutcomeIndeterminate: 'i'}

// windowAV returns the stored form of a terminal window.
func windowAV(entries []chat.TerminalEntry) map[string]string {
	m := make(map[string]string, len(entries))
	for i, e := range entries {
		m[e.TurnID] = strconv.Itoa(i) + string(outcomeLetters[e.Outcome]) + compactHash(e.InputHash)
	}
	return m
}

// decodeWindow returns the terminal window of its stored form, oldest
// first.
func decodeWindow(m map[string]string) ([]chat.TerminalEntry, error) {
	out := make([]chat.TerminalEntry, len(m))
	for id, v := range m {
		digits := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
		pos, err := strconv.Atoi(v[:max(digits, 0)])
		if digits < 1 || err != nil || pos >= len(out) || out[pos].TurnID != "" {
			return nil, fmt.Errorf("malformed terminal window entry")
		}
		e := chat.TerminalEntry{TurnID: id, InputHash: expandHash(v[digits+1:])}
		for o, letter := range outcomeLetters {
			if v[digits] == letter {
				e.Outcome = o
			}
		}
		if e.Outcome == "" {
			return nil, fmt.Errorf("malformed terminal window entry")
		}
		out[pos] = e
	}
	return out, nil
}

// compactHash returns the stored form of an input hash: a chat.HashInput
// value (64 hex digits) as 43 characters of unpadded base64url, any other
// value as it is after a "~" (which base64url never holds).
func compactHash(h string) string {
	if b, err := hex.DecodeString(h); err == nil && len(b) == sha256.Size && hex.EncodeToString(b) == h {
		return base64.RawURLEncoding.EncodeToString(b)
	}
	if h == "" {
		return ""
	}
	return "~" + h
}

// expandHash inverts compactHash.
func expandHash(s string) string {
	if raw, ok := strings.CutPrefix(s, "~"); ok {
		return raw
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != sha256.Size {
		return s // not a compact hash (an empty one, or written as it is)
	}
	return hex.EncodeToString(b)
}

// sessionItem is the stored session item (see doc.go).
type sessionItem struct {
	PK                 string                    `dynamodbav:"pk"`
	SK                 string                    `dynamodbav:"sk"`
	OwnerKey           string                    `dynamodbav:"ownerKey"`
	DefinitionID       string                    `dynamodbav:"definitionId,omitempty"`
	DefinitionRevision int64                     `dynamodbav:"definitionRevision"`
	Sequence           int64                     `dynamodbav:"sequence"`
	NextOrdinal        int64                     `dynamodbav:"nextOrdinal"`
	Revision           int64                     `dynamodbav:"revision"`
	CreatedAt          int64                     `dynamodbav:"createdAt"`
	UpdatedAt          int64                     `dynamodbav:"updatedAt"`
	LeaseTurnID        string                    `dynamodbav:"leaseTurnId,omitempty"`
	LeaseToken         string                    `dynamodbav:"leaseToken,omitempty"`
	LeaseExpiresAt     int64                     `dynamodbav:"leaseExpiresAt,omitempty"`
	LeaseStop          bool                      `dynamodbav:"leaseStop,omitempty"`
	LeaseAbandoned     bool                      `dynamodbav:"leaseAbandoned,omitempty"`
	LeaseOrdinal       int64                     `dynamodbav:"leaseOrdinal,omitempty"`
	LeaseInputHash     string                    `dynamodbav:"leaseInputHash,omitempty"` // compactHash
	LeaseLineage       *lineageAV                `dynamodbav:"leaseLineage,omitempty"`
	LeaseStartedAt     int64                     `dynamodbav:"leaseStartedAt,omitempty"`
	LeaseAdmission     string                    `dynamodbav:"leaseAdmission,omitempty"`
	Window             map[string]string         `dynamodbav:"window,omitempty"`
	ReleasedToken      string                    `dynamodbav:"releasedToken,omitempty"`
	Confirmations      map[string]confirmationAV `dynamodbav:"confirmations,omitempty"`
	// FencedToken is set while the fate of the lease's turn is being
	// decided (fate.go): that turn's token; LeaseToken is then the fence.
	FencedToken string `dynamodbav:"fencedToken,omitempty"`
	// Queue is the session's queued turns (queue.go): a map from turn id
	// to queueEntry's stored form; QueueSeq the last queue position given.
	Queue    map[string]string `dynamodbav:"queue,omitempty"`
	QueueSeq int64             `dynamodbav:"queueSeq,omitempty"`
	// The session in its owner's list (conversation.go): its title (and
	// the lowercase form searches match), and what its last release
	// recorded; ListedAt is SessionsIndex's sort key.
	Title      string `dynamodbav:"title,omitempty"`
	TitleKey   string `dynamodbav:"titleKey,omitempty"`
	ListedAt   int64  `dynamodbav:"listedAt,omitempty"`
	LastStatus string `dynamodbav:"lastStatus,omitempty"`
	Preview    string `dynamodbav:"preview,omitempty"`
	// Selecting is a select in progress (branches.go): no claim passes
	// it, and whoever meets it expired finishes it.
	Selecting *selectMark `dynamodbav:"selecting,omitempty"`
}

func decodeSession(sessionID string, item map[string]types.AttributeValue) (*chat.Session, *sessionItem, error) {
	var si sessionItem
	if err := attributevalue.UnmarshalMap(item, &si); err != nil {
		return nil, nil, fmt.Errorf("decode session %s: %w", sessionID, err)
	}
	switch {
	case si.LeaseToken == deletingToken:
		// Marked for deletion (delete.go): no session, for every route.
		return nil, nil, fmt.Errorf("session %s is being deleted: %w", sessionID, chat.ErrSessionNotFound)
	case si.OwnerKey == "":
		// A deleted session's tombstone (delete.go).
		return nil, nil, fmt.Errorf("session %s was deleted: %w", sessionID, chat.ErrSessionNotFound)
	}
	owner, err := parseOwnerKey(si.OwnerKey)
	if err != nil {
		return nil, nil, fmt.Errorf("decode session %s: %w", sessionID, err)
	}
	s := &chat.Session{
		ID:                 sessionID,
		Owner:              owner,
		DefinitionID:       si.DefinitionID,
		DefinitionRevision: si.DefinitionRevision,
		Sequence:           si.Sequence,
		NextOrdinal:        si.NextOrdinal,
		Revision:           si.Revision,
		CreatedAt:          fromMillis(si.CreatedAt),
		UpdatedAt:          fromMillis(si.UpdatedAt),
		Confirmations:      decodeConfirmations(si.Confirmations),
	}
	if s.TerminalTurns, err = decodeWindow(si.Window); err != nil {
		return nil, nil, fmt.Errorf("decode session %s: %w", sessionID, err)
	}
	if s.Queue, err = decodeQueue(si.Queue); err != nil {
		return nil, nil, fmt.Errorf("decode session %s: %w", sessionID, err)
	}
	if si.LeaseToken != "" {
		s.ActiveTurn = si.lease()
		if si.FencedToken != "" {
			// Being decided: the lease is no longer the turn's; it shows
			// as expired (it is) to every caller.
			s.ActiveTurn.Token = si.FencedToken
		}
	}
	return s, &si, nil
}

func (si *sessionItem) lease() *chat.Lease {
	l := &chat.Lease{
		TurnID:    si.LeaseTurnID,
		Token:     si.LeaseToken,
		ExpiresAt: fromMillis(si.LeaseExpiresAt),
		Stop:      si.LeaseStop,
		Abandoned: si.LeaseAbandoned,
		Ordinal:   si.LeaseOrdinal,
		InputHash: expandHash(si.LeaseInputHash),
		StartedAt: fromMillis(si.LeaseStartedAt),
		Admission: si.LeaseAdmission,
	}
	if si.LeaseLineage != nil {
		l.Lineage = si.LeaseLineage.lineage()
	}
	return l
}

// attrMetered holds a turn's chat.Usage (Turn.Metered, Checkpoint.Metered)
// on turn and live items.
const attrMetered = "metered"

// meteredAV is a chat.Usage as stored: only the figures that are not
// zero.
type meteredAV struct {
	InputTokens      int64   `dynamodbav:"i,omitempty"`
	OutputTokens     int64   `dynamodbav:"o,omitempty"`
	CacheReadTokens  int64   `dynamodbav:"r,omitempty"`
	CacheWriteTokens int64   `dynamodbav:"w,omitempty"`
	ReasoningTokens  int64   `dynamodbav:"k,omitempty"`
	ModelCalls       int64   `dynamodbav:"m,omitempty"`
	ToolCalls        int64   `dynamodbav:"c,omitempty"`
	StoreRequests    int64   `dynamodbav:"q,omitempty"`
	ReadUnits        float64 `dynamodbav:"u,omitempty"`
	WriteUnits       float64 `dynamodbav:"v,omitempty"`
}

// toMeteredAV returns u as stored, nil when it is zero.
func toMeteredAV(u chat.Usage) *meteredAV {
	if u == (chat.Usage{}) {
		return nil
	}
	return &meteredAV{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens, ReasoningTokens: u.ReasoningTokens, ModelCalls: u.ModelCalls, ToolCalls: u.ToolCalls,
		StoreRequests: u.StoreRequests, ReadUnits: u.ReadUnits, WriteUnits: u.WriteUnits}
}

// usage returns m as a chat.Usage (zero for nil).
func (m *meteredAV) usage() chat.Usage {
	if m == nil {
		return chat.Usage{}
	}
	return chat.Usage{InputTokens: m.InputTokens, OutputTokens: m.OutputTokens, CacheReadTokens: m.CacheReadTokens,
		CacheWriteTokens: m.CacheWriteTokens, ReasoningTokens: m.ReasoningTokens, ModelCalls: m.ModelCalls, ToolCalls: m.ToolCalls,
		StoreRequests: m.StoreRequests, ReadUnits: m.ReadUnits, WriteUnits: m.WriteUnits}
}

type usageAV struct {
	PromptTokens     int64 `dynamodbav:"promptTokens"`
	CompletionTokens int64 `dynamodbav:"completionTokens"`
	TotalTokens      int64 `dynamodbav:"totalTokens"`
}

type diagnosticAV struct {
	Version   int    `dynamodbav:"version"`
	Code      string `dynamodbav:"code"`
	Message   string `dynamodbav:"message"`
	Retryable bool   `dynamodbav:"retryable"`
}

type artifactAV struct {
	EntryPath    string `dynamodbav:"entryPath"`
	ArtifactType string `dynamodbav:"artifactType"`
}

func artifactsAV(refs []chat.ArtifactReference) []artifactAV {
	out := make([]artifactAV, 0, len(refs))
	for _, r := range refs {
		out = append(out, artifactAV{EntryPath: r.EntryPath, ArtifactType: string(r.ArtifactType)})
	}
	return out
}

func artifactRefs(avs []artifactAV) []chat.ArtifactReference {
	out := make([]chat.ArtifactReference, 0, len(avs))
	for _, a := range avs {
		out = append(out, chat.ArtifactReference{EntryPath: a.EntryPath, ArtifactType: chat.ArtifactType(a.ArtifactType)})
	}
	return out
}

// turnItem is the stored turn item (see doc.go). Artifacts are written
// separately (SaveTurn keeps recorded ones when the turn carries nil).
type turnItem struct {
	PK            string        `dynamodbav:"pk"`
	SK            string        `dynamodbav:"sk"`
	TurnID        string        `dynamodbav:"turnId"`
	VisibleKey    string        `dynamodbav:"visibleKey,omitempty"`
	Ordinal       int64         `dynamodbav:"ordinal"`
	Status        string        `dynamodbav:"status"`
	Lineage       lineageAV     `dynamodbav:"lineage"`
	InputHash     string        `dynamodbav:"inputHash,omitempty"`
	Usage         usageAV       `dynamodbav:"usage"`
	Metered       *meteredAV    `dynamodbav:"metered,omitempty"`
	Error         *diagnosticAV `dynamodbav:"error,omitempty"`
	Artifacts     []artifactAV  `dynamodbav:"artifacts"`
	Superseded    bool          `dynamodbav:"superseded"`
	FirstSequence int64         `dynamodbav:"firstSequence"`
	LastSequence  int64         `dynamodbav:"lastSequence"`
	StartedAt     int64         `dynamodbav:"startedAt,omitempty"`
	CompletedAt   int64         `dynamodbav:"completedAt,omitempty"`
	SavedAt       int64         `dynamodbav:"savedAt"`
	OwnerKey      string        `dynamodbav:"ownerKey"`
	LeaseToken    string        `dynamodbav:"leaseToken"`
	SaveID        string        `dynamodbav:"saveId,omitempty"`
	// Live marks a running turn item written by a checkpoint: its
	// messages are those of the first checkpoint, the live and delta
	// items hold the rest (checkpoint.go). The final save drops it.
	Live         bool   `dynamodbav:"live,omitempty"`
	Messages     string `dynamodbav:"messages,omitempty"`
	MessagesGzip []byte `dynamodbav:"messagesGzip,omitempty"`
	Chunks       int    `dynamodbav:"chunks,omitempty"`
	ChunkPrefix  string `dynamodbav:"chunkPrefix,omitempty"`
	// Feedback is the owner's rating of the answer (conversation.go);
	// no save writes it.
	Feedback *feedbackAV `dynamodbav:"feedback,omitempty"`
	// Siblings is the turn's sibling group. BranchHead is, on a turn off
	// the active branch, the ordinal of the first turn of the branch it
	// left with, and BranchEnd, on that first turn, the last ordinal
	// that left with it (docs/branches.md): no save writes them.
	Siblings   *siblingsAV `dynamodbav:"siblings,omitempty"`
	BranchHead int64       `dynamodbav:"branchHead,omitempty"`
	BranchEnd  int64       `dynamodbav:"branchEnd,omitempty"`
	// HiddenBy is, on a turn a supersession took off the active branch,
	// the ordinal of the turn that superseded it (restoreBranch).
	HiddenBy int64 `dynamodbav:"hiddenBy,omitempty"`
}

// group is the item's sibling group: its first member's ordinal, the
// turn's own when it has no siblings.
func (it *turnItem) group() int64 {
	if it.Siblings != nil {
		return it.Siblings.Group
	}
	return it.Ordinal
}

// optionalTurnAttrs are the turn attributes that may be absent; a save
// that does not set one removes it.
var optionalTurnAttrs = []string{AttrVisibleKey, "inputHash", attrMetered, "error", "startedAt", "completedAt",
	"messages", "messagesGzip", "chunks", "chunkPrefix", attrSaveID, attrLive, attrSiblings}

func newTurnItem(t *chat.Turn, owner chat.Principal, token string, savedAt time.Time) turnItem {
	it := turnItem{
		PK:            sessionPK(t.SessionID),
		SK:            turnSK(t.Ordinal),
		TurnID:        t.TurnID,
		Ordinal:       t.Ordinal,
		Status:        string(t.Status),
		Lineage:       toLineageAV(t.Lineage),
		InputHash:     t.InputHash,
		Usage:         usageAV(t.Usage),
		Metered:       toMeteredAV(t.Metered),
		Superseded:    t.Superseded,
		Siblings:      toSiblingsAV(t.Siblings),
		FirstSequence: t.FirstSequence,
		LastSequence:  t.LastSequence,
		StartedAt:     millis(t.StartedAt),
		CompletedAt:   millis(t.CompletedAt),
		SavedAt:       millis(savedAt),
		OwnerKey:      ownerKey(owner),
		LeaseToken:    token,
	}
	if !t.Superseded {
		it.VisibleKey = ordinalKey(t.Ordinal)
	}
	if t.Error != nil {
		it.Error = &diagnosticAV{Version: t.Error.Version, Code: t.Error.Code, Message: t.Error.Message, Retryable: t.Error.Retryable}
	}
	return it
}

func decodeTurnItem(item map[string]types.AttributeValue) (*turnItem, error) {
	var it turnItem
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return nil, fmt.Errorf("decode turn item: %w", err)
	}
	return &it, nil
}

// turn converts the item, without its messages (see Store.loadMessages).
func (it *turnItem) turn() chat.Turn {
	t := chat.Turn{
		SessionID:     strings.TrimPrefix(it.PK, sessionPrefix),
		TurnID:        it.TurnID,
		Ordinal:       it.Ordinal,
		Status:        chat.TurnStatus(it.Status),
		Lineage:       it.Lineage.lineage(),
		InputHash:     it.InputHash,
		Usage:         protocol.Usage(it.Usage),
		Metered:       it.Metered.usage(),
		Artifacts:     artifactRefs(it.Artifacts),
		Superseded:    it.Superseded,
		Siblings:      it.Siblings.siblings(),
		FirstSequence: it.FirstSequence,
		LastSequence:  it.LastSequence,
		StartedAt:     fromMillis(it.StartedAt),
		CompletedAt:   fromMillis(it.CompletedAt),
	}
	if it.Error != nil {
		t.Error = &protocol.Diagnostic{Version: it.Error.Version, Code: it.Error.Code, Message: it.Error.Message, Retryable: it.Error.Retryable}
	}
	t.Feedback = it.Feedback.feedback()
	return t
}
