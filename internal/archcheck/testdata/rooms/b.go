package rooms

// B is used by a.go.
type B struct{ Field int }

// Get uses c.go's helper.
func (b B) Get() int { return helper(b.Field) }

const offset = 2
