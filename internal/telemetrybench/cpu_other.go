//go:build !unix

package telemetrybench

import "time"

// processCPU is -1 where getrusage is missing: the telemetry section's
// CPU figures are then not measured.
func processCPU() time.Duration { return -1 }
