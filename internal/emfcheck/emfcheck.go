// Package emfcheck checks a CloudWatch Embedded Metric Format document
// against the structure the EMF specification publishes ("Specification:
// Embedded metric format", Amazon CloudWatch User Guide), for tests of
// what turnstream writes (pkg/telemetry). It is not linked into the
// functions.
//
// The rules checked, each from the specification or from the CloudWatch
// limits it names:
//
//   - the document is one JSON object (no duplicate member, nothing
//     around it), at most 1 MiB;
//   - the root has the member _aws, an object with Timestamp (a
//     non-negative integer, milliseconds since the epoch) and
//     CloudWatchMetrics (an array of MetricDirective), optionally
//     LogGroupName (a string), and no other member;
//   - a MetricDirective has exactly Namespace (1..255 characters of
//     [A-Za-z0-9._#:/-]), Dimensions (an array of DimensionSet) and
//     Metrics (an array of at most 100 MetricDefinition, no name twice);
//   - a DimensionSet is an array of at most 30 dimension names, each
//     naming a root member whose value is a string of 1..1024 bytes;
//   - a MetricDefinition has Name (1..255 characters, naming a root member
//     whose value is a number or an array of 1..100 numbers), optionally
//     Unit (one of the CloudWatch units) and StorageResolution (1 or 60),
//     and no other member;
//   - no root member is both a dimension and a metric.
package emfcheck

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Units are the CloudWatch units a MetricDefinition may name.
var Units = []string{
	"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
	"Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count",
	"Bytes/Second", "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second",
	"Bits/Second", "Kilobits/Second", "Megabits/Second", "Gigabits/Second", "Terabits/Second",
	"Count/Second", "None",
}

var namespacePattern = regexp.MustCompile(`^[A-Za-z0-9._#:/-]{1,255}$`)

// Document is a checked document: its namespace(s), the metric values by
// name, the dimension sets, and every root member.
type Document struct {
	Namespaces []string
	// Metrics holds each metric's values (one for a number).
	Metrics map[string][]float64
	// Units holds each metric's unit ("" when none is named).
	Units map[string]string
	// DimensionSets holds every dimension set of every directive.
	DimensionSets [][]string
	// Root holds every root member.
	Root map[string]any
}

// Check checks line (one document, a trailing newline allowed) and
// returns it, or the first rule it breaks.
func Check(line []byte) (*Document, error) {
	if len(line) > 1<<20 {
		return nil, fmt.Errorf("emf: document of %d bytes, over 1 MiB", len(line))
	}
	var root map[string]jsontext.Value
	if err := json.Unmarshal(line, &root); err != nil {
		return nil, fmt.Errorf("emf: not one JSON object without duplicate members: %w", err)
	}
	rawAWS, ok := root["_aws"]
	if !ok {
		return nil, fmt.Errorf("emf: no _aws member")
	}
	var meta map[string]jsontext.Value
	if err := json.Unmarshal(rawAWS, &meta); err != nil {
		return nil, fmt.Errorf("emf: _aws is not an object: %w", err)
	}
	for k := range meta {
		if k != "Timestamp" && k != "CloudWatchMetrics" && k != "LogGroupName" {
			return nil, fmt.Errorf("emf: _aws has the member %q, which the specification does not define", k)
		}
	}
	ts := meta["Timestamp"]
	if ts == nil || ts.Kind() != '0' {
		return nil, fmt.Errorf("emf: _aws.Timestamp is missing or not a number")
	}
	if n, err := strconv.ParseInt(string(ts), 10, 64); err != nil || n < 0 {
		return nil, fmt.Errorf("emf: _aws.Timestamp %s is not a non-negative integer of milliseconds", ts)
	}
	if raw, ok := meta["LogGroupName"]; ok {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, fmt.Errorf("emf: _aws.LogGroupName is not a string")
		}
	}
	var directives []map[string]jsontext.Value
	if err := json.Unmarshal(meta["CloudWatchMetrics"], &directives); err != nil || meta["CloudWatchMetrics"] == nil {
		return nil, fmt.Errorf("emf: _aws.CloudWatchMetrics is missing or not an array of objects")
	}
	doc := &Document{Metrics: map[string][]float64{}, Units: map[string]string{}, Root: map[string]any{}}
	for k, v := range root {
		var x any
		if err := json.Unmarshal(v, &x); err != nil {
			return nil, fmt.Errorf("emf: member %q: %w", k, err)
		}
		doc.Root[k] = x
	}
	dimensions := map[string]bool{}
	for i, d := range directives {
		for k := range d {
			if k != "Namespace" && k != "Dimensions" && k != "Metrics" {
				return nil, fmt.Errorf("emf: directive %d has the member %q", i, k)
			}
		}
		var ns string
		if json.Unmarshal(d["Namespace"], &ns) != nil || !namespacePattern.MatchString(ns) {
			return nil, fmt.Errorf("emf: directive %d: Namespace missing or not 1..255 characters of [A-Za-z0-9._#:/-]", i)
		}
		doc.Namespaces = append(doc.Namespaces, ns)
		var sets [][]string
		if json.Unmarshal(d["Dimensions"], &sets) != nil || d["Dimensions"] == nil {
			return nil, fmt.Errorf("emf: directive %d: Dimensions missing or not an array of arrays of strings", i)
		}
		for _, set := range sets {
			if len(set) > 30 {
				return nil, fmt.Errorf("emf: directive %d: a dimension set of %d names (at most 30)", i, len(set))
			}
			for _, name := range set {
				if name == "" || len(name) > 255 || name[0] == ':' {
					return nil, fmt.Errorf("emf: directive %d: dimension name %q", i, name)
				}
				v, ok := doc.Root[name].(string)
				if !ok || v == "" || len(v) > 1024 {
					return nil, fmt.Errorf("emf: dimension %q: the root member is missing or not a string of 1..1024 bytes", name)
				}
				dimensions[name] = true
			}
			doc.DimensionSets = append(doc.DimensionSets, set)
		}
		var defs []map[string]jsontext.Value
		if json.Unmarshal(d["Metrics"], &defs) != nil || d["Metrics"] == nil {
			return nil, fmt.Errorf("emf: directive %d: Metrics missing or not an array of objects", i)
		}
		if len(defs) > 100 {
			return nil, fmt.Errorf("emf: directive %d: %d metric definitions (at most 100)", i, len(defs))
		}
		seen := map[string]bool{}
		for _, def := range defs {
			for k := range def {
				if k != "Name" && k != "Unit" && k != "StorageResolution" {
					return nil, fmt.Errorf("emf: directive %d: a metric definition has the member %q", i, k)
				}
			}
			var name string
			if json.Unmarshal(def["Name"], &name) != nil || name == "" || len(name) > 255 {
				return nil, fmt.Errorf("emf: directive %d: metric Name missing or not 1..255 characters", i)
			}
			if seen[name] {
				return nil, fmt.Errorf("emf: directive %d: metric %q defined twice", i, name)
			}
			seen[name] = true
			if raw, ok := def["Unit"]; ok {
				var u string
				if json.Unmarshal(raw, &u) != nil || !slices.Contains(Units, u) {
					return nil, fmt.Errorf("emf: metric %q: Unit %s is not a CloudWatch unit", name, raw)
				}
				doc.Units[name] = u
			}
			if raw, ok := def["StorageResolution"]; ok {
				var r int
				if json.Unmarshal(raw, &r) != nil || (r != 1 && r != 60) {
					return nil, fmt.Errorf("emf: metric %q: StorageResolution %s (want 1 or 60)", name, raw)
				}
			}
			values, err := numbers(doc.Root[name])
			if err != nil {
				return nil, fmt.Errorf("emf: metric %q: %w", name, err)
			}
			doc.Metrics[name] = values
		}
	}
	for name := range dimensions {
		if _, ok := doc.Metrics[name]; ok {
			return nil, fmt.Errorf("emf: %q is both a dimension and a metric", name)
		}
	}
	return doc, nil
}

// numbers returns a metric member's values: a number, or an array of
// 1..100 numbers.
func numbers(v any) ([]float64, error) {
	switch v := v.(type) {
	case float64:
		return []float64{v}, nil
	case []any:
		if len(v) == 0 || len(v) > 100 {
			return nil, fmt.Errorf("an array of %d values (want 1..100)", len(v))
		}
		out := make([]float64, len(v))
		for i, e := range v {
			f, ok := e.(float64)
			if !ok {
				return nil, fmt.Errorf("value %d is not a number", i)
			}
			out[i] = f
		}
		return out, nil
	}
	return nil, fmt.Errorf("the root member is missing or not a number")
}

// DimensionValue returns the root member name as a string ("" when it is
// none).
func (d *Document) DimensionValue(name string) string {
	s, _ := d.Root[name].(string)
	return s
}
