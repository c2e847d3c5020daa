package redact

import "testing"

func TestRedactorMasksLongestFirst(t *testing.T) {
	t.Parallel()
	r := New([]string{"abc", "abcdef"}, []string{"", "tok-1"})
	got := r.String("url=abcdef pw=abc token tok-1 tok-2")
	want := "url=[REDACTED] pw=[REDACTED] token [REDACTED] tok-2"
	if got != want {
		t.Fatalf("String = %q, want %q", got, want)
	}
}

func TestNilAndEmptyRedactorsPassThrough(t *testing.T) {
	t.Parallel()
	var nilR *Redactor
	if got := nilR.String("x"); got != "x" {
		t.Fatalf("nil redactor changed text: %q", got)
	}
	if got := New().String("x"); got != "x" {
		t.Fatalf("empty redactor changed text: %q", got)
	}
	if New([]string{"s"}).Ptr(nil) != nil {
		t.Fatal("Ptr(nil) must stay nil")
	}
	s := "a s b"
	if got := *New([]string{"s"}).Ptr(&s); got != "a [REDACTED] b" {
		t.Fatalf("Ptr = %q", got)
	}
}
