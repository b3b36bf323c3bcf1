package capacitybench

import "time"

// LambdaDollars is what one Lambda invocation costs at the prices above
// (arm64, US East): took billed per millisecond at memoryMB of memory,
// plus the request. Sections that price a function at other memory
// sizes (internal/cpushare) use it, so that every figure turnbench
// prints rests on the one price list.
func LambdaDollars(took time.Duration, memoryMB int) float64 {
	return took.Round(time.Millisecond).Seconds()*float64(memoryMB)/1024*priceGBSecond + priceRequest
}
