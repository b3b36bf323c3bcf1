package capacitybench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/turnstream/turnstream/internal/benchwire"
	"github.com/turnstream/turnstream/internal/dynamobench"
	"github.com/turnstream/turnstream/internal/telemetrysetup"
	"github.com/turnstream/turnstream/pkg/client"
	"github.com/turnstream/turnstream/pkg/protocol"
	"github.com/turnstream/turnstream/pkg/store/dynamo"
	"github.com/turnstream/turnstream/pkg/telemetry"
)

// Cost measures what a turn costs, for turnbench's cost section (README "What a turn
// costs"): for a 1 KB and a 16 KB answer, with checkpoints off and every
// second, the billed write and read units (the capacity section's meter:
// item sizes as AWS bills them, local secondary indexes included), the
// requests and the turn's time, of the 11th turn of a session (its
// context load reads a whole budget of 10 turns); and a history page of
// 20 turns. Lambda is billed for the invocation's time at the function's
// memory: the turn's time from its request to its last line at the echo
// model's pace (Env's echo pace; a real model's pace
// replaces it), and the history request's. The prices are AWS's
// on-demand prices below; the model's own price is the provider's and
// is not counted.

// AWS's published on-demand prices, US East (N. Virginia), as listed on
// aws.amazon.com/dynamodb/pricing/on-demand/ and
// aws.amazon.com/lambda/pricing/ (DynamoDB after the price cut of
// November 2024; compiled 2026-12-01). Check them before relying on a
// figure: prices change and differ by region.
const (
	priceWriteUnit = 0.625 / 1e6  // $ per write request unit
	priceReadUnit  = 0.125 / 1e6  // $ per read request unit
	priceGBSecond  = 0.0000133334 // $ per GB-second, arm64, first tier
	priceRequest   = 0.20 / 1e6   // $ per Lambda request
	priceLogsGB    = 0.50         // $ per GB of CloudWatch Logs ingested (the EMF documents)
	turnMemoryGB   = 512.0 / 1024 // template.yaml TurnFunction MemorySize
	pageMemoryGB   = 256.0 / 1024 // template.yaml HistoryFunction MemorySize
	costDepth      = ContextTurns + 1
)

// pricedRequest is one measured turn (or history page) of the section.
type pricedRequest struct {
	Label       string
	Answer      int // bytes; 0 for the history page
	Checkpoints bool
	Acct        *dynamobench.Account
	Took        time.Duration // request -> last line (the page: request -> answer)
	EMFBytes    int64         // the EMF documents the request wrote
	MemoryGB    float64
}

// Dollars is what the request costs at the prices above: DynamoDB
// units, Lambda GB-seconds (billed per millisecond) and the request,
// and the EMF documents' log bytes.
func (c *pricedRequest) Dollars() (dynamoDB, lambda, logs float64) {
	dynamoDB = float64(c.Acct.WriteUnits())*priceWriteUnit + c.Acct.ReadUnits()*priceReadUnit
	billed := c.Took.Round(time.Millisecond).Seconds()
	lambda = billed*c.MemoryGB*priceGBSecond + priceRequest
	logs = float64(c.EMFBytes) / 1e9 * priceLogsGB
	return
}

// CostResult is the section's measurements.
type CostResult struct {
	Turns []*pricedRequest
	Page  *pricedRequest
}

// Cost measures the turns and the history page the cost section prices
// (see above).
func Cost(ctx context.Context, e Env) (*CostResult, error) {
	m := dynamobench.NewMeter(e.Client, e.Raw)
	metered := dynamo.New(m, dynamo.Options{Table: e.Table, CursorKey: e.CursorKey})
	plain := dynamo.New(e.Client, dynamo.Options{Table: e.Table, CursorKey: e.CursorKey})
	var emf atomic.Int64
	tel, err := telemetrysetup.New(telemetry.Config{Metrics: telemetry.MetricsEMF, Namespace: telemetry.DefaultNamespace, Service: "turnbench"},
		countingWriter{&emf}, "turnbench", "turn", "history", "artifacts")
	if err != nil {
		return nil, err
	}
	wirings, closeAll, err := wiringsOf(e, metered, tel)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	hc := benchwire.NewHTTPClient(1, nil)
	defer hc.CloseIdleConnections()
	res := &CostResult{}
	var lastSession string
	for _, answer := range []int{1024, 16 << 10} {
		for _, cp := range []bool{false, true} {
			sid := benchwire.NewID()
			e.Progress("cost: %d-byte answer, checkpoints %v", answer, cp)
			if err := seed(ctx, plain, sid, costDepth-1); err != nil {
				return nil, err
			}
			w := wirings[cp]
			m.Take()
			emf.Store(0)
			log := benchwire.Follow(benchwire.Submitting(ctx, w.Client(hc), sid, benchwire.NewID(), benchwire.Ask(answer), false), false, false, nil)
			last := log.Last()
			if log.Err != nil || last == nil || last.Status != protocol.StatusComplete {
				return nil, fmt.Errorf("cost turn: %v, last line %+v", log.Err, last)
			}
			took := last.At.Sub(log.Sent)
			w.WaitIdle(30 * time.Second) // the release follows the terminal line
			label := fmt.Sprintf("%s answer, checkpoints %s", kb(answer), map[bool]string{false: "off", true: "every 1 s"}[cp])
			res.Turns = append(res.Turns, &pricedRequest{Label: label, Answer: answer, Checkpoints: cp, Acct: m.Take(), Took: took,
				EMFBytes: emf.Load(), MemoryGB: turnMemoryGB})
			lastSession = sid
		}
	}
	// A history page of 20 turns of the last session (its 11 turns).
	m.Take()
	emf.Store(0)
	start := time.Now()
	if _, _, err := benchwire.TurnsPage(ctx, wirings[false].Client(hc), lastSession, client.PageOptions{Limit: 20}); err != nil {
		return nil, fmt.Errorf("cost history page: %w", err)
	}
	res.Page = &pricedRequest{Label: "history page of 20 turns (11 stored)", Acct: m.Take(), Took: time.Since(start), EMFBytes: emf.Load(), MemoryGB: pageMemoryGB}
	return res, nil
}

// countingWriter counts the bytes written through it.
type countingWriter struct{ n *atomic.Int64 }

func (w countingWriter) Write(p []byte) (int, error) {
	w.n.Add(int64(len(p)))
	return len(p), nil
}

// CostRows renders each measured request: its units, requests and time,
// and its price per request and per million, beside the 1 KB turn
// without checkpoints.
func CostRows(res *CostResult) [][4]string {
	if res == nil || len(res.Turns) == 0 {
		return nil
	}
	base := res.Turns[0]
	bd, bl, bg := base.Dollars()
	var rows [][4]string
	for _, c := range append(res.Turns, res.Page) {
		d, l, g := c.Dollars()
		total := d + l + g
		rows = append(rows, [4]string{
			"cost: " + c.Label,
			fmt.Sprintf("%d WCU, %.1f RCU, %d requests, %d checkpoint writes; %s at %.0f MB; %d B of EMF: $%.3f per million (DynamoDB $%.3f, Lambda $%.3f, logs $%.3f)",
				c.Acct.WriteUnits(), c.Acct.ReadUnits(), c.Acct.Requests, c.Acct.CheckpointWrites, ms(c.Took), c.MemoryGB*1024, c.EMFBytes,
				total*1e6, d*1e6, l*1e6, g*1e6),
			fmt.Sprintf("1 KB, checkpoints off: $%.3f per million", (bd+bl+bg)*1e6),
			fmt.Sprintf("%.2fx", total/(bd+bl+bg)),
		})
	}
	return rows
}

// CostNotes says what the prices are and where the time comes from (the
// echo pace of e).
func CostNotes(res *CostResult, e Env) []string {
	if res == nil {
		return nil
	}
	var perCheckpoint []string
	for i := 0; i+1 < len(res.Turns); i += 2 {
		off, on := res.Turns[i], res.Turns[i+1]
		if n := on.Acct.CheckpointWrites; n > 0 {
			perCheckpoint = append(perCheckpoint, fmt.Sprintf("%s answer: %.2f WCU per checkpoint write (%d writes)",
				kb(on.Answer), float64(on.Acct.WriteUnits()-off.Acct.WriteUnits())/float64(n), n))
		}
	}
	return []string{
		fmt.Sprintf("Cost prices: DynamoDB on-demand $%.3f per million write units, $%.3f per million read units; Lambda arm64 $%.10f per GB-second and $%.2f per million requests; CloudWatch Logs $%.2f per GB ingested (AWS's published US East prices, compiled 2026-12-01). Turn times are at the echo model's pace of %.0f characters per second; the model's own price is not counted.",
			priceWriteUnit*1e6, priceReadUnit*1e6, priceGBSecond, priceRequest*1e6, priceLogsGB, float64(e.EchoChunk)/e.EchoDelay.Seconds()),
		fmt.Sprintf("Per checkpoint: %v.", perCheckpoint),
	}
}

func kb(n int) string { return fmt.Sprintf("%d KB", n>>10) }

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }
