package process

// SetTestHook sets the hook called at the points of a launch (see
// testHook); nil removes it.
func SetTestHook(f func(stage string)) { testHook = f }
