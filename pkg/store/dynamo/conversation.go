package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/chat"
)

// A principal's list of sessions (chat.ConversationStore). A session
// item enters SessionsIndex, keyed by its ownerKey and listedAt, at its
// first release that carries a listing (chat.ReleaseRequest.Listing), in
// the release's own write; each later such release moves it to the top.
// DynamoDB writes an index entry whose key moved as a delete and a put:
// 2 index write units per turn (1 for a session's first), nothing more
// on the table. The entry projects what a page shows (SessionsIndexAttributes,
// about 250 bytes), so a page is one Query. The listing adds about 180
// bytes to the session item, whose every write is billed by its size.
const (
	attrTitle      = "title"
	attrTitleKey   = "titleKey"
	attrLastStatus = "lastStatus"
	attrPreview    = "preview"
	attrFeedback   = "feedback"
)

// SessionsIndexAttributes are the non-key attributes SessionsIndex
// projects: what a page of the list shows.
var SessionsIndexAttributes = []string{attrTitle, attrTitleKey, attrCreatedAt, attrLastStatus, attrPreview}

// listWrite adds a release's listing to its update: the session's place
// in the list (listedAt, now), its last turn, and its title unless it has
// one.
func listWrite(up expression.UpdateBuilder, l *chat.Listing, now time.Time) expression.UpdateBuilder {
	if l == nil {
		return up
	}
	up = up.Set(expression.Name(AttrListedAt), expression.Value(millis(now))).
		Set(expression.Name(attrLastStatus), expression.Value(string(l.Status)))
	if l.Preview != "" {
		up = up.Set(expression.Name(attrPreview), expression.Value(l.Preview))
	} else {
		up = up.Remove(expression.Name(attrPreview))
	}
	if l.Title != "" {
		up = up.Set(expression.Name(attrTitle), expression.IfNotExists(expression.Name(attrTitle), expression.Value(l.Title))).
			Set(expression.Name(attrTitleKey), expression.IfNotExists(expression.Name(attrTitleKey), expression.Value(strings.ToLower(l.Title))))
	}
	return up
}

// listingOf returns a session item as its owner's list shows it.
func listingOf(sessionID string, si *sessionItem) *chat.SessionListing {
	l := &chat.SessionListing{
		SessionID: sessionID, Title: si.Title, CreatedAt: fromMillis(si.CreatedAt),
		LastStatus: chat.TurnStatus(si.LastStatus), Preview: si.Preview,
	}
	if si.ListedAt > 0 {
		l.ActiveAt = fromMillis(si.ListedAt)
	}
	return l
}

// sessionsBinding binds a list cursor to its principal.
func sessionsBinding(p chat.Principal) string { return "sessions\x00" + ownerKey(p) }

// ListSessions implements chat.Store: one Query of SessionsIndex, newest
// first. Without a query it reads Limit+1 entries, so that NextCursor is
// set only when more sessions exist; with one, the words filter what the
// Query read (FilterExpression on titleKey: DynamoDB bills the entries it
// read, kept or not), and a full read gives a cursor even when no more
// match.
func (s *Store) ListSessions(ctx context.Context, req chat.SessionListRequest) (*chat.SessionPage, error) {
	ctx = withPurpose(ctx, PurposeRead)
	req, err := req.Normalized()
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	owner := ownerKey(req.Principal)
	binding := sessionsBinding(req.Principal)
	var start map[string]types.AttributeValue
	if req.Cursor != "" {
		after, err := s.cursors.DecodeKey(binding, req.Cursor)
		if err != nil {
			return nil, err
		}
		if start, err = listStart(after, owner); err != nil {
			return nil, err
		}
	}
	// listedAt 0 is a session marked for deletion (delete.go).
	b := expression.NewBuilder().WithKeyCondition(expression.Key(attrOwnerKey).Equal(expression.Value(owner)).
		And(expression.Key(AttrListedAt).GreaterThan(expression.Value(0))))
	words := chat.QueryWords(req.Query)
	limit := req.Limit + 1
	if len(words) > 0 {
		limit = req.Limit
		f := expression.Contains(expression.Name(attrTitleKey), words[0])
		for _, w := range words[1:] {
			f = f.And(expression.Contains(expression.Name(attrTitleKey), w))
		}
		b = b.WithFilter(f)
	}
	e, err := build(b)
	if err != nil {
		return nil, err
	}
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 s.table,
		IndexName:                 aws.String(SessionsIndex),
		KeyConditionExpression:    e.KeyCondition(),
		FilterExpression:          e.Filter(),
		ExpressionAttributeNames:  e.Names(),
		ExpressionAttributeValues: e.Values(),
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(int32(limit)),
		ExclusiveStartKey:         start,
	})
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	page := &chat.SessionPage{Sessions: []chat.SessionListing{}}
	items := out.Items
	more := out.LastEvaluatedKey != nil
	if len(words) == 0 {
		more = len(items) > req.Limit
		items = items[:min(len(items), req.Limit)]
	}
	var last *sessionItem
	for _, item := range items {
		var si sessionItem
		if err := attributevalue.UnmarshalMap(item, &si); err != nil {
			return nil, fmt.Errorf("list sessions: decode: %w", err)
		}
		id, ok := strings.CutPrefix(si.PK, sessionPrefix)
		if !ok || si.SK != sessionSK {
			return nil, fmt.Errorf("list sessions: an entry that is no session: %s", si.PK)
		}
		page.Sessions = append(page.Sessions, *listingOf(id, &si))
		last = &si
	}
	if more {
		key := ""
		if len(words) == 0 && last != nil {
			key = listKey(last.ListedAt, strings.TrimPrefix(last.PK, sessionPrefix))
		} else if key, err = lastEvaluated(out.LastEvaluatedKey); err != nil {
			return nil, err
		}
		page.NextCursor = s.cursors.EncodeKey(binding, key)
	}
	return page, nil
}

// listKey is a list position as a cursor carries it: listedAt (epoch
// milliseconds) and the session id.
func listKey(listedAt int64, sessionID string) string {
	return strconv.FormatInt(listedAt, 10) + ":" + sessionID
}

// listStart is the ExclusiveStartKey of the list position after (listKey)
// in owner's list; ErrInvalidCursor when it is no position.
func listStart(after, owner string) (map[string]types.AttributeValue, error) {
	ms, id, ok := strings.Cut(after, ":")
	n, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil || n <= 0 || id == "" {
		return nil, chat.ErrInvalidCursor
	}
	key := sessionKey(id)
	key[attrOwnerKey] = strValue(owner)
	key[AttrListedAt] = numValue(n)
	return key, nil
}

// lastEvaluated returns the list position of a Query's LastEvaluatedKey.
func lastEvaluated(k map[string]types.AttributeValue) (string, error) {
	var v struct {
		PK       string `dynamodbav:"pk"`
		ListedAt int64  `dynamodbav:"listedAt"`
	}
	if err := attributevalue.UnmarshalMap(k, &v); err != nil {
		return "", fmt.Errorf("list sessions: last key: %w", err)
	}
	id, ok := strings.CutPrefix(v.PK, sessionPrefix)
	if !ok {
		return "", errors.New("list sessions: last key is no session's")
	}
	return listKey(v.ListedAt, id), nil
}

// RenameSession implements chat.Store: one UpdateItem conditional on the
// owner (a retry that applied passes it again). An unknown outcome is
// resolved by one consistent read: the title as written shows it
// applied. The title is no part of the lease or of the compare-and-set
// state, so the session's revision does not move: a rename never makes a
// claim or a takeover lose its race.
func (s *Store) RenameSession(ctx context.Context, sessionID string, p chat.Principal, title string) (*chat.SessionListing, error) {
	ctx = withPurpose(ctx, PurposeRename)
	title, err := chat.CheckTitle(title)
	if err != nil {
		return nil, err
	}
	cond := condition{
		expr:   "#ownerKey = :owner",
		names:  []string{attrOwnerKey},
		values: map[string]types.AttributeValue{":owner": strValue(ownerKey(p))},
	}
	up := expression.Set(expression.Name(attrTitle), expression.Value(title)).
		Set(expression.Name(attrTitleKey), expression.Value(strings.ToLower(title)))
	key := sessionKey(sessionID)
	wctx, cancel := s.writeContext(ctx)
	out, err := s.update(wctx, PurposeRename, key, up, cond, returnAllNew)
	cancel()
	item := map[string]types.AttributeValue(nil)
	switch failed, _ := conditionFailed(err); {
	case err == nil:
		item = out.Attributes
	case failed:
		return nil, chat.ErrSessionNotFound
	default:
		read, found, rerr := s.resolveRead(ctx, key)
		if rerr != nil {
			return nil, fmt.Errorf("rename session %s: %w (resolving: %v)", sessionID, err, rerr)
		}
		if !found {
			return nil, chat.ErrSessionNotFound
		}
		if _, si, derr := decodeSession(sessionID, read); derr != nil || si.OwnerKey != ownerKey(p) || si.Title != title {
			// Not applied, another principal's, or renamed since by
			// another call: the write's own error (a retry is safe).
			return nil, fmt.Errorf("rename session %s: %w", sessionID, err)
		}
		item = read
	}
	_, si, err := decodeSession(sessionID, item)
	if err != nil {
		return nil, err
	}
	return listingOf(sessionID, si), nil
}

// feedbackAV is a turn item's feedback as stored.
type feedbackAV struct {
	Rating  string `dynamodbav:"r"`
	Comment string `dynamodbav:"c,omitempty"`
	At      int64  `dynamodbav:"at"`
}

func (f *feedbackAV) feedback() *chat.Feedback {
	if f == nil {
		return nil
	}
	return &chat.Feedback{Rating: chat.Rating(f.Rating), Comment: f.Comment, At: fromMillis(f.At)}
}

// SetFeedback implements chat.Store: the turn looked up by id (one
// Query of TurnIDIndex, as PutArtifacts), then one UpdateItem of its item
// conditional on the turn id and a terminal status; its retry passes the
// condition again, and an unknown outcome is resolved by one consistent
// read (the feedback as written, or its absence).
func (s *Store) SetFeedback(ctx context.Context, sessionID, turnID string, p chat.Principal, f *chat.Feedback) (*chat.Feedback, error) {
	ctx = withPurpose(ctx, PurposeFeedback)
	if f != nil {
		if err := chat.CheckFeedback(*f); err != nil {
			return nil, err
		}
	}
	item, err := s.turnAccess(ctx, sessionID, turnID, p, false, attrOwnerKey)
	if err != nil {
		return nil, err
	}
	if st, _ := item[attrStatus].(*types.AttributeValueMemberS); st == nil || st.Value == string(chat.TurnRunning) {
		return nil, chat.ErrTurnNotFound
	}
	cond := condition{expr: "#turnId = :turnId AND #status <> :running", names: []string{AttrTurnID, attrStatus},
		values: map[string]types.AttributeValue{":turnId": strValue(turnID), ":running": strValue(string(chat.TurnRunning))}}
	var want *feedbackAV
	up := expression.Remove(expression.Name(attrFeedback))
	if f != nil {
		want = &feedbackAV{Rating: string(f.Rating), Comment: f.Comment, At: millis(s.now())}
		av, err := attributevalue.MarshalMap(want)
		if err != nil {
			return nil, fmt.Errorf("encode feedback: %w", err)
		}
		up = expression.Set(expression.Name(attrFeedback), expression.Value(&types.AttributeValueMemberM{Value: av}))
	}
	key := map[string]types.AttributeValue{AttrPK: item[AttrPK], AttrSK: item[AttrSK]}
	err = s.resolvedWrite(ctx, PurposeFeedback, key, up, cond, func(item map[string]types.AttributeValue) bool {
		if item == nil {
			return false
		}
		it, err := decodeTurnItem(item)
		switch {
		case err != nil:
			return false
		case want == nil:
			return it.Feedback == nil
		}
		return it.Feedback != nil && *it.Feedback == *want
	})
	if failed, _ := conditionFailed(err); failed {
		return nil, chat.ErrTurnNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("feedback on turn %s: %w", turnID, err)
	}
	return want.feedback(), nil
}
