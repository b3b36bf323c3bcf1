package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/chat"
)

// Client is the subset of the DynamoDB API the Store calls;
// *dynamodb.Client implements it. Tests wrap it or add middleware to count
// requests.
type Client interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Options configures a Store.
type Options struct {
	// Table is the table name (config TABLE_NAME), created by CreateTable
	// or the SAM template.
	Table string
	// Now is the clock; nil means time.Now. Lease expiry is compared with
	// it at millisecond precision.
	Now func() time.Time
	// CursorKey is the HMAC key of page cursors (chat.CursorCodec, at least
	// 16 bytes), shared by every instance serving the table.
	CursorKey []byte
	// ResolveShare is the part of a write's time kept for the one
	// consistent read that resolves an unknown outcome: a write whose
	// context has a deadline runs until ResolveShare before it (at most a
	// quarter of the time left), so that the read still fits before the
	// deadline. With no deadline the read gets ResolveShare. 0 means
	// DefaultResolveShare.
	ResolveShare time.Duration
	// TerminalWindow is how many terminal turns the session item keeps
	// for replay protection (chat.WindowSize: 0 means
	// chat.DefaultTerminalWindow, at most chat.TerminalWindowSize). It is
	// the claim's fast path: every claim and release rewrites the session
	// item, so its size is paid twice a turn, and a claim whose full window
	// does not hold its turn id pays one Query of TurnIDIndex instead.
	TerminalWindow int
	// Ledger configures the usage ledger (ledger.go, docs/quotas.md):
	// its retention, and whether the turns the store decides are counted.
	Ledger chat.LedgerOptions
}

// DefaultResolveShare is the default Options.ResolveShare.
const DefaultResolveShare = time.Second

// Store is the DynamoDB chat.Store. Create it with New; it is safe for
// concurrent use and keeps no per-lease state: every process serving the
// table behaves the same.
type Store struct {
	client       Client
	table        *string
	now          func() time.Time
	cursors      chat.CursorCodec
	resolveShare time.Duration
	window       int
	ledger       chat.LedgerOptions
}

var _ chat.Store = (*Store)(nil)

// New returns a Store over client. It panics if opts.Table is empty or
// opts.CursorKey is shorter than 16 bytes (programming errors).
func New(client Client, opts Options) *Store {
	if opts.Table == "" {
		panic("dynamo: Options.Table is empty")
	}
	if len(opts.CursorKey) < 16 {
		panic("dynamo: Options.CursorKey is shorter than 16 bytes")
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	share := opts.ResolveShare
	if share <= 0 {
		share = DefaultResolveShare
	}
	return &Store{
		client:       client,
		table:        aws.String(opts.Table),
		now:          now,
		cursors:      chat.CursorCodec{Key: append([]byte(nil), opts.CursorKey...)},
		resolveShare: share,
		window:       chat.WindowSize(opts.TerminalWindow),
		ledger:       opts.Ledger,
	}
}

// writeContext returns the context of a write under ctx: it ends early
// enough to leave time for the read of resolveContext.
func (s *Store) writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	share := min(s.resolveShare, time.Until(d)/4)
	return context.WithDeadline(ctx, d.Add(-share))
}

// resolveContext returns the context of the consistent read that resolves
// a write whose outcome is unknown (it failed without a condition
// failure: a lost answer the SDK gave up retrying, a 500 after apply, an
// attempt timeout, or ctx ending mid-write). It is detached from ctx's
// cancellation, since the write may have applied whatever ctx says, and
// ends at ctx's deadline, or after ResolveShare when ctx has none or its
// deadline has passed.
func (s *Store) resolveContext(ctx context.Context) (context.Context, context.CancelFunc) {
	detached := context.WithoutCancel(ctx)
	if d, ok := ctx.Deadline(); ok && time.Until(d) > 0 {
		return context.WithDeadline(detached, d)
	}
	return context.WithTimeout(detached, s.resolveShare)
}

// resolveRead reads key consistently under resolveContext(ctx), as
// getItem.
func (s *Store) resolveRead(ctx context.Context, key map[string]types.AttributeValue) (item map[string]types.AttributeValue, found bool, err error) {
	rctx, cancel := s.resolveContext(ctx)
	defer cancel()
	return s.getItem(rctx, key)
}

// getItem reads key with a consistent read. found is false (and item nil)
// when the item does not exist.
func (s *Store) getItem(ctx context.Context, key map[string]types.AttributeValue) (item map[string]types.AttributeValue, found bool, err error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      s.table,
		Key:            key,
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, false, err
	}
	if len(out.Item) == 0 {
		return nil, false, nil
	}
	return out.Item, true, nil
}

// newToken returns a random lease token (128 bits, URL-safe base64).
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// conditionFailed reports whether err is a failed condition and returns
// the item the server sent with it (nil when it sent none: dynalite and
// requests without ReturnValuesOnConditionCheckFailure).
func conditionFailed(err error) (bool, map[string]types.AttributeValue) {
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return true, ccf.Item
	}
	return false, nil
}

// build finalises an expression builder; a failure is a programming error
// in this package, returned wrapped rather than panicking.
func build(b expression.Builder) (expression.Expression, error) {
	e, err := b.Build()
	if err != nil {
		return e, fmt.Errorf("dynamo: build expression: %w", err)
	}
	return e, nil
}

// errNoSession is readSession's error for a session that does not exist.
var errNoSession = errors.New("dynamo: no such session")

// readSession returns the session and its raw item, read consistently:
// errNoSession when it does not exist.
func (s *Store) readSession(ctx context.Context, sessionID string) (*chat.Session, *sessionItem, error) {
	item, found, err := s.getItem(ctx, sessionKey(sessionID))
	if err != nil {
		return nil, nil, fmt.Errorf("read session %s: %w", sessionID, err)
	}
	if !found {
		return nil, nil, errNoSession
	}
	return decodeSession(sessionID, item)
}

// GetSession implements chat.Store: one consistent GetItem; an expired
// lease is decided first (fate.go). When that cannot be done, the
// session is returned as read, its expired lease shown.
func (s *Store) GetSession(ctx context.Context, sessionID string, p chat.Principal) (*chat.Session, error) {
	ctx = withPurpose(ctx, PurposeRead)
	item, found, err := s.getItem(ctx, sessionKey(sessionID))
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", sessionID, err)
	}
	if !found {
		return nil, chat.ErrSessionNotFound
	}
	sess, _, err := decodeSession(sessionID, item)
	if err != nil {
		return nil, err
	}
	if !p.Owns(sess.Owner) {
		return nil, chat.ErrSessionNotFound
	}
	if l := sess.ActiveTurn; l != nil && !l.ExpiresAt.After(s.now()) {
		if after, err := s.settleSession(ctx, sessionID, item); err == nil {
			if decided, _, err := decodeSession(sessionID, after); err == nil {
				return decided, nil
			}
		}
	}
	return sess, nil
}
