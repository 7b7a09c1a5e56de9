package show

import (
	"bytes"
	"testing"
	"time"
)

func TestAge(t *testing.T) {
	base := time.Date(2025, 1, 10, 12, 0, 0, 0, time.UTC)
	Now = func() time.Time { return base }
	defer func() { Now = time.Now }()
	for d, want := range map[time.Duration]string{
		0: "0s", 45 * time.Second: "45s", 90 * time.Second: "1m", 59 * time.Minute: "59m",
		5 * time.Hour: "5h", 47 * time.Hour: "47h", 72 * time.Hour: "3d", -time.Minute: "0s",
	} {
		if got := Age(base.Add(-d)); got != want {
			t.Errorf("Age(%v) = %q, want %q", d, got, want)
		}
	}
	if Age(time.Time{}) != "-" || Ago(nil) != "never" {
		t.Error("zero times")
	}
}

func TestTableKeepsColumnsWithOddValues(t *testing.T) {
	var b bytes.Buffer
	tb := NewTable(&b, "A", "B")
	tb.Row("x\ty", "line\nbreak")
	tb.Flush()
	if b.String() != "A    B\nx y  line break\n" {
		t.Errorf("%q", b.String())
	}
}
