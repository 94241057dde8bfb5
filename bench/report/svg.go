package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// palette colours the lines of a plot, in order.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

// series is one line of a plot.
type series struct {
	name   string
	points [][2]float64
}

// tick is an axis tick: its value and label.
type tick struct {
	v     float64
	label string
}

// plot draws one inline SVG line chart.
type plot struct {
	title, xLabel, yLabel  string
	xmin, xmax, ymin, ymax float64
	logY                   bool
	xTicks, yTicks         []tick
	lines                  []series
}

const (
	plotW, plotH               = 560, 300
	padL, padR, padT, padB     = 64, 16, 28, 44
	innerW, innerH             = plotW - padL - padR, plotH - padT - padB
	legendRowH, legendPerRow   = 16, 3
	legendColW, legendFontSize = 170, 11
)

func (p *plot) x(v float64) float64 {
	if p.xmax == p.xmin {
		return padL
	}
	return padL + (v-p.xmin)/(p.xmax-p.xmin)*innerW
}

func (p *plot) y(v float64) float64 {
	lo, hi, val := p.ymin, p.ymax, v
	if p.logY {
		lo, hi, val = math.Log10(lo), math.Log10(hi), math.Log10(math.Max(v, p.ymin))
	}
	if hi == lo {
		return padT + innerH
	}
	return padT + innerH - (val-lo)/(hi-lo)*innerH
}

// svg renders the plot.
func (p *plot) svg() string {
	rows := (len(p.lines) + legendPerRow - 1) / legendPerRow
	h := plotH + rows*legendRowH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`,
		plotW, h, plotW, h)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="13" font-weight="bold">%s</text>`, padL, html.EscapeString(p.title))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#fafafa" stroke="#ccc"/>`, padL, padT, innerW, innerH)
	for _, t := range p.yTicks {
		y := p.y(t.v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e3e3e3"/>`, padL, y, padL+innerW, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`, padL-4, y+4, html.EscapeString(t.label))
	}
	for _, t := range p.xTicks {
		x := p.x(t.v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e3e3e3"/>`, x, padT, x, padT+innerH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`, x, padT+innerH+14, html.EscapeString(t.label))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, padL+innerW/2, padT+innerH+32, html.EscapeString(p.xLabel))
	fmt.Fprintf(&b, `<text transform="translate(14 %d) rotate(-90)" text-anchor="middle">%s</text>`, padT+innerH/2, html.EscapeString(p.yLabel))
	for i, l := range p.lines {
		c := palette[i%len(palette)]
		var pts []string
		for _, pt := range l.points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", p.x(pt[0]), p.y(pt[1])))
		}
		if len(pts) == 1 {
			fmt.Fprintf(&b, `<circle cx="%s" r="3" fill="%s"/>`, strings.Replace(pts[0], ",", `" cy="`, 1), c)
		} else if len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, c, strings.Join(pts, " "))
		}
		lx := padL + (i%legendPerRow)*legendColW
		ly := plotH + (i/legendPerRow)*legendRowH
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="4" fill="%s"/><text x="%d" y="%d" font-size="%d">%s</text>`,
			lx, ly-4, c, lx+16, ly, legendFontSize, html.EscapeString(l.name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// niceTicks returns about n round ticks from 0 to max.
func niceTicks(max float64, n int, format func(float64) string) []tick {
	if max <= 0 {
		return []tick{{0, format(0)}}
	}
	raw := max / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []tick
	for v := 0.0; v <= max*1.0001; v += step {
		out = append(out, tick{v, format(v)})
	}
	return out
}

// logTicks returns the powers of ten from lo to hi.
func logTicks(lo, hi float64) []tick {
	var out []tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		v := math.Pow(10, e)
		out = append(out, tick{v, strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")})
	}
	return out
}

// bars draws a horizontal bar chart of labelled values.
func bars(title, unit string, labels []string, values []float64) string {
	const rowH, left, width = 26, 190, 560
	maxV := 0.0
	for _, v := range values {
		maxV = math.Max(maxV, v)
	}
	h := 30 + rowH*len(labels)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`, width+140, h)
	fmt.Fprintf(&b, `<text x="0" y="16" font-size="13" font-weight="bold">%s</text>`, html.EscapeString(title))
	for i, l := range labels {
		y := 26 + i*rowH
		w := 0.0
		if maxV > 0 {
			w = values[i] / maxV * float64(width-left)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, left-6, y+14, html.EscapeString(l))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="18" fill="%s"/>`, left, y, w, palette[i%len(palette)])
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s %s</text>`, float64(left)+w+6, y+14, num(values[i]), html.EscapeString(unit))
	}
	b.WriteString(`</svg>`)
	return b.String()
}
