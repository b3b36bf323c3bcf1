package dynamo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/turnstream/turnstream/pkg/chat"
)

// turnsPerSession bounds the context a lifecycle loads, so that the cost
// per turn does not grow with b.N.
const turnsPerSession = 8

// BenchmarkLifecycleDynalite measures a turn's full storage lifecycle
// (claim, context load, save, release) against dynalite or
// $DYNAMODB_ENDPOINT, beside a baseline of bare conditional UpdateItem
// calls on the same server in the same run. It reports requests/turn and
// turns/s (lifecycle) and requests/s (baseline); turns/s divided by the
// baseline's requests/s is the fraction of the server's conditional-write
// rate one turn costs. It skips when no server can be started.
func BenchmarkLifecycleDynalite(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()

	b.Run("baseline=conditional-UpdateItem", func(b *testing.B) {
		key := map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "BENCH"},
			"sk": &types.AttributeValueMemberS{Value: "COUNTER"},
		}
		e.count.Reset()
		start := time.Now()
		for b.Loop() {
			_, err := e.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                 aws.String(e.table),
				Key:                       key,
				ConditionExpression:       aws.String("attribute_not_exists(pk) OR n >= :zero"),
				UpdateExpression:          aws.String("SET n = if_not_exists(n, :zero) + :one"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":zero": &types.AttributeValueMemberN{Value: "0"}, ":one": &types.AttributeValueMemberN{Value: "1"}},
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		requests := len(e.count.Take())
		b.ReportMetric(float64(requests)/time.Since(start).Seconds(), "requests/s")
	})

	b.Run("lifecycle=claim-load-save-release", func(b *testing.B) {
		s := e.store()
		run := time.Now().UnixNano() // session ids unique to this run (-count reuses the table)
		e.count.Reset()
		turns := 0
		start := time.Now()
		for b.Loop() {
			sessionID := fmt.Sprintf("bench-%d-%d", run, turns/turnsPerSession)
			turnID := fmt.Sprintf("t%d", turns)
			turns++
			c, err := s.ClaimTurn(ctx, claimReq(sessionID, turnID))
			if err != nil {
				b.Fatal(err)
			}
			if !c.Created {
				if _, _, err := s.LoadContext(ctx, sessionID, c.Lease.Ordinal, 1000); err != nil {
					b.Fatal(err)
				}
			}
			if err := s.SaveTurn(ctx, c, turnOf(c, sessionID, textMessages(turnID, "a reply of typical length, a sentence or two"))); err != nil {
				b.Fatal(err)
			}
			if _, err := s.ReleaseTurn(ctx, chat.ReleaseRequest{Claim: c, Outcome: chat.OutcomeCompleted, Sequence: c.BaseSequence + 2}); err != nil {
				b.Fatal(err)
			}
		}
		elapsed := time.Since(start).Seconds()
		b.ReportMetric(float64(len(e.count.Take()))/float64(turns), "requests/turn")
		b.ReportMetric(float64(turns)/elapsed, "turns/s")
	})
}
