package history

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

// ArtifactsDir returns the directory for a failed check's artifacts:
// $FAIRRW_ARTIFACTS if set (created if missing; the files outlive the
// test), else the test's temporary directory (removed when the test ends:
// set FAIRRW_ARTIFACTS to keep them).
func ArtifactsDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("FAIRRW_ARTIFACTS")
	if dir == "" {
		return tb.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Errorf("history: artifacts directory: %v", err)
		return tb.TempDir()
	}
	return dir
}

// WriteVisualization writes porcupine's HTML visualization of info, checked
// against model, as <name>.html in ArtifactsDir, logs its path and returns
// it ("" if it could not be written).
func WriteVisualization(tb testing.TB, name string, model porcupine.Model, info porcupine.LinearizationInfo) string {
	tb.Helper()
	path := filepath.Join(ArtifactsDir(tb), fileName(name)+".html")
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		tb.Errorf("history: write visualization: %v", err)
		return ""
	}
	tb.Logf("history: visualization: %s", path)
	return path
}

// WriteHistory writes ops and holds as JSON, <name>.json in ArtifactsDir,
// logs its path and returns it ("" if it could not be written).
func WriteHistory(tb testing.TB, name string, ops []Op, holds []Hold) string {
	tb.Helper()
	doc := struct {
		Ops   []opJSON
		Holds []holdJSON
	}{make([]opJSON, len(ops)), make([]holdJSON, len(holds))}
	for i, op := range ops {
		doc.Ops[i] = opJSON{op, op.Mode.String()}
	}
	for i, h := range holds {
		doc.Holds[i] = holdJSON{h, h.Mode.String()}
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err == nil {
		path := filepath.Join(ArtifactsDir(tb), fileName(name)+".json")
		if err = os.WriteFile(path, data, 0o644); err == nil {
			tb.Logf("history: history: %s", path)
			return path
		}
	}
	tb.Errorf("history: write history: %v", err)
	return ""
}

// opJSON and holdJSON write Mode as "read" or "write": the outer field
// hides the embedded one.
type opJSON struct {
	Op
	Mode string
}

type holdJSON struct {
	Hold
	Mode string
}

// fileName makes a test name (with slashes, spaces) a file name.
func fileName(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		default:
			return '_'
		}
	}, name)
}
