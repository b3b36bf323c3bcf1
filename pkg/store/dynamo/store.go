package dynamo

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
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
}

// Store is the DynamoDB chat.Store. Create it with New; it is safe for
// concurrent use.
type Store struct {
	client  Client
	table   *string
	now     func() time.Time
	cursors chat.CursorCodec

	mu    sync.Mutex
	memos map[string]*claimMemo // by lease token
}

var _ chat.Store = (*Store)(nil)

// maxMemos bounds the remembered claims (see claimMemo).
const maxMemos = 4096

// claimMemo is what a claim returned that later calls of the same lease
// need without reading the session item: its owner (stored on the turn
// item by SaveTurn) and its terminal window (extended by ReleaseTurn). The
// window cannot change while the lease is held: only a release (which
// ends the lease) or a takeover (which replaces the token) writes it.
type claimMemo struct {
	sessionID string
	turnID    string
	ordinal   int64
	owner     chat.Principal
	inputHash string
	window    []chat.TerminalEntry
	expiresAt time.Time
}

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
	return &Store{
		client:  client,
		table:   aws.String(opts.Table),
		now:     now,
		cursors: chat.CursorCodec{Key: append([]byte(nil), opts.CursorKey...)},
		memos:   make(map[string]*claimMemo),
	}
}

func (s *Store) remember(token string, m *claimMemo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.memos) >= maxMemos {
		cutoff := s.now().Add(-time.Hour)
		for tok, old := range s.memos {
			if old.expiresAt.Before(cutoff) {
				delete(s.memos, tok)
			}
		}
		for tok := range s.memos { // still full: forget arbitrary ones; they fall back to a read
			if len(s.memos) < maxMemos {
				break
			}
			delete(s.memos, tok)
		}
	}
	s.memos[token] = m
}

func (s *Store) memo(token string) *claimMemo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.memos[token]
}

func (s *Store) forget(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.memos, token)
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

// getSessionItem reads the session item with a consistent read; nil when
// it does not exist.
func (s *Store) getSessionItem(ctx context.Context, sessionID string) (map[string]types.AttributeValue, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      s.table,
		Key:            sessionKey(sessionID),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", sessionID, err)
	}
	if len(out.Item) == 0 {
		return nil, nil
	}
	return out.Item, nil
}

// readSession returns the session and its raw item, or nil when absent.
func (s *Store) readSession(ctx context.Context, sessionID string) (*chat.Session, *sessionItem, error) {
	item, err := s.getSessionItem(ctx, sessionID)
	if err != nil || item == nil {
		return nil, nil, err
	}
	return decodeSession(sessionID, item)
}

// GetSession implements chat.Store: one consistent GetItem.
func (s *Store) GetSession(ctx context.Context, sessionID string, p chat.Principal) (*chat.Session, error) {
	sess, _, err := s.readSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if sess == nil || !p.Owns(sess.Owner) {
		return nil, chat.ErrSessionNotFound
	}
	return sess, nil
}
