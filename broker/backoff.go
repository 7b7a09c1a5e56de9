package broker

import "time"

// backoffDelay returns how long to wait before reconnect attempt number attempt
// (0 for the first retry) using "full jitter": a uniformly random delay in
// [0, min(max, minDelay·2^attempt)). r is a random number in [0, 1); passing
// it in keeps the function pure, so the schedule is table-testable.
//
// Full jitter spreads a fleet of brokers that lost the Hub at the same
// moment over the whole window instead of having them return in lockstep.
func backoffDelay(attempt int, minDelay, maxDelay time.Duration, r float64) time.Duration {
	if minDelay <= 0 {
		minDelay = time.Millisecond
	}
	if maxDelay < minDelay {
		maxDelay = minDelay
	}
	ceil := minDelay
	for i := 0; i < attempt && ceil < maxDelay; i++ {
		if ceil > maxDelay/2 { // doubling would pass maxDelay (or overflow)
			ceil = maxDelay
			break
		}
		ceil *= 2
	}
	if r < 0 || r >= 1 {
		r = 0
	}
	return time.Duration(r * float64(ceil))
}

// refusedDelay is the wait before asking a Hub that refused the broker
// again: uniformly in [slow/2, slow), r in [0, 1). Never near zero, as a
// refusal is not a blip; jittered, so that a host's instances do not ask
// in lockstep.
func refusedDelay(slow time.Duration, r float64) time.Duration {
	if r < 0 || r >= 1 {
		r = 0
	}
	return slow/2 + time.Duration(r*float64(slow/2))
}
