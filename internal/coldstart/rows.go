package coldstart

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Rows are the cold-start, size and peak memory rows of the bootstraps
// (turnbench's table: figure, measured, baseline, measured vs baseline),
// and the turn bootstrap's with upstream jsonschema when measured.
func (rep *Report) Rows(set Settings) [][4]string {
	var rows [][4]string
	add := func(figure, measured, baseline, vs string) {
		rows = append(rows, [4]string{figure, measured, baseline, vs})
	}
	native := rep.NativeArch
	base := rep.Runs[Baseline]
	build := `-tags lambda.norpc -trimpath -ldflags "-s -w"`
	if !set.ReleaseBuilds {
		build = "the test build, internal/lambdabin"
	}
	size := func(name string) string {
		var sizes []string
		if s := rep.Sizes["arm64"][name]; s > 0 {
			sizes = append(sizes, fmt.Sprintf("%.2f MiB linux/arm64", mib(s)))
		}
		if n := rep.Sizes[native][name]; n > 0 && native != "arm64" {
			sizes = append(sizes, fmt.Sprintf("%.2f MiB linux/%s (run)", mib(n), native))
		}
		if len(sizes) == 0 {
			return "-"
		}
		return strings.Join(sizes, ", ")
	}
	for _, fn := range functions {
		cr := rep.Runs[fn]
		if cr == nil || len(cr.ColdStarts) == 0 || base == nil || len(base.ColdStarts) == 0 {
			why := skipReason(rep.Err)
			if rep.Err == nil && !slices.Contains(set.Functions, fn) {
				why = "-quick runs the turn bootstrap only"
			}
			add(fmt.Sprintf("%s bootstrap: cold start", fn), "not measured: "+why, "-", "-")
			continue
		}
		c, b := median(cr.ColdStarts), median(base.ColdStarts)
		add(fmt.Sprintf("%s bootstrap: cold start under aws-lambda-rie, exec -> first Runtime API request (median of %d; first invoke end to end)", fn, len(cr.ColdStarts)),
			fmt.Sprintf("%s (%s)", ms(c), ms(median(cr.FirstInvoke))),
			fmt.Sprintf("minimal Go function URL bootstrap: %s (%s)", ms(b), ms(median(base.FirstInvoke))),
			signedMS(c-b))
	}
	for _, fn := range functions {
		if rep.Sizes["arm64"][fn] == 0 && rep.Sizes[native][fn] == 0 {
			continue
		}
		ratio := "-"
		if a, b := rep.Sizes["arm64"][fn], rep.Sizes["arm64"][Baseline]; a > 0 && b > 0 {
			ratio = fmt.Sprintf("%.1fx (arm64)", float64(a)/float64(b))
		} else if a, b := rep.Sizes[native][fn], rep.Sizes[native][Baseline]; a > 0 && b > 0 {
			ratio = fmt.Sprintf("%.1fx (%s)", float64(a)/float64(b), native)
		}
		add(fmt.Sprintf("%s bootstrap: binary size (%s)", fn, build),
			size(fn), "minimal bootstrap: "+size(Baseline), ratio)
	}
	for _, fn := range functions {
		cr := rep.Runs[fn]
		if cr == nil || cr.PeakRSSKiB == 0 || base == nil || base.PeakRSSKiB == 0 {
			continue
		}
		add(fmt.Sprintf("%s bootstrap: peak RSS (VmHWM) after %d invocations under the emulator", fn, cr.Invocations+1),
			fmt.Sprintf("%.1f MiB", float64(cr.PeakRSSKiB)/1024),
			fmt.Sprintf("minimal bootstrap, same invocations: %.1f MiB", float64(base.PeakRSSKiB)/1024),
			fmt.Sprintf("%+.1f MiB", float64(cr.PeakRSSKiB-base.PeakRSSKiB)/1024))
	}
	rows = append(rows, rep.telemetryRows()...)
	rows = append(rows, rep.mcpRows()...)
	return append(rows, rep.upstreamRows()...)
}

// mcpRows compare the turn bootstrap built with the MCP client with the
// default one (Settings.MCP), in the same run: what linking the MCP SDK
// costs a cold start, and its size on linux/arm64.
func (rep *Report) mcpRows() [][4]string {
	def, m := rep.Runs["turn"], rep.Runs[MCPTurn]
	if def == nil || m == nil || len(def.ColdStarts) == 0 || len(m.ColdStarts) == 0 {
		return nil
	}
	d, mm := median(def.ColdStarts), median(m.ColdStarts)
	cpu, vs := "", signedMS(mm-d)
	if !slices.Contains(def.CPU, -1) && !slices.Contains(m.CPU, -1) {
		dc, mc := median(def.CPU), median(m.CPU)
		cpu = fmt.Sprintf("; CPU until then %s (default %s)", ms(mc), ms(dc))
		vs += fmt.Sprintf("; CPU %s", signedMS(mc-dc))
	}
	if arm := rep.Sizes["arm64"]; arm["turn"] > 0 && arm[MCPTurn] > 0 {
		vs += fmt.Sprintf("; linux/arm64 size %.2f MB vs %.2f MB (%.2fx)", float64(arm[MCPTurn])/1e6, float64(arm["turn"])/1e6, float64(arm[MCPTurn])/float64(arm["turn"]))
	}
	rows := [][4]string{{
		fmt.Sprintf("turn bootstrap with the MCP client built in (-tags tools.mcp): cold start under aws-lambda-rie (median of %d, runs alternating with the default's)", len(m.ColdStarts)),
		fmt.Sprintf("%s%s; runs: %s", ms(mm), cpu, msList(m.ColdStarts)),
		fmt.Sprintf("default turn bootstrap: %s; runs: %s", ms(d), msList(def.ColdStarts)),
		vs + " (MCP minus default)",
	}}
	if m.Init != nil && def.Init != nil && m.Init.CPU >= 0 && def.Init.CPU >= 0 {
		rows = append(rows, [4]string{
			fmt.Sprintf("turn bootstrap with the MCP client built in: CPU until the first Runtime API request; package inits' own clock (median of %d direct runs)", m.Init.Runs),
			fmt.Sprintf("%s; inits %s", ms(m.Init.CPU), ms(m.Init.InitClock)),
			fmt.Sprintf("default turn bootstrap: %s; inits %s", ms(def.Init.CPU), ms(def.Init.InitClock)),
			fmt.Sprintf("CPU %s; inits %s", signedMS(m.Init.CPU-def.Init.CPU), signedMS(m.Init.InitClock-def.Init.InitClock)),
		})
	}
	return rows
}

// telemetryRows compare the turn bootstrap's cold start and start-up CPU
// with EMF on (the Lambda default) and with EMF and tracing on against
// telemetry off, when measured (Settings.Telemetry).
func (rep *Report) telemetryRows() [][4]string {
	off := rep.Runs[TelemetryOffTurn]
	if off == nil || len(off.ColdStarts) == 0 {
		return nil
	}
	var rows [][4]string
	for _, v := range []struct{ name, label string }{{"turn", "EMF metrics on (the default)"}, {TracingTurn, "EMF metrics and tracing on"}} {
		cr := rep.Runs[v.name]
		if cr == nil || len(cr.ColdStarts) == 0 {
			continue
		}
		c, b := median(cr.ColdStarts), median(off.ColdStarts)
		measured, base, vs := ms(c), "TELEMETRY_METRICS=off: "+ms(b), fmt.Sprintf("%s (%.3fx)", signedMS(c-b), float64(c)/float64(b))
		if !slices.Contains(cr.CPU, -1) && !slices.Contains(off.CPU, -1) {
			cc, bc := median(cr.CPU), median(off.CPU)
			measured += "; CPU until then " + ms(cc)
			base += "; CPU " + ms(bc)
			vs += fmt.Sprintf("; CPU %s (%.3fx)", signedMS(cc-bc), float64(cc)/float64(bc))
		}
		rows = append(rows, [4]string{
			fmt.Sprintf("turn bootstrap, %s: cold start under aws-lambda-rie (median of %d, runs alternating)", v.label, len(cr.ColdStarts)),
			measured, base, vs,
		})
		if cr.Init != nil && off.Init != nil && cr.Init.CPU >= 0 && off.Init.CPU >= 0 {
			rows = append(rows, [4]string{
				fmt.Sprintf("turn bootstrap, %s: CPU until the first Runtime API request (median of %d direct runs)", v.label, cr.Init.Runs),
				ms(cr.Init.CPU), "TELEMETRY_METRICS=off: " + ms(off.Init.CPU), signedMS(cr.Init.CPU - off.Init.CPU),
			})
		}
	}
	if a := rep.Runs["turn"]; a != nil && a.Init != nil && a.Init.ByGroup["opentelemetry"] > 0 {
		rows = append(rows, [4]string{"turn bootstrap: package inits of go.opentelemetry.io (linked whether on or off)",
			ms(a.Init.ByGroup["opentelemetry"]), "all package inits: " + ms(a.Init.InitClock), "-"})
	}
	return rows
}

// DetailRows render the cold starts in detail (turnbench -only
// coldstart): per bootstrap the emulator's figures with their CPU time,
// the turn bootstrap under turnbench's own environment, and the init
// account of each bootstrap beside the minimal one's.
func (rep *Report) DetailRows() [][4]string {
	var rows [][4]string
	add := func(figure, measured, Baseline, vs string) {
		rows = append(rows, [4]string{figure, measured, Baseline, vs})
	}
	base := rep.Runs[Baseline]
	if base == nil || len(base.ColdStarts) == 0 {
		add("cold starts", "not measured: "+skipReason(rep.Err), "-", "-")
		return rows
	}
	b := median(base.ColdStarts)
	for _, name := range append(slices.Clone(functions), UpstreamTurn, HostEnvTurn) {
		cr := rep.Runs[name]
		if cr == nil || len(cr.ColdStarts) == 0 {
			continue
		}
		c := median(cr.ColdStarts)
		cpu, bcpu := "", ""
		vs := fmt.Sprintf("%s; %.1fx", signedMS(c-b), float64(c)/float64(b))
		if !slices.Contains(cr.CPU, -1) && !slices.Contains(base.CPU, -1) {
			cc, bc := median(cr.CPU), median(base.CPU)
			cpu, bcpu = fmt.Sprintf("; CPU until then %s", ms(cc)), fmt.Sprintf("; CPU %s", ms(bc))
			vs += fmt.Sprintf("; CPU %s, %.1fx", signedMS(cc-bc), float64(cc)/float64(bc))
		}
		add(fmt.Sprintf("%s bootstrap: cold start under aws-lambda-rie, exec -> first Runtime API request (median of %d; first invoke end to end)", name, len(cr.ColdStarts)),
			fmt.Sprintf("%s (%s)%s; runs: %s", ms(c), ms(median(cr.FirstInvoke)), cpu, msList(cr.ColdStarts)),
			fmt.Sprintf("minimal Go function URL bootstrap: %s (%s)%s; runs: %s", ms(b), ms(median(base.FirstInvoke)), bcpu, msList(base.ColdStarts)),
			vs)
	}
	bi := base.Init
	for _, fn := range append(slices.Clone(functions), UpstreamTurn) {
		if rep.Runs[fn] == nil || rep.Runs[fn].Init == nil || bi == nil {
			continue
		}
		a := rep.Runs[fn].Init
		add(fmt.Sprintf("%s bootstrap: start-up account (direct exec, GODEBUG=inittrace=1, stand-in Runtime API, median of %d)", fn, a.Runs),
			fmt.Sprintf("exec -> first Runtime API request %s, %s; package inits done at %s after the runtime started, their own clock %s (%s), %.1f MiB allocated; the rest (exec, runtime start, main) %s",
				ms(a.ToFirstRequest), cpuWait(a), ms(a.InitDone), ms(a.InitClock), groupList(a.ByGroup), mib(a.InitAllocs), ms(a.ToFirstRequest-a.InitDone)),
			fmt.Sprintf("minimal: %s, %s; inits done at %s, own clock %s; the rest %s",
				ms(bi.ToFirstRequest), cpuWait(bi), ms(bi.InitDone), ms(bi.InitClock), ms(bi.ToFirstRequest-bi.InitDone)),
			fmt.Sprintf("%s elapsed; CPU %s", signedMS(a.ToFirstRequest-bi.ToFirstRequest), cpuRatio(a, bi)))
	}
	rows = append(rows, rep.telemetryRows()...)
	rows = append(rows, rep.mcpRows()...)
	return append(rows, rep.upstreamRows()...)
}

// upstreamRows compare the turn bootstrap built against upstream
// jsonschema with the one built against the fork (Settings.Upstream), in
// the same run: what the fork saves at a cold start.
func (rep *Report) upstreamRows() [][4]string {
	fork, up := rep.Runs["turn"], rep.Runs[UpstreamTurn]
	if fork == nil || up == nil || len(fork.ColdStarts) == 0 || len(up.ColdStarts) == 0 {
		return nil
	}
	f, u := median(fork.ColdStarts), median(up.ColdStarts)
	cpu, vs := "", signedMS(u-f)
	if !slices.Contains(fork.CPU, -1) && !slices.Contains(up.CPU, -1) {
		fc, uc := median(fork.CPU), median(up.CPU)
		cpu = fmt.Sprintf("; CPU until then %s (fork %s)", ms(uc), ms(fc))
		vs += fmt.Sprintf("; CPU %s", signedMS(uc-fc))
	}
	return [][4]string{{
		fmt.Sprintf("turn bootstrap built against upstream jsonschema v6 (no third_party fork): cold start under aws-lambda-rie (median of %d, runs alternating with the fork's)", len(up.ColdStarts)),
		fmt.Sprintf("%s%s; runs: %s", ms(u), cpu, msList(up.ColdStarts)),
		fmt.Sprintf("turn bootstrap with the fork (go.mod's replace): %s; runs: %s", ms(f), msList(fork.ColdStarts)),
		vs + " (upstream minus fork)",
	}}
}

// skipReason is err's text, or "skipped".
func skipReason(err error) string {
	if err == nil {
		return "skipped"
	}
	return err.Error()
}

// ms formats d in milliseconds with two decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// signedMS formats d in milliseconds with an explicit sign.
func signedMS(d time.Duration) string {
	return fmt.Sprintf("%+.2f ms", float64(d)/float64(time.Millisecond))
}

// median is the median of d (nearest rank; 0 for none).
func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(d))
	return s[(len(s)+1)/2-1]
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// cpuWait formats an account's CPU and CPU wait times.
func cpuWait(a *initAccount) string {
	if a.CPU < 0 {
		return "CPU time unknown"
	}
	return fmt.Sprintf("CPU %s (waited for a CPU %s)", ms(a.CPU), ms(a.Wait))
}

// cpuRatio formats a's CPU time against b's.
func cpuRatio(a, b *initAccount) string {
	if a.CPU < 0 || b.CPU <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%s, %.1fx", signedMS(a.CPU-b.CPU), float64(a.CPU)/float64(b.CPU))
}

// msList formats durations as "1.23, 4.56" (ms).
func msList(d []time.Duration) string {
	s := make([]string, len(d))
	for i, v := range d {
		s[i] = fmt.Sprintf("%.2f", float64(v)/float64(time.Millisecond))
	}
	return strings.Join(s, ", ") + " ms"
}

// groupList formats an init account's groups, largest first.
func groupList(m map[string]time.Duration) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(m[b], m[a]) })
	s := make([]string, 0, len(keys))
	for _, k := range keys {
		s = append(s, fmt.Sprintf("%s %.2f", k, float64(m[k])/float64(time.Millisecond)))
	}
	return strings.Join(s, ", ") + " ms"
}
