package fate

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
)

// Config says what Run runs. The zero value of every field but DevServer
// takes its default.
type Config struct {
	// Seed makes the schedules: schedule i draws from a generator seeded
	// with (Seed, i), so one seed always yields the same plans (their
	// timing on a machine still varies).
	Seed uint64
	// Schedules is how many schedules run (default 20); Only, when set,
	// runs just those schedule indexes of the seed (to reproduce one).
	Schedules int
	Only      []int
	// Concurrency is how many schedules run at once, each on its own
	// session (default 4).
	Concurrency int
	// Processes is how many dev servers share the table (default 3,
	// at least 2).
	Processes int
	// DevServer is the dev server binary (cmd/devserver). Required.
	DevServer string
	// Endpoint is the DynamoDB API server (dynalite); empty starts the
	// pinned dynalite from Root's node_modules for the run.
	Endpoint string
	// Root is the module root, to find node_modules/.bin/dynalite when
	// Endpoint is empty.
	Root string
	// Dir receives the dev servers' logs; empty means a temporary
	// directory, removed at the end unless KeepLogs or a violation was
	// found.
	Dir      string
	KeepLogs bool
	// Timelines keeps every schedule's timeline in the Report, not only
	// those of the schedules with violations.
	Timelines bool
	// Timings are the dev servers' settings (defaults: DefaultTimings,
	// the short lease; ProductTimings is the product's default lease).
	// The mix of schedule kinds follows Timings.Name (Kinds).
	Timings Timings
	// Kinds, when set, draws schedules of these kinds only (Kinds lists
	// them); otherwise each schedule's kind is drawn with the weights of
	// its lease (KindWeights).
	Kinds []string
	// QuotaProcesses is how many more dev servers run with a principal
	// turnsPerMinute quota of QuotaTurnsPerMinute (QUOTAS), for the quota
	// schedules (default 2; the other schedules never reach them).
	QuotaProcesses      int
	QuotaTurnsPerMinute int
	// Logf, when set, receives progress lines.
	Logf func(format string, args ...any)
}

// Timings are the dev servers' turn settings (pkg/config's variables)
// and the harness's pace.
type Timings struct {
	// Name is "short" or "default" (LeaseShort, LeaseDefault): which mix
	// of schedule kinds a run draws (KindWeights).
	Name               string
	Lease              time.Duration // LEASE_DURATION
	CheckpointInterval time.Duration // CHECKPOINT_INTERVAL
	ResumePoll         time.Duration // RESUME_POLL_INTERVAL
	AttemptTimeout     time.Duration // DYNAMODB_ATTEMPT_TIMEOUT
	EchoDelay          time.Duration // ECHO_DELAY (the echo model's pause per 4 runes)
	TurnTimeout        time.Duration // TURN_TIMEOUT
	CleanupReserve     time.Duration // CLEANUP_RESERVE
	// ProgressGrace is how long after a checkpoint fault window ends the
	// I5 check gives a turn's checkpoints to move again (default 1.5 s,
	// seven checkpoint intervals).
	ProgressGrace time.Duration
}

// DefaultTimings are short, so that leases expire within a schedule:
// a 2 s lease renewed every 667 ms, checkpoints every 200 ms, resumes
// polling every 100 ms, attempts cut at 300 ms, and an echo model that
// streams a 300-600 rune answer in 3-6 s.
var DefaultTimings = Timings{
	Name:               LeaseShort,
	Lease:              2 * time.Second,
	CheckpointInterval: 200 * time.Millisecond,
	ResumePoll:         100 * time.Millisecond,
	AttemptTimeout:     300 * time.Millisecond,
	EchoDelay:          40 * time.Millisecond,
	TurnTimeout:        15 * time.Second,
	CleanupReserve:     2 * time.Second,
	ProgressGrace:      1500 * time.Millisecond,
}

// ProductTimings are the product's own defaults (pkg/config): a 30 s
// lease renewed every 10 s, checkpoints every second, resumes polling
// every 250 ms, attempts cut at 1 s, a 5 s cleanup reserve. Only the
// deadline is shorter than the product's 5 minutes (2 minutes: no turn
// of the harness streams for more than a minute, and a stream the
// harness gives up on is waited for twice its deadline); the echo model
// keeps DefaultTimings' pace. A schedule that waits for a lease to
// expire takes 30 s and more here: this lease's mix (KindWeights) draws
// mostly what the long lease changes.
var ProductTimings = Timings{
	Name:               LeaseDefault,
	Lease:              30 * time.Second,
	CheckpointInterval: time.Second,
	ResumePoll:         250 * time.Millisecond,
	AttemptTimeout:     time.Second,
	EchoDelay:          40 * time.Millisecond,
	TurnTimeout:        2 * time.Minute,
	CleanupReserve:     5 * time.Second,
	ProgressGrace:      7 * time.Second,
}

// The leases a run can take (cmd/turnbench -fate-lease).
const (
	LeaseShort   = "short"   // DefaultTimings: 2 s
	LeaseDefault = "default" // ProductTimings: the product's 30 s
)

// TimingsFor returns the timings of a lease name: LeaseShort or
// LeaseDefault.
func TimingsFor(lease string) (Timings, error) {
	switch lease {
	case LeaseShort:
		return DefaultTimings, nil
	case LeaseDefault:
		return ProductTimings, nil
	}
	return Timings{}, fmt.Errorf("fate: lease %q: want %s or %s", lease, LeaseShort, LeaseDefault)
}

func (c Config) withDefaults() Config {
	if c.Schedules == 0 {
		c.Schedules = 20
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.Processes == 0 {
		c.Processes = 3
	}
	if c.QuotaProcesses == 0 {
		c.QuotaProcesses = 2
	}
	if c.QuotaTurnsPerMinute == 0 {
		c.QuotaTurnsPerMinute = 5
	}
	if c.Timings.Name == "" {
		c.Timings.Name = LeaseShort
		if c.Timings.Lease >= 10*time.Second {
			c.Timings.Name = LeaseDefault
		}
	}
	t, d := &c.Timings, DefaultTimings
	for _, f := range []struct {
		v *time.Duration
		d time.Duration
	}{
		{&t.Lease, d.Lease}, {&t.CheckpointInterval, d.CheckpointInterval}, {&t.ResumePoll, d.ResumePoll},
		{&t.AttemptTimeout, d.AttemptTimeout}, {&t.EchoDelay, d.EchoDelay}, {&t.TurnTimeout, d.TurnTimeout},
		{&t.CleanupReserve, d.CleanupReserve}, {&t.ProgressGrace, d.ProgressGrace},
	} {
		if *f.v == 0 {
			*f.v = f.d
		}
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	if c.DevServer == "" {
		errs = append(errs, errors.New("fate: Config.DevServer: the dev server binary is required"))
	} else if _, err := os.Stat(c.DevServer); err != nil {
		errs = append(errs, fmt.Errorf("fate: Config.DevServer: %w", err))
	}
	if c.Processes < 2 {
		errs = append(errs, errors.New("fate: Config.Processes: at least 2"))
	}
	if c.Schedules < 0 || c.Concurrency < 1 {
		errs = append(errs, errors.New("fate: Config.Schedules and Concurrency: want >= 0 and >= 1"))
	}
	if c.Endpoint == "" && c.Root == "" {
		errs = append(errs, errors.New("fate: Config.Endpoint or Config.Root: name a DynamoDB API server or the module root holding dynalite"))
	}
	for _, k := range c.Kinds {
		if !slices.Contains(Kinds, k) {
			errs = append(errs, fmt.Errorf("fate: Config.Kinds: %q is not a schedule kind (%v)", k, Kinds))
		}
	}
	if c.Timings.Name != LeaseShort && c.Timings.Name != LeaseDefault {
		errs = append(errs, fmt.Errorf("fate: Config.Timings.Name: %q, want %s or %s", c.Timings.Name, LeaseShort, LeaseDefault))
	}
	if c.QuotaProcesses < 1 || c.QuotaTurnsPerMinute < 1 {
		errs = append(errs, errors.New("fate: Config.QuotaProcesses and QuotaTurnsPerMinute: want >= 1"))
	}
	for _, i := range c.Only {
		if i < 0 {
			errs = append(errs, fmt.Errorf("fate: Config.Only: schedule %d", i))
		}
	}
	return errors.Join(errs...)
}

// env is the dev server environment of these timings.
func (t Timings) env() []string {
	ms := func(d time.Duration) string { return fmt.Sprint(d.Milliseconds()) }
	return []string{
		"LEASE_DURATION=" + ms(t.Lease),
		"CHECKPOINT_INTERVAL=" + ms(t.CheckpointInterval),
		"RESUME_POLL_INTERVAL=" + ms(t.ResumePoll),
		"DYNAMODB_ATTEMPT_TIMEOUT=" + ms(t.AttemptTimeout),
		"ECHO_DELAY=" + ms(t.EchoDelay),
		"ECHO_CHUNK_RUNES=4",
		"TURN_TIMEOUT=" + ms(t.TurnTimeout),
		"CLEANUP_RESERVE=" + ms(t.CleanupReserve),
		// Lines about every 100 ms whatever their size: more lines to
		// compare, without the size pacing of a long answer.
		"SNAPSHOT_INTERVAL=100",
		"SNAPSHOT_BYTES_PER_SECOND=1048576",
		"SNAPSHOT_MAX_GAP=100",
	}
}

// runesPerSecond is the echo model's pace under t (4 runes per pause).
func (t Timings) runesPerSecond() float64 {
	return 4 / t.EchoDelay.Seconds()
}
