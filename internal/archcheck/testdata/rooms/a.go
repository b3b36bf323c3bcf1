// Package rooms is a three-room drawing for archcheck's tests: a uses b,
// b and c use each other.
package rooms

// Top uses b's type, its field and its method.
func Top() int {
	var v B
	v.Field = 1
	return v.Get()
}
