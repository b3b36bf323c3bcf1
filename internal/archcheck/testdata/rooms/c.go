package rooms

func helper(n int) int {
	local := n // a local name is no arrow
	return local + offset
}
