// Package chart draws fairbench's charts with gonum.org/v1/plot: the
// distribution of waits per contender (an empirical CDF), waits over a
// run's time (a scatter), one bar per contender for a metric (throughput
// with its fairness beside it, wait tails on a log scale), and an index
// page that lists every chart. Each drawing function writes one file whose
// format follows the path's extension (.svg, .png, or any other format
// gonum/plot knows, such as .pdf).
//
// Colours do not depend on a series' position in a chart: each series
// names its Slot in a fixed palette, and fairbench gives every contender
// its own slot, so that a contender keeps its colour, dash and glyph in
// every chart.
package chart
