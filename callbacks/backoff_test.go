package callbacks

import (
	"math"
	"testing"
	"time"
)

func fixed(f float64) func() float64 { return func() float64 { return f } }

func TestBackoffUpperBoundsDoubleUpToAnHour(t *testing.T) {
	base := 15 * time.Second
	want := []time.Duration{
		15 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute,
		4 * time.Minute, 8 * time.Minute, 16 * time.Minute, 32 * time.Minute,
		time.Hour, time.Hour,
	}
	for i, w := range want {
		if got := Backoff(base, i+1, fixed(1)); got != w {
			t.Errorf("attempt %d: upper bound %v, want %v", i+1, got, w)
		}
	}
	for _, attempt := range []int{64, 1000, math.MaxInt} {
		if got := Backoff(base, attempt, fixed(1)); got != time.Hour {
			t.Errorf("attempt %d: %v, want the one-hour cap", attempt, got)
		}
	}
	if got := Backoff(3*time.Hour, 1, fixed(1)); got != time.Hour {
		t.Errorf("a base above the cap: %v, want the one-hour cap", got)
	}
}

func TestBackoffIsFullJitter(t *testing.T) {
	base := 15 * time.Second
	cases := []struct {
		attempt int
		rnd     float64
		want    time.Duration
	}{
		{1, 0, 0},
		{1, 0.5, 7500 * time.Millisecond},
		{3, 0.25, 15 * time.Second},
		{0, 1, 15 * time.Second},  // before the first retry counts as the first
		{-3, 1, 15 * time.Second}, // so does nonsense
		{2, 7, 30 * time.Second},  // a faulty rnd cannot stretch the wait
		{2, -1, 0},
		{2, math.NaN(), 0},
	}
	for _, tc := range cases {
		if got := Backoff(base, tc.attempt, fixed(tc.rnd)); got != tc.want {
			t.Errorf("Backoff(15s, %d, %v) = %v, want %v", tc.attempt, tc.rnd, got, tc.want)
		}
	}
	if got := Backoff(0, 3, fixed(1)); got != 0 {
		t.Errorf("base 0: %v, want 0", got)
	}
	for range 100 {
		if got := Backoff(base, 4, nil); got < 0 || got > 2*time.Minute {
			t.Fatalf("default rnd: %v outside [0, 2m]", got)
		}
	}
}

// The documented schedule: base 15s, 8 retries span about an hour at worst.
func TestBackoffEightRetriesSpanAboutAnHour(t *testing.T) {
	var worst time.Duration
	for attempt := 1; attempt <= 8; attempt++ {
		worst += Backoff(15*time.Second, attempt, fixed(1))
	}
	if want := 15 * time.Second * (1<<8 - 1); worst != want {
		t.Errorf("worst case %v, want %v", worst, want)
	}
	if worst < 55*time.Minute || worst > 65*time.Minute {
		t.Errorf("worst case %v, want about an hour", worst)
	}
}
