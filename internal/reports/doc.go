// Package reports renders run results as tables, JSON, CSV, Markdown and
// self-contained HTML with SVG charts.
package reports
