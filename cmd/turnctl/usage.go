package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/turnstream/turnstream/pkg/api"
	"github.com/turnstream/turnstream/pkg/client"
)

// maxUsagePages bounds how many pages one `turnctl usage -tenant` reads.
const maxUsagePages = 1_000

func init() {
	commands["usage"] = command{
		summary: "print what you (or, as the trusted principal, your tenant) used, and what is left",
		run:     runUsage,
	}
}

const usageUsage = `usage: turnctl usage [-period day|month] [-tenant] [-url URL] [-token TOKEN | -sigv4] [-json]

Prints your usage for the current UTC day (or month) from a turnstream
history function's GET /usage (the dev server's /history/ by default):
turns, tokens, model and tool calls, DynamoDB requests and units, then each
quota that applies with what is used, what is left and when it resets
(docs/quotas.md). -tenant prints your tenant's totals and every principal's
usage instead, following pages to the end: only the tenant's trusted
principal may. -json prints the server's report(s), one JSON line each.
-token and -sigv4 authenticate as for turnctl chat.

Exit status: 0 on success, 1 after an HTTP error (a deployment without
the usage ledger answers 404 REQUEST_NOT_FOUND), 2 for bad usage.
`

// runUsage implements `turnctl usage`.
func runUsage(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("usage", flag.ContinueOnError)
	base := fs.String("url", defaultHistoryURL(), "history function URL (default $"+historyURLEnv+", else the dev server's)")
	period := fs.String("period", api.PeriodDay, "day or month (UTC)")
	tenant := fs.Bool("tenant", false, "your tenant's usage, by principal (the trusted principal only)")
	var authn authFlags
	authn.register(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	if status, ok := parseFlags(fs, args, usageUsage, stdout, stderr); !ok {
		return status
	}
	if fs.NArg() != 0 || *period != api.PeriodDay && *period != api.PeriodMonth {
		_, _ = fmt.Fprintln(stderr, "turnctl usage: -period is day or month, and no arguments are taken")
		return 2
	}
	cl, ctx, stop, status := authn.historyClient("usage", *base, stderr)
	if cl == nil {
		return status
	}
	defer stop()
	if *tenant {
		return printTenantUsage(ctx, cl, *period, *asJSON, stdout, stderr)
	}
	r, err := cl.Usage(ctx, client.UsageOptions{Period: *period})
	if err != nil {
		reportError(stderr, "usage", err)
		return 1
	}
	if *asJSON {
		return printJSONLine(stdout, r)
	}
	_, _ = fmt.Fprintf(stdout, "%s %s (%s .. %s, UTC)\n", escapeText(r.Principal.Subject, false), escapeText(r.Period, false),
		escapeText(r.Start, false), escapeText(r.ResetsAt, false))
	printCounters(stdout, "", r.Usage)
	printLimits(stdout, r.Limits)
	return 0
}

// printTenantUsage prints every page of the tenant's report.
func printTenantUsage(ctx context.Context, cl *client.Client, period string, asJSON bool, stdout, stderr io.Writer) int {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	cursor := ""
	for pages := 0; ; pages++ {
		if pages == maxUsagePages {
			_, _ = fmt.Fprintln(stderr, "turnctl usage: stopped after", maxUsagePages, "pages")
			return 1
		}
		r, err := cl.TenantUsage(ctx, client.UsageOptions{Period: period, Limit: client.MaxPageLimit, Cursor: cursor})
		if err != nil {
			reportError(stderr, "usage", err)
			return 1
		}
		if asJSON {
			if status := printJSONLine(stdout, r); status != 0 {
				return status
			}
		} else {
			if pages == 0 {
				_, _ = fmt.Fprintf(stdout, "tenant %s %s (%s .. %s, UTC)\n", escapeText(r.Tenant, false), escapeText(r.Period, false),
					escapeText(r.Start, false), escapeText(r.ResetsAt, false))
				if r.Totals != nil {
					printCounters(stdout, "", *r.Totals)
				}
				if r.Activity != nil {
					_, _ = fmt.Fprintf(stdout, "  now: %d turns in the last minute, %d sessions running\n", r.Activity.RecentTurns, r.Activity.RunningSessions)
				}
				printLimits(stdout, r.Limits)
				_, _ = fmt.Fprintln(tw, "PRINCIPAL\tTURNS\tTOKENS IN\tTOKENS OUT\tMODEL CALLS\tTOOL CALLS")
			}
			for _, p := range r.Principals {
				u := p.Usage
				_, _ = fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", escapeText(p.Principal.Subject, false), u.Turns, u.InputTokens, u.OutputTokens, u.ModelCalls, u.ToolCalls)
			}
		}
		if !r.HasMore || r.NextCursor == nil {
			break
		}
		cursor = *r.NextCursor
	}
	if !asJSON {
		_ = tw.Flush()
	}
	return 0
}

// printCounters writes a period's counters.
func printCounters(w io.Writer, indent string, u client.UsageCounters) {
	_, _ = fmt.Fprintf(w, "%s  turns %d; tokens %d in / %d out", indent, u.Turns, u.InputTokens, u.OutputTokens)
	if u.CacheReadTokens+u.CacheWriteTokens > 0 {
		_, _ = fmt.Fprintf(w, " (cache %d read / %d written)", u.CacheReadTokens, u.CacheWriteTokens)
	}
	if u.ReasoningTokens > 0 {
		_, _ = fmt.Fprintf(w, " (%d out reasoning)", u.ReasoningTokens)
	}
	_, _ = fmt.Fprintf(w, "; model calls %d; tool calls %d\n", u.ModelCalls, u.ToolCalls)
	if u.StoreRequests > 0 {
		_, _ = fmt.Fprintf(w, "%s  DynamoDB: %d requests, %.1f read units, %.1f write units\n", indent, u.StoreRequests, u.ReadUnits, u.WriteUnits)
	}
}

// printLimits writes each quota: "limit principal.turnsPerMinute: 3 used of
// 3, 0 left, resets 2026-...".
func printLimits(w io.Writer, limits []client.LimitStatus) {
	if len(limits) == 0 {
		_, _ = fmt.Fprintln(w, "  no quota applies")
		return
	}
	for _, l := range limits {
		var b strings.Builder
		fmt.Fprintf(&b, "  limit %s.%s: %d", escapeText(l.Scope, false), escapeText(l.Name, false), l.Limit)
		if l.Used != nil && l.Remaining != nil {
			fmt.Fprintf(&b, ", %d used, %d left", *l.Used, *l.Remaining)
		}
		if l.ResetsAt != nil {
			fmt.Fprintf(&b, ", resets %s", escapeText(*l.ResetsAt, false))
		}
		_, _ = fmt.Fprintln(w, b.String())
	}
}

// printJSONLine writes v as one JSON line.
func printJSONLine(w io.Writer, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return 1
	}
	_, _ = w.Write(append(b, '\n'))
	return 0
}

// printRetryAfter adds, after an answer that said how long to wait (429
// QUOTA_EXCEEDED, 503 QUOTA_UNAVAILABLE), "turnctl <cmd>: retry in 42s"
// and the quota it named (docs/quotas.md; `turnctl usage` shows them all).
func printRetryAfter(w io.Writer, cmd string, e *client.Error) {
	wait, ok := e.RetryAfter()
	if !ok {
		return
	}
	line := fmt.Sprintf("turnctl %s: retry in %s", cmd, wait)
	if q := e.Header.Get(api.QuotaHeader); q != "" {
		line += " (quota " + escapeText(q, false) + ")"
	}
	_, _ = fmt.Fprintln(w, line)
}
