package itest

import (
	"time"
)

func SleepLeases(n int) { time.Sleep(time.Duration(n) * 600 * time.Millisecond) }
