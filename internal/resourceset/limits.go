package resourceset

import (
	"fmt"
	"math"
	"strings"
	"text/template"
)

// maxList bounds the lists until, untilStep and seq may make: a template
// asking for billions of numbers fails instead of exhausting the runner.
const maxList = 100_000

// bound wraps the sprig functions whose result a template sizes with a
// number, so one call cannot allocate gigabytes: the lists until,
// untilStep and seq make are at most maxList long, and what repeat,
// indent and nindent make at most MaxRenderedBytes.
func bound(m template.FuncMap) {
	until := m["until"].(func(int) []int)
	untilStep := m["untilStep"].(func(int, int, int) []int)
	seq := m["seq"].(func(...int) string)
	m["until"] = func(n int) ([]int, error) {
		if err := listSize(span(0, n, 1)); err != nil {
			return nil, err
		}
		return until(n), nil
	}
	m["untilStep"] = func(start, stop, step int) ([]int, error) {
		if err := listSize(span(start, stop, step)); err != nil {
			return nil, err
		}
		return untilStep(start, stop, step), nil
	}
	m["seq"] = func(p ...int) (string, error) {
		n := 0.0
		switch len(p) {
		case 1:
			n = span(1, p[0], 1)
		case 2:
			n = span(p[0], p[1], 1)
		case 3:
			n = span(p[0], p[2], p[1])
		}
		if err := listSize(n); err != nil {
			return "", err
		}
		return seq(p...), nil
	}
	m["repeat"] = func(count int, s string) (string, error) {
		if err := textSize(float64(count) * float64(len(s))); err != nil {
			return "", err
		}
		if count < 0 {
			return "", fmt.Errorf("negative count %d", count)
		}
		return strings.Repeat(s, count), nil
	}
	m["indent"] = func(spaces int, s string) (string, error) {
		n, err := indentSize(spaces, s)
		if err == nil {
			err = textSize(n)
		}
		if err != nil {
			return "", err
		}
		return indent(spaces, s), nil
	}
	m["nindent"] = func(spaces int, s string) (string, error) {
		n, err := indentSize(spaces, s)
		if err == nil {
			err = textSize(n)
		}
		if err != nil {
			return "", err
		}
		return "\n" + indent(spaces, s), nil
	}
}

// span bounds the count of numbers from start towards stop by step, either
// way, in floating point so no product overflows.
func span(start, stop, step int) float64 {
	d := math.Abs(float64(stop) - float64(start))
	s := math.Max(math.Abs(float64(step)), 1)
	return math.Ceil(d/s) + 1
}

func listSize(n float64) error {
	if n > maxList {
		return fmt.Errorf("a list of about %.0f numbers is more than the %d allowed", n, maxList)
	}
	return nil
}

func textSize(n float64) error {
	if n > MaxRenderedBytes {
		return fmt.Errorf("a text of %.0f bytes is more than the %d allowed", n, MaxRenderedBytes)
	}
	return nil
}

// indentSize is the length of s indented by spaces; a negative count is
// refused as sprig refuses it (by a panic the template turns into an
// error).
func indentSize(spaces int, s string) (float64, error) {
	if spaces < 0 {
		return 0, fmt.Errorf("negative count %d", spaces)
	}
	return float64(spaces)*float64(strings.Count(s, "\n")+1) + float64(len(s)), nil
}

// indent is sprig's indent: each line of s after spaces spaces.
func indent(spaces int, s string) string {
	pad := strings.Repeat(" ", spaces)
	return pad + strings.ReplaceAll(s, "\n", "\n"+pad)
}
