package pipeline

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The run's clock in connector configs and vars. A run has one logical now:
// the clock it was submitted with (a backfill unit's start), or the instant
// it was submitted, so every execution of it, on any member, interpolates
// the same values. The grammar:
//
//	${now}                 the clock in RFC 3339 (2026-03-08T14:05:09+00:00)
//	${now.FIELD}           date (2026-03-08), datetime and iso (as ${now}),
//	                       year, month, day, hour, minute, second (zero-padded),
//	                       unix (seconds since the epoch)
//	${now:FORMAT}          strftime FORMAT (%Y-%m-%d, %Y/%m/%d/%H, …);
//	${now.strftime.FORMAT} is the same, as the Rust faucet writes it
//	${now-1d} ${now+6h}    an offset first: one or more of +N or -N with a
//	                       unit s, m, h, d or w (d and w are calendar days in
//	                       the clock's offset); then a field or a format, as
//	                       in ${now-1d.date} or ${now-1d:%Y%m%d}
//
// The clock keeps the offset it was given, and every field renders in it.

// Timestamp renders t in RFC 3339 as ${now} does, in t's offset, written
// +00:00 rather than Z and with fractional seconds only when t has them (3,
// 6 or 9 digits): the form the Rust faucet renders, so the configs and
// queries written for it see the same text.
func Timestamp(t time.Time) string {
	layout := "2006-01-02T15:04:05"
	switch ns := t.Nanosecond(); {
	case ns == 0:
	case ns%1e6 == 0:
		layout += ".000"
	case ns%1e3 == 0:
		layout += ".000000"
	default:
		layout += ".000000000"
	}
	return t.Format(layout + "-07:00")
}

// nowFields are the names ${now.FIELD} takes, in the order messages list
// them.
var nowFields = []string{"date", "datetime", "iso", "year", "month", "day", "hour", "minute", "second", "unix"}

// isNowRef reports whether the reference (the text between ${ and }) is one
// to the clock.
func isNowRef(ref string) bool {
	if !strings.HasPrefix(ref, "now") {
		return false
	}
	return len(ref) == 3 || strings.ContainsRune(".:+-", rune(ref[3]))
}

// expandNow renders a reference to the clock at t.
func expandNow(ref string, t time.Time) (string, error) {
	rest := ref[len("now"):]
	for len(rest) > 0 && (rest[0] == '+' || rest[0] == '-') {
		var err error
		if t, rest, err = nowOffset(ref, rest, t); err != nil {
			return "", err
		}
	}
	switch {
	case rest == "":
		return Timestamp(t), nil
	case strings.HasPrefix(rest, ":"):
		return strftime(ref, rest[1:], t)
	case strings.HasPrefix(rest, ".strftime."):
		return strftime(ref, rest[len(".strftime."):], t)
	case strings.HasPrefix(rest, "."):
		return nowField(ref, rest[1:], t)
	}
	return "", fmt.Errorf("${%s}: after ${now} and its offset comes .FIELD or :FORMAT, not %q", ref, rest)
}

// nowOffset applies the offset rest starts with (+N or -N and a unit) to t
// and returns what follows it.
func nowOffset(ref, rest string, t time.Time) (time.Time, string, error) {
	sign := 1
	if rest[0] == '-' {
		sign = -1
	}
	i := 1
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	bad := func(why string) error {
		return fmt.Errorf("${%s}: %s; an offset is +N or -N with a unit s, m, h, d or w, as in ${now-1d}", ref, why)
	}
	if i == 1 {
		return t, "", bad("an offset needs a number")
	}
	if i > 7 {
		return t, "", bad("the offset is too large")
	}
	n, _ := strconv.Atoi(rest[1:i])
	n *= sign
	if i == len(rest) {
		return t, "", bad("the offset has no unit")
	}
	switch rest[i] {
	case 's':
		t = t.Add(time.Duration(n) * time.Second)
	case 'm':
		t = t.Add(time.Duration(n) * time.Minute)
	case 'h':
		t = t.Add(time.Duration(n) * time.Hour)
	case 'd':
		t = t.AddDate(0, 0, n)
	case 'w':
		t = t.AddDate(0, 0, 7*n)
	default:
		return t, "", bad(fmt.Sprintf("unknown unit %q", rest[i]))
	}
	return t, rest[i+1:], nil
}

func nowField(ref, field string, t time.Time) (string, error) {
	switch field {
	case "date":
		return t.Format(time.DateOnly), nil
	case "datetime", "iso":
		return Timestamp(t), nil
	case "year":
		return fmt.Sprintf("%04d", t.Year()), nil
	case "month":
		return fmt.Sprintf("%02d", int(t.Month())), nil
	case "day":
		return fmt.Sprintf("%02d", t.Day()), nil
	case "hour":
		return fmt.Sprintf("%02d", t.Hour()), nil
	case "minute":
		return fmt.Sprintf("%02d", t.Minute()), nil
	case "second":
		return fmt.Sprintf("%02d", t.Second()), nil
	case "unix":
		return strconv.FormatInt(t.Unix(), 10), nil
	}
	return "", fmt.Errorf("${%s}: unknown field %q%s; the fields are %s, or write ${now:FORMAT} with a strftime FORMAT",
		ref, field, suggest(field, nowFields), strings.Join(nowFields, ", "))
}

// strftime renders t by a strftime format. The conversions are the common
// ones of C and of chrono (which the Rust faucet uses); any other is an
// error, never text passed through.
func strftime(ref, format string, t time.Time) (string, error) {
	if format == "" {
		return "", fmt.Errorf("${%s}: the format is empty", ref)
	}
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+1 == len(format) {
			return "", fmt.Errorf("${%s}: the format ends in a lone %%; write %%%% for a literal %%", ref)
		}
		i++
		spec := format[i]
		if spec == ':' && i+1 < len(format) && format[i+1] == 'z' {
			i++
			b.WriteString(t.Format("-07:00"))
			continue
		}
		s, ok := strftimeSpec(spec, t)
		if !ok {
			return "", fmt.Errorf("${%s}: %%%c is not a strftime conversion faucet knows (%s)", ref, spec, strftimeKnown)
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// strftimeKnown lists the conversions strftimeSpec renders, for messages.
const strftimeKnown = "%Y %y %C %m %d %e %j %H %I %M %S %p %b %h %B %a %A %u %w %Z %z %:z %s %F %T %D %R %n %t %%"

func strftimeSpec(spec byte, t time.Time) (string, bool) {
	switch spec {
	case 'Y':
		return fmt.Sprintf("%04d", t.Year()), true
	case 'y':
		return fmt.Sprintf("%02d", t.Year()%100), true
	case 'C':
		return fmt.Sprintf("%02d", t.Year()/100), true
	case 'm':
		return fmt.Sprintf("%02d", int(t.Month())), true
	case 'd':
		return fmt.Sprintf("%02d", t.Day()), true
	case 'e':
		return fmt.Sprintf("%2d", t.Day()), true
	case 'j':
		return fmt.Sprintf("%03d", t.YearDay()), true
	case 'H':
		return fmt.Sprintf("%02d", t.Hour()), true
	case 'I':
		return t.Format("03"), true
	case 'M':
		return fmt.Sprintf("%02d", t.Minute()), true
	case 'S':
		return fmt.Sprintf("%02d", t.Second()), true
	case 'p':
		return t.Format("PM"), true
	case 'b', 'h':
		return t.Format("Jan"), true
	case 'B':
		return t.Format("January"), true
	case 'a':
		return t.Format("Mon"), true
	case 'A':
		return t.Format("Monday"), true
	case 'u':
		return strconv.Itoa((int(t.Weekday())+6)%7 + 1), true
	case 'w':
		return strconv.Itoa(int(t.Weekday())), true
	case 'Z':
		return t.Format("MST"), true
	case 'z':
		return t.Format("-0700"), true
	case 's':
		return strconv.FormatInt(t.Unix(), 10), true
	case 'F':
		return t.Format(time.DateOnly), true
	case 'T':
		return t.Format(time.TimeOnly), true
	case 'D':
		return t.Format("01/02/06"), true
	case 'R':
		return t.Format("15:04"), true
	case 'n':
		return "\n", true
	case 't':
		return "\t", true
	case '%':
		return "%", true
	}
	return "", false
}
